"""Graded properties for lesson 05, "stress tests and benchmarks".

The lesson's exercises are tests and measurements, so the graders run the student's code
against code whose answer is known:

- :func:`check_stress_test`: the student's ``stress_ledger(make_ledger)`` is run against
  hidden ledger implementations, :data:`RACY` (each loses updates or tears a snapshot, every
  one with a GIL-releasing TensorFlow call inside its race window) and :data:`CORRECT`
  (locks, ``tf.Variable.assign_add``, a queue, an immutable tuple, per-thread shards). The
  test must fail (raise) on every racy one and return normally on every correct one. Each run
  happens on a daemon thread with a deadline of :data:`BUDGET_S`: raising anything counts as
  "failed", not returning in time counts as "hung" (also a failure; the thread is left behind
  as a daemon, which the grading kernel's shutdown ends). ``sys.setswitchinterval`` is
  restored after every run.
- :func:`check_measure`: the student's ``measure(serve, threads, calls)`` benchmark is run on
  servers whose physics is known (sleeps that overlap, sleeps serialised by a lock, calls of two
  different lengths); the numbers are checked for sanity, never for exact values.
- :func:`check_explore_ledger`: the student's ``explore_ledger(make_ledger)`` must return a
  harness :class:`~autograder.harness.Result` that is not ok for pure-Python ledgers whose
  race the GIL hides from real threads, and ok for correct ones.

The hidden implementations live in this module (students do not read it while solving; a
test that inspects the implementation's source instead of its behaviour is not a stress test,
and the names are all ``Ledger`` so it cannot read them).
"""

from __future__ import annotations

import queue
import random
import statistics
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from autograder.checks.plain import NotPlainData, exception_line, plain, plain_array

#: Seconds one run of a student's stress test may take against one implementation.
BUDGET_S = 20.0
#: Seconds a student's ``explore_ledger`` may take against one implementation.
EXPLORE_BUDGET_S = 12.0
SEED = 5
FEATURES = 2


def batch(rows: int) -> np.ndarray:
    """A float32 batch of ``rows`` requests (its contents do not matter to a ledger)."""
    return np.ones((rows, FEATURES), "float32")


def _rows_of(data: Any) -> int:
    """Rows in a batch, asked of TensorFlow (the call releases the GIL, as real work does)."""
    import tensorflow as tf

    return int(tf.shape(data)[0])


# --------------------------------------------------------------------------- hidden ledgers
# Interface: ``record(batch)`` counts one request of ``len(batch)`` rows; ``totals()`` returns
# ``(requests, rows)`` with every recorded request counted in both or in neither.


class AssignLedger:
    """Racy: ``v.assign(v + n)`` reads and writes in two ops; updates get lost."""

    def __init__(self) -> None:
        import tensorflow as tf

        self.requests = tf.Variable(0, dtype=tf.int64)
        self.rows = tf.Variable(0, dtype=tf.int64)

    def record(self, data: Any) -> None:
        self.requests.assign(self.requests + 1)
        self.rows.assign(self.rows + _rows_of(data))

    def totals(self) -> tuple[int, int]:
        return int(self.requests.numpy()), int(self.rows.numpy())


class UnlockedReaderLedger:
    """Racy: the writer locks, ``totals`` does not; a snapshot lands mid-record."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests = 0
        self.rows = 0

    def record(self, data: Any) -> None:
        with self.lock:
            self.requests += 1
            self.rows += _rows_of(data)

    def totals(self) -> tuple[int, int]:
        return self.requests, self.rows


class LockPerCallLedger:
    """Racy: a new lock in every call protects nothing; updates get lost."""

    def __init__(self) -> None:
        self.requests = 0
        self.rows = 0

    def record(self, data: Any) -> None:
        with threading.Lock():
            requests, rows = self.requests, self.rows
            n = _rows_of(data)
            self.requests, self.rows = requests + 1, rows + n

    def totals(self) -> tuple[int, int]:
        with threading.Lock():
            return self.requests, self.rows


class TwoLocksLedger:
    """Racy: one lock per counter; no update is lost, but snapshots tear."""

    def __init__(self) -> None:
        self.requests_lock = threading.Lock()
        self.rows_lock = threading.Lock()
        self.requests = 0
        self.rows = 0

    def record(self, data: Any) -> None:
        with self.requests_lock:
            self.requests += 1
        n = _rows_of(data)
        with self.rows_lock:
            self.rows += n

    def totals(self) -> tuple[int, int]:
        with self.requests_lock:
            requests = self.requests
        with self.rows_lock:
            return requests, self.rows


class HalfAtomicLedger:
    """Racy: ``assign_add`` for requests, ``assign(v + n)`` outside the lock for rows."""

    def __init__(self) -> None:
        import tensorflow as tf

        self.lock = threading.Lock()
        self.requests = tf.Variable(0, dtype=tf.int64)
        self.rows = tf.Variable(0, dtype=tf.int64)

    def record(self, data: Any) -> None:
        with self.lock:
            self.requests.assign_add(1)
        self.rows.assign(self.rows + _rows_of(data))

    def totals(self) -> tuple[int, int]:
        with self.lock:
            return int(self.requests.numpy()), int(self.rows.numpy())


class ReadOutsideLedger:
    """Racy: reads ``rows`` before taking the lock, writes it under the lock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests = 0
        self.rows = 0

    def record(self, data: Any) -> None:
        total = self.rows + _rows_of(data)
        with self.lock:
            self.requests += 1
            self.rows = total

    def totals(self) -> tuple[int, int]:
        with self.lock:
            return self.requests, self.rows


