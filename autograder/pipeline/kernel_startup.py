"""PYTHONSTARTUP of grading kernels: guard the race detector's tools (see ``kernel_guard``) and
mark the cell being run, so a cell that kills the kernel can be skipped (see ``cell_marks``)."""

from autograder.pipeline.cell_marks import install as _install_cell_marks
from autograder.pipeline.kernel_guard import install as _install_race_lab_guard

_install_race_lab_guard()
_install_cell_marks()
del _install_race_lab_guard, _install_cell_marks
