"""Exercise 2's run: ``run_ledger`` called, the worker processes it started watched."""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from autograder.checks import process_workers
from autograder.checks.kit import bounded
from autograder.checks.processes.resources import (
    Leftovers,
    child_processes,
    clean_up,
    snapshot,
)
from autograder.checks.processes.settings import LEDGER_S, LEDGER_UPDATES, LEDGER_WORKERS
from autograder.harness.tamper import scratch_folder


@dataclass
class LedgerRun:
    """What the grader saw of one ``run_ledger`` call."""

    totals: Any = None
    expected: list[int] = field(default_factory=list)
    workers_seen: int = 0
    workers_ran: set[int] = field(default_factory=set)
    leftovers: Leftovers = field(default_factory=Leftovers)


def run_ledger_once(run_ledger: Callable[[int, int], Any], *, workers: int = LEDGER_WORKERS,
                    updates: int = LEDGER_UPDATES, exercise: str = "run_ledger") -> LedgerRun:
    """Call ``run_ledger(workers, updates)`` (bounded) and clean up whatever it left."""
    before = snapshot()
    seen = LedgerRun(expected=process_workers.expected_totals(workers, updates))
    watcher = _ChildWatcher(before.processes)
    receipts = scratch_folder("receipts")
    os.environ[process_workers.RECEIPTS_ENV] = receipts
    watcher.start()
    try:
        seen.totals = bounded(exercise, f"run_ledger({workers}, {updates})",
                               lambda: run_ledger(workers, updates), LEDGER_S)
    finally:
        watcher.stop()
        os.environ.pop(process_workers.RECEIPTS_ENV, None)
        seen.workers_seen = len(watcher.seen)
        seen.workers_ran = {index for index, pid in process_workers.read_receipts(receipts)
                            if pid in watcher.seen}
        shutil.rmtree(receipts, ignore_errors=True)
        seen.leftovers = before.since()
        clean_up(seen.leftovers)
    return seen


class _ChildWatcher:
    """Counts the child processes that run while a call is made (sampled every 10 ms)."""

    def __init__(self, ignore: set[int]) -> None:
        self.ignore = ignore
        self.seen: set[int] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _watch(self) -> None:
        while not self._stop.wait(0.01):
            self.seen |= set(child_processes()) - self.ignore