class SplitUpdateLedger:
    """Racy, lost updates only: the pair is read under the lock, the rows are counted (a TF
    call) outside it and the new pair is written under the lock again, so two writers that
    read the same pair lose a record; a snapshot is one tuple and never tears."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.state = (0, 0)

    def record(self, data: Any) -> None:
        with self.lock:
            requests, rows = self.state
        n = _rows_of(data)
        with self.lock:
            self.state = (requests + 1, rows + n)

    def totals(self) -> tuple[int, int]:
        with self.lock:
            return self.state


class LockedLedger:
    """Correct: one lock around both counters, in ``record`` and in ``totals``."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests = 0
        self.rows = 0

    def record(self, data: Any) -> None:
        n = _rows_of(data)
        with self.lock:
            self.requests += 1
            self.rows += n

    def totals(self) -> tuple[int, int]:
        with self.lock:
            return self.requests, self.rows


class VariableLedger:
    """Correct: ``assign_add`` on two variables, both under one RLock (and read under it)."""

    def __init__(self) -> None:
        import tensorflow as tf

        self.lock = threading.RLock()
        self.requests = tf.Variable(0, dtype=tf.int64)
        self.rows = tf.Variable(0, dtype=tf.int64)

    def record(self, data: Any) -> None:
        with self.lock:
            self.requests.assign_add(1)
            self.rows.assign_add(_rows_of(data))

    def totals(self) -> tuple[int, int]:
        with self.lock:
            return int(self.requests.numpy()), int(self.rows.numpy())


class QueueLedger:
    """Correct: ``record`` only puts on a queue; ``totals`` drains it under a lock."""

    def __init__(self) -> None:
        self.inbox: queue.SimpleQueue[int] = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.requests = 0
        self.rows = 0

    def record(self, data: Any) -> None:
        self.inbox.put(_rows_of(data))

    def totals(self) -> tuple[int, int]:
        with self.lock:
            while True:
                try:
                    n = self.inbox.get_nowait()
                except queue.Empty:
                    return self.requests, self.rows
                self.requests += 1
                self.rows += n


class TupleLedger:
    """Correct: one immutable tuple replaced under a lock; a reader takes it in one load."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.state = (0, 0)

    def record(self, data: Any) -> None:
        n = _rows_of(data)
        with self.lock:
            requests, rows = self.state
            self.state = (requests + 1, rows + n)

    def totals(self) -> tuple[int, int]:
        return self.state


class ShardedLedger:
    """Correct: one shard per thread (only its thread writes it), summed from one read each."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.shards: list[list[tuple[int, int]]] = []
        self.local = threading.local()

    def record(self, data: Any) -> None:
        n = _rows_of(data)
        cell = getattr(self.local, "cell", None)
        if cell is None:
            cell = self.local.cell = [(0, 0)]
            with self.lock:
                self.shards.append(cell)
        requests, rows = cell[0]
        cell[0] = (requests + 1, rows + n)

    def totals(self) -> tuple[int, int]:
        with self.lock:
            states = [cell[0] for cell in self.shards]
        return sum(s[0] for s in states), sum(s[1] for s in states)


