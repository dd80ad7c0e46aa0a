"""Which cell a grading kernel was running when it died, and skipping that cell next time.

A student's code can kill its kernel (a TensorFlow segfault in a racy answer, ``os._exit``, the
memory cap). Rather than score the whole notebook 0, the grader runs it again in a new kernel
with the deadly cell replaced by an error: the tests that depend on that cell score 0, every
other exercise is graded as usual. The deadly cell is never run again, so nothing is retried.

Kernel side (:func:`install`, from the grading kernel's ``PYTHONSTARTUP``): before each cell
runs, the kernel writes the cell's digest to the file named by ``RACELAB_CELL_MARKS``; a cell
whose digest is listed in ``RACELAB_SKIP_CELLS`` runs as ``raise KernelDiedInThisCell(...)``.
Grader side: :func:`digest` and :func:`last_started`. A student who forges either only loses
points: a skipped cell always fails.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

MARKS_ENV = "RACELAB_CELL_MARKS"
SKIP_ENV = "RACELAB_SKIP_CELLS"


def digest(source: str) -> str:
    """A short fingerprint of a cell's source (surrounding white space ignored)."""
    return hashlib.sha256(source.strip().encode("utf-8")).hexdigest()[:20]


def last_started(marks: Path) -> str | None:
    """The digest of the last cell the kernel started, or None when it started none."""
    try:
        return marks.read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def skip_environment(marks: Path, skipped: list[str]) -> dict[str, str]:
    """The kernel environment that records cell starts in ``marks`` and skips ``skipped``."""
    return {MARKS_ENV: str(marks), SKIP_ENV: ",".join(skipped)}


_SKIPPED_SOURCE = (
    "raise RuntimeError('Grading skipped this cell: in an earlier run of this notebook the "
    "kernel died while it ran (the process crashed or exited), so it scores as an error.')\n"
)


def install() -> None:
    """Mark every cell the IPython kernel starts; replace skipped cells (idempotent)."""
    try:
        shell = get_ipython()  # type: ignore[name-defined]  # noqa: F821 - IPython builtin
    except NameError:
        return
    if shell is None or getattr(shell, "_racelab_cell_marks", False):
        return
    marks = os.environ.get(MARKS_ENV)
    skipped = {d for d in os.environ.get(SKIP_ENV, "").split(",") if d}

    def before_cell(info: object) -> None:
        if marks:
            Path(marks).write_text(digest(getattr(info, "raw_cell", "") or ""), encoding="utf-8")

    def skip_deadly_cell(lines: list[str]) -> list[str]:
        return [_SKIPPED_SOURCE] if digest("".join(lines)) in skipped else lines

    shell.events.register("pre_run_cell", before_cell)
    if skipped:
        shell.input_transformers_cleanup.insert(0, skip_deadly_cell)
    shell._racelab_cell_marks = True
