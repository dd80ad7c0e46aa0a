"""Run grading checks on known wrong answers in child processes, as separate grading runs.

A wrong answer can crash the process that grades it (TensorFlow can segfault when a cold
Keras model is built from several threads at once) or leave threads blocked forever. Here
each grading run is one trial of :func:`autograder.checks.child.run_in_children`: a run that
kills its child counts as a failed grading run (``"crashed (SIGSEGV)"``), and the remaining
runs go on in a new child. Nothing is retried: every run of every task gets exactly one verdict.

``IsolatedRuns`` starts the children from a background thread, so the calling process can
grade other answers meanwhile; ``verdicts()`` waits for them.
"""

from __future__ import annotations

import importlib
import threading
from pathlib import Path

from autograder.checks.child import Crashed, run_in_children

#: Seconds one grading run of a wrong answer may take before it counts as hung.
RUN_TIMEOUT_S = 600.0


def grade_run(checks: str, answers: str, check: str, answer: str) -> str:
    """One grading run in the child: ``"pass"`` or ``"fail: <message>"``."""
    answer_class = getattr(importlib.import_module(answers), answer)
    try:
        getattr(importlib.import_module(checks), check)(answer_class)
    except AssertionError as failure:
        return "fail: " + str(failure)[:2000]
    return "pass"


def run_isolated(checks: str, answers: str, tasks: list[tuple[str, str]],
                 runs: int | list[int]) -> list[list[str]]:
    """Run ``checks.<check>(answers.<answer>)`` ``runs`` times per task, in child processes.

    Args:
        checks: The module holding the checks (``"autograder.checks.capstone"``).
        answers: The answers module, importable from this directory.
        tasks: ``(check name, answer name)`` pairs.
        runs: Grading runs per task (one number for all, or one per task).

    Returns:
        Per task, in order, one verdict per run: ``"pass"``, ``"fail: <message>"`` or
        ``"crashed (SIGSEGV)"`` (how the child ended).
    """
    runs = [runs] * len(tasks) if isinstance(runs, int) else list(runs)
    calls = [(checks, answers, check, answer)
             for (check, answer), count in zip(tasks, runs, strict=True) for _ in range(count)]
    outcomes = iter(run_in_children(grade_run, calls, trial_timeout_s=RUN_TIMEOUT_S,
                                    path=[str(Path(__file__).parent)]))
    return [[outcome.how if isinstance(outcome, Crashed) else outcome
             for outcome in (next(outcomes) for _ in range(count))] for count in runs]


class IsolatedRuns:
    """:func:`run_isolated` on a background thread; ``verdicts()`` waits for the result."""

    def __init__(self, checks: str, answers: str, tasks: list[tuple[str, str]],
                 runs: int | list[int]) -> None:
        self._result: list[list[str]] | None = None
        self._error: BaseException | None = None

        def work() -> None:
            try:
                self._result = run_isolated(checks, answers, tasks, runs)
            except BaseException as error:  # noqa: BLE001 - re-raised by verdicts()
                self._error = error

        self._thread = threading.Thread(target=work, name="isolated-grading", daemon=True)
        self._thread.start()

    def verdicts(self) -> list[list[str]]:
        """Wait for the runs; their verdicts per task (re-raises what stopped them)."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result