#: Racy ledgers that fail in different ways (issue #18, class 7): torn snapshots without lost
#: updates (``UnlockedReaderLedger``, ``TwoLocksLedger``), lost updates without torn snapshots
#: (``SplitUpdateLedger``), and both. No deadlocking ledger here: real threads would hang the
#: student's test for the whole budget; the explore exercise has one.
RACY: tuple[type, ...] = (AssignLedger, UnlockedReaderLedger, LockPerCallLedger, TwoLocksLedger,
                          HalfAtomicLedger, ReadOutsideLedger, SplitUpdateLedger)
CORRECT: tuple[type, ...] = (LockedLedger, VariableLedger, QueueLedger, TupleLedger, ShardedLedger)


_READ_PROBE = batch(1)


def _costed_totals(self: Any) -> tuple[int, int]:
    """``totals()`` of a hidden stress ledger: the read, then one GIL-releasing TF call.

    A real ledger's read costs a TensorFlow call (reading a ``tf.Variable`` does), and here
    every read does: the call hands the interpreter to a waiting writer, so a reader that loops
    until the writers are done makes about as many reads as the writers make records, on any
    machine and under any load. Without it a pure-Python read is ~0.3 us and a reader loop
    bounded by time (``while not done``) that keeps each torn snapshot grew a grading kernel to
    3 GB on a fast, idle machine (issue #18, class 8): the work is bounded by count, not time.
    The read comes first, so a reader's first snapshot is taken as early as it ever was.
    """
    snapshot = type(self).__mro__[1].totals(self)
    _rows_of(_READ_PROBE)
    return snapshot


def _anonymous(cls: type, *, costed: bool = False) -> Callable[[], Any]:
    """A factory whose objects' class is called ``Ledger`` whatever the implementation.

    Args:
        cls: The hidden implementation.
        costed: Give ``totals()`` a TF call's cost first (:func:`_costed_totals`).
    """
    members: dict[str, Any] = {"__doc__": "A ledger (record, totals)."}
    if costed:
        members["totals"] = _costed_totals
    hidden = type("Ledger", (cls,), members)
    hidden.__qualname__ = "Ledger"

    def make_ledger() -> Any:
        return hidden()

    return make_ledger


# --------------------------------------------------------------------------- running a test


def run_bounded(function: Callable[[], Any], budget_s: float) -> tuple[str, str, float]:
    """Run ``function()`` on a daemon thread with a deadline.

    Returns ``(verdict, detail, seconds)``: ``"returned"``, ``"raised"`` (detail names the
    exception) or ``"hung"`` (still running after ``budget_s``; the thread is abandoned).
    ``sys.setswitchinterval`` is restored afterwards, whatever the function set.
    """
    interval = sys.getswitchinterval()
    outcome: list[tuple[str, str]] = []

    def body() -> None:
        try:
            function()
        except BaseException as error:  # noqa: BLE001 - any exception is the test's verdict
            outcome.append(("raised", exception_line(error)))
        else:
            outcome.append(("returned", ""))

    start = time.perf_counter()
    thread = threading.Thread(target=body, name="student-test", daemon=True)
    thread.start()
    thread.join(budget_s)
    seconds = time.perf_counter() - start
    sys.setswitchinterval(interval)
    if thread.is_alive() or not outcome:
        return "hung", f"still running after {budget_s:.0f} s", seconds
    verdict, detail = outcome[0]
    return verdict, detail, seconds


def grade_against(test: Callable[[Callable[[], Any]], Any], *, racy: Sequence[type] = RACY,
                  correct: Sequence[type] = CORRECT, budget_s: float = BUDGET_S,
                  seed: int = SEED) -> list[dict[str, Any]]:
    """Run ``test(make_ledger)`` once per hidden implementation, in a seeded order.

    Returns one row per implementation: ``racy`` (bool), ``verdict``, ``detail``, ``seconds``
    and ``right`` (the test raised for a racy one, or returned for a correct one). Warms the
    TensorFlow path first so the first run does not pay TensorFlow's start-up.
    """
    _rows_of(batch(1))
    plan = [(cls, True) for cls in racy] + [(cls, False) for cls in correct]
    random.Random(seed).shuffle(plan)
    rows = []
    for number, (cls, is_racy) in enumerate(plan, 1):
        make_ledger = _anonymous(cls, costed=True)
        verdict, detail, seconds = run_bounded(lambda m=make_ledger: test(m), budget_s)
        right = verdict == "raised" if is_racy else verdict == "returned"
        rows.append({"number": number, "racy": is_racy, "verdict": verdict, "detail": detail,
                     "seconds": seconds, "right": right, "name": cls.__name__})
        if not right:
            break  # one wrong verdict decides the grade; a hung test also keeps a thread busy
    return rows


