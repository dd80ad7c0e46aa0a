"""Run grading checks on known wrong answers in child processes, as separate grading runs.

A wrong answer can crash the process that grades it (TensorFlow can segfault when a cold
Keras model is built from several threads at once) or leave threads blocked forever. Here
each batch of grading runs happens in a child Python process: a run that kills the child
counts as a failed grading run (``"crashed (signal N)"``), and the remaining runs go on in a
new child. Nothing is retried: every run of every task gets exactly one verdict.

``IsolatedRuns`` starts the children from a background thread, so the calling process can
grade other answers meanwhile; ``verdicts()`` waits for them.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

_CHILD = """
import importlib, json, sys, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, sys.argv[2])
spec = json.loads(sys.argv[1])
answers = importlib.import_module(spec["answers"])
checks = importlib.import_module(spec["checks"])
for number, (check, answer) in enumerate(spec["tasks"]):
    for run in range(spec["runs"][number]):
        if [number, run] < spec["start"]:
            continue
        try:
            getattr(checks, check)(getattr(answers, answer))
            verdict = "pass"
        except AssertionError as failure:
            verdict = "fail: " + str(failure)[:2000]
        print(json.dumps([number, run, verdict]), flush=True)
"""


def run_isolated(checks: str, answers: str, tasks: list[tuple[str, str]],
                 runs: int | list[int], *, timeout_s: float = 1800.0) -> list[list[str]]:
    """Run ``checks.<check>(answers.<answer>)`` ``runs`` times per task, in child processes.

    Args:
        checks: The module holding the checks (``"autograder.checks.capstone"``).
        answers: The answers module, importable from this directory.
        tasks: ``(check name, answer name)`` pairs.
        runs: Grading runs per task (one number for all, or one per task).

    Returns:
        Per task, in order, one verdict per run: ``"pass"``, ``"fail: <message>"`` or
        ``"crashed (signal N)"``.
    """
    verdicts: list[list[str]] = [[] for _ in tasks]
    runs = [runs] * len(tasks) if isinstance(runs, int) else list(runs)
    start: list[int] | None = [0, 0]
    while start is not None:
        spec = json.dumps({"checks": checks, "answers": answers, "tasks": tasks, "runs": runs,
                           "start": start})
        child = subprocess.run([sys.executable, "-c", _CHILD, spec, str(Path(__file__).parent)],
                               capture_output=True, text=True, timeout=timeout_s)
        for line in child.stdout.splitlines():
            if line.startswith("["):
                number, _, verdict = json.loads(line)
                verdicts[number].append(verdict)
        pending = [[n, len(v)] for n, v in enumerate(verdicts) if len(v) < runs[n]]
        if not pending:
            start = None
        elif child.returncode < 0:  # killed by a signal: that grading run crashed
            number, _ = pending[0]
            verdicts[number].append(f"crashed (signal {-child.returncode})")
            more = [[n, len(v)] for n, v in enumerate(verdicts) if len(v) < runs[n]]
            start = more[0] if more else None
        else:
            raise RuntimeError(f"the isolated grading runs stopped (exit {child.returncode}):\n"
                               f"{child.stderr[-3000:]}")
    return verdicts


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
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result
