"""PYTHONSTARTUP of grading kernels: guard the race detector's tools (see ``kernel_guard``)."""

from autograder.pipeline.kernel_guard import install as _install_race_lab_guard

_install_race_lab_guard()
del _install_race_lab_guard