def verdict_table(rows: Sequence[dict[str, Any]]) -> str:
    """The grading runs as text, one line per hidden implementation (names withheld)."""
    lines = []
    for row in rows:
        kind = "racy   " if row["racy"] else "correct"
        said = {"raised": "your test failed it", "returned": "your test passed it",
                "hung": "your test hung"}[row["verdict"]]
        mark = "ok " if row["right"] else "BAD"
        extra = f" ({row['detail']})" if row["detail"] else ""
        lines.append(f"  {mark} ledger {row['number']:2d}, {kind}: {said} "
                     f"in {row['seconds']:.2f} s{extra}")
    return "\n".join(lines)


def check_stress_test(test: Callable[[Callable[[], Any]], Any], **kwargs: Any) -> None:
    """Grade ``stress_ledger``: it must fail every racy ledger and pass every correct one.

    Engine: the student's own test, real threads, once per hidden ledger (7 racy, 5 correct,
    in a seeded order), each within :data:`BUDGET_S`; every hidden ``totals()`` costs a TF
    call (:func:`_costed_totals`), so the student's work is bounded by its counts.
    """
    rows = grade_against(test, **kwargs)
    wrong = [row for row in rows if not row["right"]]
    expected = len(kwargs.get("racy", RACY)) + len(kwargs.get("correct", CORRECT))
    if not wrong and len(rows) == expected:
        return
    missed = sum(row["racy"] and row["verdict"] == "returned" for row in wrong)
    false_alarms = sum(not row["racy"] and row["verdict"] == "raised" for row in wrong)
    hung = sum(row["verdict"] == "hung" for row in rows)
    summary = []
    if missed:
        summary.append(f"it passed {missed} racy ledger(s) it was expected to fail (a race it "
                       "never provoked or never checked for)")
    if false_alarms:
        summary.append(f"it failed {false_alarms} correct ledger(s) it was expected to pass "
                       "(an invariant that is not part of the contract, or a crash)")
    if hung:
        summary.append(f"it hung: a run took longer than {kwargs.get('budget_s', BUDGET_S):.0f} s "
                       "(a barrier with the wrong number of parties, a join that never "
                       "returns, or too much work)")
    raise AssertionError(
        "stress_ledger: expected to fail every racy ledger and pass every correct one, but "
        + "; ".join(summary) + ".\nWhat your test did with each hidden ledger, in the order "
        "they ran (grading stops at the first wrong verdict):\n" + verdict_table(rows))


# --------------------------------------------------------------------------- exercise 2


def sleeper(seconds: float, lock: Any = None) -> Callable[[], None]:
    """A server whose every call sleeps ``seconds`` (holding ``lock`` when given one)."""
    def serve() -> None:
        if lock is None:
            time.sleep(seconds)
        else:
            with lock:
                time.sleep(seconds)
    return serve


def alternating(short_s: float, long_s: float) -> Callable[[], None]:
    """A server whose calls sleep ``short_s`` and ``long_s`` in turns (per thread)."""
    local = threading.local()

    def serve() -> None:
        turn = getattr(local, "turn", 0)
        local.turn = turn + 1
        time.sleep(long_s if turn % 2 else short_s)
    return serve


SLEEP_S = 0.004
THREADS = 4
CALLS = 6


