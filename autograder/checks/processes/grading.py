"""The three graders hidden tests call: ``check_pool``, ``check_ledger``, ``check_choose``.

Each grader, once its own verdict passed, reports what it saw (:func:`autograder.checks.kit.
report`) for the host's judge (:mod:`autograder.judges.processes`), which decides: the pool's
processes, outputs, memory, segments and leftovers with its explored bookkeeping, the ledger's
workers and totals, and every choice ``choose`` made on the grader's measurements.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

import numpy as np

from autograder.checks import process_workers
from autograder.checks.kit import call_text, describe_error, report, require
from autograder.checks.plain import plain
from autograder.checks.processes.bookkeeping import closing_run, explore_pool
from autograder.checks.processes.choice import DesignRun, choice_cases, reference_choice
from autograder.checks.processes.ledger import run_ledger_once
from autograder.checks.processes.model import embedding_weights
from autograder.checks.processes.pool import run_pool
from autograder.checks.processes.settings import (
    CLOSE_S,
    JOIN_GRACE_S,
    LEDGER_UNLIMITED_S,
    LEDGER_UPDATES,
    LEDGER_WORKERS,
    MARGIN,
    MB,
    POOL_REQUESTS_EACH,
    POOL_THREADS,
    POOL_WORKERS,
)

# --------------------------------------------------------------------------- exercise 1: the pool


def check_pool(pool_class: Callable[..., Any]) -> None:
    """Grade a ``SharedWeightsPool`` class (see :func:`run_pool`); AssertionError if it fails.

    Reports (for the judge) the worker processes started, not started with spawn, that ran
    the grader's target and that ran another; every graded request's output, and the first
    one's again after the pool was left idle (and for how long); the private
    memory (MB) of each worker that served; the MB in new shared-memory segments; the workers
    still running after ``close()`` and the processes and segments left; each exploration
    of the bookkeeping (none when it was not explored); and how ``close()`` of a stubbed pool
    waited for the pool's own threads (None when it was not explored).
    """
    exercise = "SharedWeightsPool"
    weights_mb = sum(a.nbytes for a in embedding_weights()) / MB
    seen = run_pool(pool_class, exercise=exercise)
    total = POOL_THREADS * POOL_REQUESTS_EACH
    if len(seen.workers) < POOL_WORKERS:
        raise AssertionError(
            f"{exercise}: with workers={POOL_WORKERS} it started {len(seen.workers)} worker "
            f"process(es), expected {POOL_WORKERS}")
    if seen.not_spawned:
        raise AssertionError(
            f"{exercise}: {seen.not_spawned} of its worker processes were not started with "
            "spawn, expected multiprocessing.get_context('spawn'): a forked child of a "
            "process that runs TensorFlow can hang")
    if seen.other_target and len(seen.served) < POOL_WORKERS:
        raise AssertionError(
            f"{exercise}: {len(seen.other_target)} of its worker processes did not run the "
            "target it was given, expected every worker to run target(block_name, shapes, "
            "requests, answers)")
    if seen.wrong:
        index, got, want = seen.wrong[0]
        raise AssertionError(
            f"{exercise}: {len(seen.wrong)} of {total} predict() calls made from "
            f"{POOL_THREADS} threads at once returned another request's output (request "
            f"{index}: got {_short(got)}, expected {_short(want)}). Workers may answer in any "
            "order: match each answer to its request by its request id")
    if seen.answered != total:
        raise AssertionError(f"{exercise}: {total - seen.answered} of {total} predict() calls "
                             "returned None, expected the model's output")
    if seen.by_workers < total:
        raise AssertionError(
            f"{exercise}: its worker processes answered {seen.by_workers} of the {total} "
            "requests predict() was asked, expected every predict() to send its request to "
            "the workers and return their answer: the work of a process pool runs in its "
            "processes, not in the calling thread")
    private = {pid: mb for pid, mb in seen.worker_uss_mb.items()
               if mb > weights_mb / 2 and pid in seen.served}
    if private:
        mb = max(private.values())
        raise AssertionError(
            f"{exercise}: a worker held {mb:.0f} MB of private memory for {weights_mb:.0f} MB "
            f"of weights, expected under {weights_mb / 2:.0f} MB: it has its own copy of the "
            f"weights, so {POOL_WORKERS} workers hold {POOL_WORKERS} full copies. Pass the "
            "shared block's name, not the arrays")
    if seen.segment_mb > 1.5 * weights_mb:
        raise AssertionError(
            f"{exercise}: its shared-memory blocks held {seen.segment_mb:.0f} MB for "
            f"{weights_mb:.0f} MB of weights, expected one copy: make one block for all workers")
    if seen.still_running or seen.leftovers:
        left = seen.leftovers.describe() or f"{len(seen.still_running)} worker(s) still running"
        raise AssertionError(
            f"{exercise}: after close() returned there were {left}, expected none: stop and "
            "join every worker, then close and unlink the shared block")
    explored: list = []
    result = explore_pool(pool_class, observed=explored)
    closing = None
    if result is not None:
        require(result, exercise=exercise, again=call_text("processes.explore_pool", exercise),
                hint=_BOOKKEEPING_HINT)
        closing = closing_run(pool_class)
        if closing is not None:
            _require_joined(exercise, closing)
    report({"workers": len(seen.workers), "not_spawned": seen.not_spawned,
            "served": len(seen.served), "other_target": len(seen.other_target),
            "by_workers": seen.by_workers,
            "outputs": seen.outputs, "idle_s": float(seen.idle_s), "after_idle": seen.after_idle,
            "private_mb": [float(mb) for pid, mb in seen.worker_uss_mb.items()
                           if pid in seen.served],
            "segment_mb": float(seen.segment_mb), "still_running": len(seen.still_running),
            "leftovers": [len(seen.leftovers.processes), len(seen.leftovers.segments)],
            "bookkeeping": explored if result is not None else [],
            "closing": closing})


def _require_joined(exercise: str, closing: dict[str, Any]) -> None:
    """close() of the stubbed pool returned, and not before every thread the pool started
    had ended (see :func:`~autograder.checks.processes.bookkeeping.closing_run`)."""
    if not closing["returned"]:
        raise AssertionError(
            f"{exercise}: close() did not return within {CLOSE_S:g} s on stub workers, while "
            "the grader held the pool's own thread until close() joined it; expected "
            "close() to join the threads the pool started (Thread.join), then return")
    if closing["raised"]:
        raise AssertionError(f"{exercise}: close() raised on stub workers; expected it to "
                             "work")
    if closing["returned_while_held"] or closing["running_at_return"]:
        raise AssertionError(
            f"{exercise}: close() returned while a thread the pool started was still running "
            "(the grader held the pool's thread that took the queue's last item until "
            "close() joined it, and close() returned without waiting); expected close() to "
            "join every thread the pool started, the one that collects answers too: a sleep "
            "is not a join, and a thread left running outlives the pool it serves")
    if closing["worker_running_at_return"]:
        raise AssertionError(
            f"{exercise}: close() returned while a worker process was still running (the "
            "grader held the stub worker that took its end marker until close() joined it, "
            "and close() returned without waiting); expected close() to join every worker "
            "(Process.join): a sleep is not a join, and a worker not joined is left behind")
    if closing["left_running"]:
        raise AssertionError(
            f"{exercise}: {closing['left_running']} thread(s) the pool started were still "
            f"running {JOIN_GRACE_S:g} s after close() returned; expected close() to stop them "
            "(an end marker on the queue they read) and join them")


#: What a failing explored schedule of the pool means (see :mod:`.bookkeeping`).
_BOOKKEEPING_HINT = (
    "worker 0 and worker 1 each called predict() once (worker 0 made the pool with one worker "
    "process, and closes it once both returned); the other threads were started by the pool: "
    "its own, and a stub of the worker process that answers in this process (in one run the "
    "moment each request is put, in another gathering requests and answering them last "
    "first). In this schedule a caller did not get the answer to its own request, expected "
    "every caller to get its own whatever the order of the threads and of the answers: the "
    "request-id bookkeeping is a check-then-act between threads. Hand out each id and "
    "register its caller together under one lock, before the request goes on the queue, and "
    "find each answer's caller under that lock")


def _short(values: Any) -> str:
    try:
        return "(" + ", ".join(f"{float(v):.3f}" for v in values) + ")"
    except (TypeError, ValueError):
        return repr(values)[:80]


# --------------------------------------------------------------------------- exercise 2: the ledger


def check_ledger(run_ledger: Callable[[int, int], Any]) -> None:
    """Grade ``run_ledger`` (see :func:`run_ledger_once`); AssertionError if it fails.

    Reports (for the judge) how each worker's process was started, the workers that ran in a
    process, the other processes not started with spawn, the workers that raised, were stopped
    or still ran when it returned, the totals it returned and what it left behind.
    """
    exercise = "run_ledger"
    seen = run_ledger_once(run_ledger, exercise=exercise)
    missing = sorted(set(range(LEDGER_WORKERS)) - seen.workers_ran)
    forked = {index: method for index, method in sorted(seen.methods.items())
              if method != "spawn"}
    if forked:
        methods = ", ".join(f"worker {index} with {method}" for index, method in forked.items())
        raise AssertionError(
            f"{exercise}: {len(forked)} of its {LEDGER_WORKERS} worker processes were not "
            f"started with spawn ({methods}), expected multiprocessing.get_context('spawn') "
            "for every process: a forked child of a process that runs TensorFlow can hang")
    if missing:
        raise AssertionError(
            f"{exercise}: ledger worker(s) {missing} never ran process_workers.tally in a "
            f"process of their own; expected each of the {LEDGER_WORKERS} workers to run it on "
            "a process (the totals must come from the workers, not be computed)")
    if seen.others_not_spawned:
        raise AssertionError(
            f"{exercise}: {seen.others_not_spawned} of the other processes it started (a "
            "manager's or a pool's) were not started with spawn, expected every process it "
            "starts to come from multiprocessing.get_context('spawn') (ctx.Manager(), "
            "ctx.Pool(), ctx.Process())")
    if seen.failed:
        raise AssertionError(
            f"{exercise}: ledger worker(s) {sorted(seen.failed)} raised "
            f"{', '.join(sorted(set(seen.failed.values())))} in their process: "
            "process_workers.tally(ledger, lock, k, workers, updates) could not work with what "
            "it was given; expected a SharedMemory block's name, a multiprocessing array or a "
            "queue as the ledger, and a multiprocessing lock (or None)")
    if seen.stopped:
        raise AssertionError(
            f"{exercise}: ledger worker(s) {seen.stopped} ended before they had made all their "
            f"updates: run_ledger stopped them (a timeout, then terminate() or kill()) "
            f"{seen.returned_after:.1f} s after it was called, while they were still working. "
            "Workers take as long as they take: the grader holds one before its last "
            "update until run_ledger waits for it with no time limit (or one of "
            f"{LEDGER_UNLIMITED_S:g} s or more), as a loaded machine might; expected run_ledger "
            "to wait for "
            "every worker with join(), no timeout, and to stop none that is still working")
    if seen.running:
        raise AssertionError(
            f"{exercise}: it returned while ledger worker(s) {seen.running} were still making "
            "their updates, expected it to wait for every worker (join()) before it reads the "
            "accounts")
    values = plain(seen.totals, f"{exercise}:")
    try:
        totals = [int(v) for v in (values.tolist() if isinstance(values, np.ndarray)
                                   else values)]
    except (TypeError, ValueError):
        raise AssertionError(f"{exercise}: returned {values!r}, expected a list of "
                             f"{process_workers.ACCOUNTS} account totals") from None
    if totals == process_workers.expected_totals(LEDGER_WORKERS, LEDGER_UPDATES):
        raise AssertionError(
            f"{exercise}: it returned {totals}, the totals process_workers.expected_totals "
            f"computes, not what the ledger holds ({seen.expected}): while graded, each "
            "worker's last update adds an amount the grader picks and the answer cannot know; "
            "expected the totals read from the ledger the workers wrote")
    if totals != seen.expected:
        counted, want = sum(totals), sum(seen.expected)
        raise AssertionError(
            f"{exercise}: the ledger counted {counted} of {want} (accounts {totals}, expected "
            f"{seen.expected}): updates made by different processes at the same time were "
            "lost. Every worker must hold one and the same multiprocessing lock around its "
            "read-modify-write (or send its updates to a single writer)")
    if seen.leftovers:
        raise AssertionError(f"{exercise}: when it returned there were "
                             f"{seen.leftovers.describe()}, expected none: join every worker, "
                             "then close and unlink the ledger")
    report({"methods": [[index, method] for index, method in sorted(seen.methods.items())],
            "ran": sorted(seen.workers_ran), "others_not_spawned": seen.others_not_spawned,
            "failed": sorted(seen.failed), "stopped": list(seen.stopped),
            "running": list(seen.running), "totals": totals, "extras": list(seen.extras),
            "leftovers": [len(seen.leftovers.processes), len(seen.leftovers.segments)]})


# --------------------------------------------------------------------------- exercise 3: choose


def check_choose(choose: Callable[[DesignRun, DesignRun, float], Any]) -> None:
    """Grade ``choose`` on :func:`choice_cases`; AssertionError naming the first wrong case.

    Reports (for the judge) every case's measurements (threads' and processes' requests per
    second and MB, the budget) and what ``choose`` returned on it.
    """
    exercise = "choose"
    chosen = []
    for what, threads, processes, budget in choice_cases():
        want = reference_choice(threads, processes, budget)
        try:
            got = choose(threads, processes, budget)
        except Exception as error:  # noqa: BLE001 - reported to the student
            raise AssertionError(f"{exercise}: raised {describe_error(error)} on "
                                 f"measurements where {what}") from None
        got = plain(got, f"{exercise}:")
        if got != want:
            exact = [p / t for p, t in zip(processes.per_second, threads.per_second,
                                           strict=True)]
            ratios = [round(ratio, 3) for ratio in exact]
            middle = ("the mean of the two middle ratios" if len(exact) % 2 == 0
                      else "the middle ratio")
            raise AssertionError(
                f"{exercise}: returned {got!r} where {what}, expected {want!r}. Threads "
                f"{list(threads.per_second)} req/s, {threads.memory_mb:g} MB; processes "
                f"{list(processes.per_second)} req/s, {processes.memory_mb:g} MB; budget "
                f"{budget:g} MB; per-round ratios {ratios}, median "
                f"{round(statistics.median(exact), 4):g} ({middle} of {len(exact)} rounds). "
                f"The rule: processes only within the budget and with a median of at least "
                f"{MARGIN:g}")
        chosen.append({"threads": list(threads.per_second), "threads_mb": threads.memory_mb,
                       "processes": list(processes.per_second),
                       "processes_mb": processes.memory_mb, "budget": budget, "chose": got})
    report({"cases": chosen})
