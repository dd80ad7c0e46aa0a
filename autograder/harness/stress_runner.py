"""The stress engine: real threads released together, for races inside library code.

``explore`` runs TF ops and Keras internals atomically, so a race inside them (a Keras model
built from several threads at once, two ``assign`` ops interleaving inside TensorFlow) needs real
concurrency. ``stress`` gives it: every trial starts one real thread per worker, lines them up
on a barrier, releases them together with the interpreter switching threads as often as it can
(``sys.setswitchinterval(1e-6)``), and proves from timestamps that they really ran at the same
time.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import report, tamper
from .result import Result, issue
from .timeline import Mark, Segment, Timeline

# How many reruns of trials whose threads ran one after another (they tested nothing) a run
# may make, per trial asked and one more, before the result is inconclusive.
RERUNS_PER_TRIAL = 2
_SWITCH_INTERVAL = 1e-6
_STALL_SAMPLE_S = 0.2
_ALIGN_S = 0.002
_CPU_PROGRESS_S = 0.0005


@dataclass
class _Trial:
    number: int
    order: list[int]
    verdict: str = "pass"
    intervals: dict[int, tuple[float, float]] = field(default_factory=dict)
    errors: dict[int, BaseException] = field(default_factory=dict)
    check_outcome: object = None
    stuck: dict[int, str] = field(default_factory=dict)
    setup_error: BaseException | None = None

    @property
    def overlapped(self) -> bool:
        spans = sorted(self.intervals.values())
        return any(max(a[0], b[0]) < min(a[1], b[1])
                   for i, a in enumerate(spans) for b in spans[i + 1:])


def stress(
    setup: Callable[[], Any],
    workers: Sequence[Callable[[Any], Any]],
    check: Callable[[Any], Any],
    *,
    trials: int = 50,
    seed: int = 0,
    timeout_s: float = 60.0,
) -> Result:
    """Run the workers on real threads, all at once, for a fixed number of trials.

    Each trial calls ``setup()`` for fresh state, starts one real thread per worker (in an
    order drawn from ``seed``), holds them at a barrier, releases them together at
    ``sys.setswitchinterval(1e-6)`` (restored afterwards), joins them with a bounded wait and
    then calls ``check(state)``. It stops at the first failing trial.

    Verdicts: a worker raising is ``"error"`` (the message names the exception, the thread and
    that the threads were running together: for a cold Keras model this *is* the race);
    ``check`` raising ``AssertionError`` or returning ``False`` is ``"race"``; threads still
    blocked at the deadline are ``"deadlock"`` (with their stacks), still running is
    ``"timeout"``. A trial whose threads never ran at the same time tested nothing (workers
    too small, or a loaded machine that woke one thread after another had finished): it is not
    counted, its state is not checked, and it is run again with fresh state, at most
    ``RERUNS_PER_TRIAL * (trials + 1)`` times in all; past that the result is ``"timeout"``
    (inconclusive), never a pass. A trial that found something is never run again. Seeding
    TensorFlow or numpy is the caller's job.

    Keras and TensorFlow set up global state on first use; warm the code path you are not
    testing before calling ``stress`` (and build cold objects in ``setup`` when the cold path
    is what you test).

    Args:
        setup: Returns fresh shared state; called once per trial.
        workers: Callables ``worker(state)``; each runs on its own thread. At least two.
        check: ``check(state)`` raises ``AssertionError`` or returns ``False`` when broken.
        trials: How many trials to run.
        seed: Seeds the order in which threads are started.
        timeout_s: Wall-clock budget for all trials together.

    Returns:
        The :class:`Result`; ``schedule`` names the seed and the failing trial.
    """
    workers = list(workers)
    if len(workers) < 2:
        raise ValueError("stress needs at least two workers to run at the same time")
    if trials < 1:
        raise ValueError("stress needs at least one trial")
    found = tamper.problems()
    if found:
        return issue("error", message=tamper.message(found))

    rng = random.Random(f"stress/{seed}")
    deadline = tamper.monotonic() + timeout_s
    previous = tamper.getswitchinterval()
    done: list[_Trial] = []
    alone = 0
    number = 1
    tamper.setswitchinterval(_SWITCH_INTERVAL)
    try:
        order, drawn_for = [], 0
        while number <= trials:
            if drawn_for != number:  # a rerun keeps its trial's start order
                order, drawn_for = rng.sample(range(len(workers)), len(workers)), number
            trial = _run_trial(number, order, setup, workers, check, deadline)
            late = tamper.monotonic() > deadline
            if trial.verdict == "alone":
                alone += 1
                if alone > RERUNS_PER_TRIAL * (trials + 1) or late:
                    done.append(trial)
                    break
                continue
            done.append(trial)
            if trial.verdict != "pass":
                break
            if late and number < trials:
                trial.verdict = "timeout"
                break
            number += 1
    finally:
        tamper.setswitchinterval(previous)

    found = tamper.problems()
    if found:
        return issue("error", message=tamper.message(found), schedules_run=len(done))
    return _result(done, trials, seed, timeout_s, workers, alone)


def _run_trial(number: int, order: list[int], setup: Callable[[], Any],
               workers: list[Callable[[Any], Any]], check: Callable[[Any], Any],
               deadline: float) -> _Trial:
    trial = _Trial(number, order)
    try:
        state = setup()
    except Exception as error:  # reported to the student, fail closed
        trial.verdict, trial.setup_error = "error", error
        return trial
    clock = tamper.perf_counter
    go: list[float] = []
    # The barrier proves every thread is up; the shared start time then lines them up to
    # microseconds (a barrier alone wakes them one by one, often after the first has finished).
    barrier = tamper.Barrier(len(workers), action=lambda: go.append(clock() + _ALIGN_S))

    def body(index: int) -> None:
        try:
            barrier.wait(timeout=max(0.0, deadline - tamper.monotonic()))
        except tamper.BrokenBarrierError:
            return
        while clock() < go[0]:
            pass
        start = clock()
        try:
            workers[index](state)
        except BaseException as error:  # the worker's failure is the finding
            trial.errors[index] = error
        finally:
            trial.intervals[index] = (start, clock())

    threads = {i: tamper.Thread(target=body, args=(i,), name=f"racelab-stress-worker-{i}",
                                daemon=True) for i in order}
    for thread in threads.values():
        thread.start()
    for thread in threads.values():
        thread.join(max(0.0, deadline - tamper.monotonic()))
    alive = {t.ident: f"worker {i}" for i, t in threads.items() if t.is_alive()}
    if alive:
        trial.stuck = alive
        trial.verdict = "deadlock" if _no_progress(alive) else "timeout"
        return trial
    if len(trial.intervals) < len(workers):
        trial.verdict = "timeout"
        return trial
    if trial.errors:
        trial.verdict = "error"
        return trial
    if not trial.overlapped:
        trial.verdict = "alone"
        return trial
    try:
        outcome = check(state)
    except AssertionError as failure:
        trial.verdict, trial.check_outcome = "race", failure
        return trial
    except Exception as error:  # a check crashing on broken state fails closed
        trial.verdict, trial.check_outcome = "error", error
        return trial
    if outcome is False:
        trial.verdict, trial.check_outcome = "race", False
    return trial


def _no_progress(idents: dict[int, str]) -> bool:
    """True when none of the threads used CPU (or moved, where CPU clocks are missing)."""
    before = _progress_marks(idents)
    _sleep(_STALL_SAMPLE_S)
    after = _progress_marks(idents)
    for ident in idents:
        old, new = before[ident], after[ident]
        if isinstance(old, float) and isinstance(new, float):
            if new - old > _CPU_PROGRESS_S:
                return False
        elif old != new:
            return False
    return True


def _progress_marks(idents: dict[int, str]) -> dict[int, object]:
    frames = tamper.current_frames()
    marks: dict[int, object] = {}
    for ident in idents:
        try:
            marks[ident] = time.clock_gettime(time.pthread_getcpuclockid(ident))
        except (AttributeError, OSError):
            frame = frames.get(ident)
            marks[ident] = (id(frame.f_code), frame.f_lasti) if frame else None
    return marks


def _sleep(seconds: float) -> None:
    """Sleep without ``time.sleep``, which code under test may have replaced."""
    lock = tamper.allocate_lock()
    lock.acquire()
    lock.acquire(timeout=seconds)


def _result(done: list[_Trial], trials: int, seed: int, timeout_s: float,
            workers: list[Callable[[Any], Any]], alone: int) -> Result:
    last = done[-1]
    replay_hint = (f"Run `stress(setup, workers, check, trials={trials}, seed={seed})` again to "
                   "see it again: real threads cannot be replayed step by step.")
    schedule = {"engine": "stress", "seed": seed, "trial": last.number,
                "start_order": last.order}
    timeline = _timeline(last, len(workers))
    common: dict[str, Any] = {"schedules_run": len(done), "timeline": timeline}
    together = f"{report.plural(len(workers), 'thread')} ran at the same time"
    where = f"trial {last.number} of {trials}"

    if last.setup_error is not None:
        return issue("error", schedule=schedule, **common, message=(
            f"setup() raised {report.exception_line(last.setup_error)} in {where}, so nothing "
            "was tested. This is a problem in the check's setup, not a race."))
    if last.verdict == "error" and last.errors:
        index, error = min(last.errors.items(), key=lambda kv: last.intervals[kv[0]][1])
        at = report.error_location(error)
        others = "" if len(last.errors) == 1 else (
            f" ({report.plural(len(last.errors), 'worker')} raised in all.)")
        return issue("error", schedule=schedule, **common, message=(
            f"worker {index} raised {report.exception_line(error)}"
            f"{' at ' + at if at else ''} in {where}, while {together}.{others}\n"
            "Code that is safe to share between threads must not raise when the threads run "
            "together: this exception is the race (or a bug that shows up under load).\n"
            + replay_hint))
    if last.verdict == "error":
        return issue("error", schedule=schedule, **common, message=(
            f"The check raised {report.exception_line(last.check_outcome)} in {where} after "
            f"{together}. It could not even read the shared state, which usually means a race "
            "left it broken.\n" + replay_hint))
    if last.verdict == "race":
        return issue("race", schedule=schedule, **common, message=(
            f"Race found in {where}: {together} and then the check failed.\n"
            f"  What the check saw: {report.check_failure(last.check_outcome)}\n"
            "The threads updated the shared state at the same time (see result.figure()). "
            + replay_hint))
    if last.verdict == "deadlock":
        return issue("deadlock", schedule=schedule, **common, message=(
            f"Deadlock in {where}: {', '.join(last.stuck.values())} made no progress and were "
            f"still blocked when the {timeout_s:g} s budget ran out. Where each one is stuck:\n"
            + report.stacks_of(last.stuck)))
    if last.verdict == "timeout" and last.stuck:
        return issue("timeout", schedule=schedule, **common, message=(
            f"Ran out of time in {where}: {', '.join(last.stuck.values())} were still running "
            f"after {timeout_s:g} s. This is never a pass. Where each one is:\n"
            + report.stacks_of(last.stuck)))
    if last.verdict == "timeout":
        return issue("timeout", schedule=schedule, **common, message=(
            f"Ran out of time: only {report.plural(len(done), 'trial')} of {trials} finished "
            f"within {timeout_s:g} s, so the result is inconclusive (never a pass). Make each "
            "trial cheaper or give stress a larger timeout_s."))

    if last.verdict == "alone":
        counted = len(done) - 1
        return issue("timeout", schedule=schedule, **{**common, "schedules_run": counted}, message=(
            f"Inconclusive: the worker threads ran one after another, never at the same time, "
            f"in {report.plural(alone, 'trial')} (and at the same time in {counted} of the "
            f"{trials} needed), so the test proved nothing about races. Give each worker more "
            "work (for example a loop of calls) so that they overlap."))
    again = (f" ({report.plural(alone, 'more trial')}, whose threads ran one after another, "
             "tested nothing and ran again)") if alone else ""
    return issue("pass", **common, message=(
        f"No race found: {report.plural(len(done), 'trial')}, threads overlapped in "
        f"{len(done)} of them, and the check held every time{again}."))


def _timeline(trial: _Trial, lanes: int) -> Timeline:
    timeline = Timeline(lanes=[f"worker {i}" for i in range(lanes)],
                        xlabel="milliseconds since the threads were released",
                        title=f"stress trial {trial.number}: {trial.verdict}")
    if not trial.intervals:
        return timeline
    origin = min(start for start, _ in trial.intervals.values())
    for index, (start, end) in sorted(trial.intervals.items()):
        timeline.segments.append(Segment(index, (start - origin) * 1e3, (end - origin) * 1e3))
    for index, error in trial.errors.items():
        end = trial.intervals[index][1]
        timeline.marks.append(Mark(index, (end - origin) * 1e3, type(error).__name__))
    if trial.verdict == "race":
        last_end = max(trial.intervals.items(), key=lambda kv: kv[1][1])
        timeline.marks.append(Mark(last_end[0], (last_end[1][1] - origin) * 1e3,
                                   "check failed"))
    return timeline