def measure_problems(measure: Callable[..., Any]) -> list[str]:
    """Run ``measure`` on servers of known physics; return what is wrong with its numbers."""
    problems: list[str] = []
    cases = {
        "overlapping sleeps": sleeper(SLEEP_S),
        "sleeps behind one lock": sleeper(SLEEP_S, threading.Lock()),
        "calls of 1 ms and 12 ms in turns": alternating(0.001, 0.012),
    }
    results: dict[str, dict[str, Any]] = {}
    for name, serve in cases.items():
        got: list[Any] = []
        verdict, detail, _ = run_bounded(
            lambda s=serve, g=got: g.append(measure(s, THREADS, CALLS)), 20.0)
        if verdict != "returned":
            return [f"measure(serve, {THREADS}, {CALLS}) on {name} {verdict} {detail}".strip()]
        call = f"measure: on {name}, measure(serve, {THREADS}, {CALLS})"
        result = plain(got[0], call)
        keys = {"wall_s", "latencies_s", "throughput"}
        if not isinstance(result, dict) or not keys <= set(result):
            return [f"measure returned {type(result).__name__}, expected a dict with keys "
                    "'wall_s', 'latencies_s' and 'throughput'"]
        wall = plain(result["wall_s"], f"{call}['wall_s']", float)
        latencies = _floats(result["latencies_s"], f"{call}['latencies_s']")
        throughput = plain(result["throughput"], f"{call}['throughput']", float)
        results[name] = {"wall_s": wall, "latencies_s": latencies, "throughput": throughput}
        where = f"on {name} ({THREADS} threads x {CALLS} calls)"
        if len(latencies) != THREADS * CALLS:
            problems.append(f"{where}: expected {THREADS * CALLS} latencies, one per call, "
                            f"saw {len(latencies)}")
            continue
        if wall <= 0 or min(latencies) <= 0 or throughput <= 0:
            problems.append(f"{where}: expected every number positive, saw wall_s={wall:.4g}, "
                            f"smallest latency {min(latencies):.4g}, throughput {throughput:.4g}")
            continue
        if abs(throughput * wall / (THREADS * CALLS) - 1) > 0.02:
            problems.append(f"{where}: expected throughput = calls made / wall_s = "
                            f"{THREADS * CALLS / wall:.1f}/s, saw {throughput:.1f}/s")
        if max(latencies) > wall * 1.02:
            problems.append(f"{where}: one call took {max(latencies):.4f} s, longer than the "
                            f"whole run's wall_s {wall:.4f} s")
        if sum(latencies) > THREADS * wall * 1.05:
            problems.append(f"{where}: expected the latencies to add up to at most threads x "
                            f"wall_s = {THREADS * wall:.4f} s, saw {sum(latencies):.4f} s")
        if name != "calls of 1 ms and 12 ms in turns" and min(latencies) < SLEEP_S * 0.95:
            problems.append(f"{where}: a call that sleeps {SLEEP_S * 1000:.0f} ms, so expected "
                            f"every latency >= {SLEEP_S * 1000:.0f} ms, saw "
                            f"{min(latencies) * 1000:.2f} ms: time each call with a wall clock "
                            "(time.perf_counter)")
    if problems:
        return problems
    serial = THREADS * CALLS * SLEEP_S
    overlapped = results["overlapping sleeps"]["wall_s"]
    busy = sum(results["overlapping sleeps"]["latencies_s"])
    if overlapped > 0.6 * busy:
        problems.append(f"on overlapping sleeps: expected the {THREADS} threads to run at once, "
                        f"so wall_s well under the {busy:.3f} s the calls took in all, saw "
                        f"{overlapped:.3f} s: the threads ran one after another")
    locked = results["sleeps behind one lock"]["wall_s"]
    if locked < serial * 0.98:
        problems.append(f"on sleeps behind one lock: the calls cannot overlap, so expected "
                        f"wall_s >= {serial:.3f} s, saw {locked:.3f} s")
    lat = sorted(results["calls of 1 ms and 12 ms in turns"]["latencies_s"])
    if lat[-1] < 3 * lat[0]:
        problems.append("on calls of 1 ms and 12 ms in turns: expected a quarter or more of the "
                        f"latencies near 1 ms and the longest near 12 ms, saw shortest "
                        f"{lat[0] * 1000:.1f} ms, median {statistics.median(lat) * 1000:.1f} ms, "
                        f"longest {lat[-1] * 1000:.1f} ms: measure each call, not an average")
    return problems


def _floats(value: Any, what: str) -> list[float]:
    """``value`` (plain data: a list, tuple or 1-D array of numbers) as a list of floats."""
    array = plain_array(value, what)
    if array.ndim != 1:
        raise NotPlainData(f"{what} returned an array shaped {array.shape}; expected a list "
                           "of numbers")
    return [float(x) for x in array.tolist()]


def check_measure(measure: Callable[..., Any]) -> None:
    """Grade ``measure``: its numbers obey the physics of servers whose behaviour is known."""
    problems = measure_problems(measure)
    if problems:
        raise AssertionError("measure: " + "; ".join(problems))


# --------------------------------------------------------------------------- exercise 3
# Pure-Python ledgers: ``rows = len(data)``, no call that releases the GIL inside the window,
# so real threads under CPython 3.11 never interleave them; the controlled scheduler does.


