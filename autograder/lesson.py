"""Small helpers lesson notebooks share (imported in a lesson's setup cell)."""

from __future__ import annotations

import os

GRADING_ENV = "RACELAB_GRADING"
"""Set by the grading pipeline in every grading kernel's environment."""


def is_grading() -> bool:
    """True when the notebook runs inside the autograder rather than in front of a student."""
    return os.environ.get(GRADING_ENV) == "1"


def trials(n: int, *, when_grading: int = 2) -> int:
    """How many trials a live demonstration runs: ``n`` for a student, fewer when grading.

    Live "see it break" cells are not graded, and the autograder re-runs every cell of every
    submission; running them with ``when_grading`` trials keeps a class's grading time down
    while the demonstration still runs for real. Graded checks never use this.
    """
    return min(n, when_grading) if is_grading() else n
