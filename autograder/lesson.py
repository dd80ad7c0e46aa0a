"""Small helpers lesson notebooks share (imported in a lesson's setup cell)."""

from __future__ import annotations

import json
import os

CLAIMS_ENV = "RACELAB_CLAIMS_FILE"
"""When set, :func:`claim` appends a JSON line per claim to this file (the lesson test reads it)."""


def quick_test_passed() -> None:
    """Say that a visible test passed, and what it did not check.

    A visible test runs the answer briefly, on one thread or a few; only the hidden tests run it
    under concurrent load, so a racy answer can pass here and still score 0.
    """
    print("Quick test passed. It does not run your answer under concurrent load: press "
          "Validate to run the hidden concurrency checks.")


def claim(text: str, holds: object) -> None:
    """Record what a demonstration must show, and print whether this run showed it.

    A lesson states only what its own run shows. Each "see it break" cell ends with the claim
    its prose relies on, computed from what the cell measured, for example
    ``claim("the quick test missed the racy ledger in at least 5 of 20 runs", missed >= 5)``.
    The lesson test (``tests/course/test_lessons.py``) runs every lesson top to bottom and fails,
    naming the claim, when one did not hold. A demonstration that does not show its point every
    time is redesigned, never retried.

    The grader does not run the lesson's demonstrations (see
    :func:`autograder.grading.cells.demonstrations`), so nothing here asks whether it is graded.

    Args:
        text: The claim, in the words the lesson uses.
        holds: Whether this run showed it (anything with a truth value).
    """
    held = bool(holds)
    path = os.environ.get(CLAIMS_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as claims:
            claims.write(json.dumps({"claim": text, "held": held}) + "\n")
    print(f"{'Shown' if held else 'NOT shown by this run'}: {text}")