class PlainLedger:
    """Racy (GIL-hidden): no lock at all."""

    def __init__(self) -> None:
        self.requests = 0
        self.rows = 0

    def record(self, data: Any) -> None:
        self.requests += 1
        self.rows += len(data)

    def totals(self) -> tuple[int, int]:
        return self.requests, self.rows


class PlainUnlockedReader(PlainLedger):
    """Racy (GIL-hidden): the writer locks, the reader does not."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()

    def record(self, data: Any) -> None:
        with self.lock:
            self.requests += 1
            self.rows += len(data)


class PlainLockPerCall(PlainLedger):
    """Racy (GIL-hidden): a lock made in every call."""

    def record(self, data: Any) -> None:
        with threading.Lock():
            self.requests += 1
            self.rows += len(data)

    def totals(self) -> tuple[int, int]:
        with threading.Lock():
            return self.requests, self.rows


class PlainTwoLocks(PlainLedger):
    """Racy (GIL-hidden): one lock per counter."""

    def __init__(self) -> None:
        super().__init__()
        self.a = threading.Lock()
        self.b = threading.Lock()

    def record(self, data: Any) -> None:
        with self.a:
            self.requests += 1
        with self.b:
            self.rows += len(data)

    def totals(self) -> tuple[int, int]:
        with self.a:
            requests = self.requests
        with self.b:
            return requests, self.rows


class PlainLocked(PlainLedger):
    """Correct: one lock for both, in both methods."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()

    def record(self, data: Any) -> None:
        with self.lock:
            self.requests += 1
            self.rows += len(data)

    def totals(self) -> tuple[int, int]:
        with self.lock:
            return self.requests, self.rows


class PlainTuple:
    """Correct: an immutable tuple replaced under a lock, read in one load."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.state = (0, 0)

    def record(self, data: Any) -> None:
        with self.lock:
            requests, rows = self.state
            self.state = (requests + 1, rows + len(data))

    def totals(self) -> tuple[int, int]:
        return self.state


class PlainRLock(PlainLocked):
    """Correct: an RLock, with ``record`` reading totals while holding it."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.RLock()

    def record(self, data: Any) -> None:
        with self.lock:
            requests, rows = self.totals()
            self.requests, self.rows = requests + 1, rows + len(data)


class PlainLostNoTear:
    """Racy (GIL-hidden), lost updates only: a snapshot is one tuple and never tears, but
    ``record`` reads it under the lock and writes it back under the lock again, so two writers
    can both read the same tuple and one record is lost. Only two writers and a check of the
    final totals find it (one writer with a checking reader never does)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.state = (0, 0)

    def record(self, data: Any) -> None:
        with self.lock:
            requests, rows = self.state
        with self.lock:
            self.state = (requests + 1, rows + len(data))

    def totals(self) -> tuple[int, int]:
        return self.state


class PlainOrderDeadlock:
    """Racy (GIL-hidden), deadlock only: ``record`` takes lock ``a`` then ``b``, ``totals``
    takes ``b`` then ``a``. Counts are never lost and snapshots never tear, but a ``totals``
    running while a ``record`` is in progress can leave both waiting forever. Only a reader
    running at the same time as a writer finds it."""

    def __init__(self) -> None:
        self.a = threading.Lock()
        self.b = threading.Lock()
        self.requests = 0
        self.rows = 0

    def record(self, data: Any) -> None:
        with self.a:
            with self.b:
                self.requests += 1
                self.rows += len(data)

    def totals(self) -> tuple[int, int]:
        with self.b:
            with self.a:
                return self.requests, self.rows


#: The racy variants differ in how they fail, so that only a general test catches all of
#: them (issue #18, class 7): lost updates and torn snapshots (``PlainLedger``,
#: ``PlainLockPerCall``), torn snapshots without any lost update (``PlainUnlockedReader``,
#: ``PlainTwoLocks``), lost updates without any torn snapshot (``PlainLostNoTear``) and a
#: deadlock without either (``PlainOrderDeadlock``).
GIL_HIDDEN_RACY: tuple[type, ...] = (PlainLedger, PlainUnlockedReader, PlainLockPerCall,
                                     PlainTwoLocks, PlainLostNoTear, PlainOrderDeadlock)
GIL_HIDDEN_CORRECT: tuple[type, ...] = (PlainLocked, PlainTuple, PlainRLock)


def explore_rows(explore_ledger: Callable[[Callable[[], Any]], Any], *,
                 racy: Sequence[type] = GIL_HIDDEN_RACY,
                 correct: Sequence[type] = GIL_HIDDEN_CORRECT,
                 budget_s: float = EXPLORE_BUDGET_S) -> list[dict[str, Any]]:
    """Run ``explore_ledger(make_ledger)`` per hidden pure-Python ledger; one row each."""
    from autograder.harness import Result

    plan = [(cls, True) for cls in racy] + [(cls, False) for cls in correct]
    random.Random(SEED).shuffle(plan)
    rows = []
    for number, (cls, is_racy) in enumerate(plan, 1):
        got: list[Any] = []
        make_ledger = _anonymous(cls)
        verdict, detail, seconds = run_bounded(
            lambda m=make_ledger, g=got: g.append(explore_ledger(m)), budget_s)
        if verdict == "returned":
            result = got[0]
            # Exactly a Result (a subclass or a faked __class__ would decide its own ``ok``),
            # read as plain data: ``ok`` is the harness's own (a hand-made Result is never ok).
            if type(result) is not Result:
                kind = plain(type(result).__name__, "explore_ledger: its result's type", str)
                verdict, detail = "raised", f"returned {kind}, not a Result"
            else:
                ok = plain(result.ok, "explore_ledger: Result.ok", bool)
                said = plain(result.verdict, "explore_ledger: Result.verdict", str)
                runs = plain(result.schedules_run, "explore_ledger: Result.schedules_run", int)
                verdict = "raised" if not ok else "returned"
                detail = f"verdict {said!r} after {runs} schedules"
        right = verdict == "raised" if is_racy else verdict == "returned"
        rows.append({"number": number, "racy": is_racy, "verdict": verdict, "detail": detail,
                     "seconds": seconds, "right": right, "name": cls.__name__})
        if not right:
            break  # one wrong verdict decides the grade
    return rows


def check_explore_ledger(explore_ledger: Callable[[Callable[[], Any]], Any], **kwargs: Any) -> None:
    """Grade ``explore_ledger``: not ok on every GIL-hidden racy ledger, ok on every correct one.

    Engine: the student's own ``explore`` call (its seed and ``max_schedules``; the harness
    first runs every schedule with at most one preemption), once per hidden pure-Python
    ledger (6 racy that fail differently, 3 correct), each within :data:`EXPLORE_BUDGET_S`.
    """
    rows = explore_rows(explore_ledger, **kwargs)
    expected = (len(kwargs.get("racy", GIL_HIDDEN_RACY))
                + len(kwargs.get("correct", GIL_HIDDEN_CORRECT)))
    if all(row["right"] for row in rows) and len(rows) == expected:
        return
    table = verdict_table(rows).replace("your test failed it", "your Result was not ok") \
        .replace("your test passed it", "your Result was ok")
    raise AssertionError(
        "explore_ledger: expected a Result that is not ok for every racy ledger and ok for "
        "every correct one, but it got one wrong (grading stops at the first wrong verdict):\n"
        + table)


# --------------------------------------------------------------------------- measure it


def predict_throughput(model: Any, data: np.ndarray, *, threads: int, calls: int,
                       strategy: str) -> float:
    """Requests per second of ``threads`` threads each calling predict ``calls`` times.

    ``strategy``: ``"lock"`` (one shared model, one lock around every call), ``"copies"`` (one
    cloned model per thread, no lock) or ``"shared"`` (one shared, warmed model, no lock).
    """
    import keras

    lock = threading.Lock()
    if strategy == "copies":
        models = []
        for _ in range(threads):
            copy = keras.models.clone_model(model)
            copy.set_weights(model.get_weights())
            copy.predict_on_batch(data)
            models.append(copy)
    else:
        models = [model] * threads
    barrier = threading.Barrier(threads + 1)

    def body(index: int) -> None:
        own = models[index]
        barrier.wait()
        for _ in range(calls):
            if strategy == "lock":
                with lock:
                    own.predict_on_batch(data)
            else:
                own.predict_on_batch(data)

    pool = [threading.Thread(target=body, args=(k,)) for k in range(threads)]
    for thread in pool:
        thread.start()
    barrier.wait()
    start = time.perf_counter()
    for thread in pool:
        thread.join()
    return threads * calls / (time.perf_counter() - start)
