"""The hidden ledgers a student's stress test must fail or pass (exercise 1), and batches."""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from autograder.checks.kit import Overlap
from autograder.checks.stress_tests.settings import FEATURES
from autograder.harness.tamper import opaque


def batch(rows: int) -> np.ndarray:
    """A float32 batch of ``rows`` requests (its contents do not matter to a ledger)."""
    return np.ones((rows, FEATURES), "float32")


def _rows_of(data: Any) -> int:
    """Rows in a batch, asked of TensorFlow, then the interpreter offered to a waiting thread.

    The TF call releases the GIL as real work does, but on a busy core the thread that released
    it often takes it back before a waiting thread is scheduled: a correct stress test then
    missed a racy ledger in about one run in three (25 of 50 on ``LockPerCallLedger``, one core
    shared with a busy loop). ``time.sleep(0)`` releases the GIL and gives up the core, as a
    ledger that also wrote a log line would; with it the same test missed none of 350 runs.
    """
    import tensorflow as tf

    rows = int(tf.shape(data)[0])
    time.sleep(0)
    return rows


def _one_after_rows_of(data: Any) -> int:
    """1, returned after :func:`_rows_of` (a TensorFlow call, then a yield of the core)."""
    _rows_of(data)
    return 1


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


class RowsFirstLedger(UnlockedReaderLedger):
    """Racy: as :class:`UnlockedReaderLedger`, but ``record`` counts the rows first: a torn
    snapshot has too many rows for its requests, not too few (round 8: a test whose reader
    checked only ``rows < 3 * requests`` passed every other racy ledger)."""

    def record(self, data: Any) -> None:
        with self.lock:
            self.rows += _rows_of(data)
            self.requests += _one_after_rows_of(data)


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
#: updates (``UnlockedReaderLedger``, ``TwoLocksLedger``, ``RowsFirstLedger``, which tears the
#: other way), lost updates without torn snapshots
#: (``SplitUpdateLedger``), and both. No deadlocking ledger here: real threads would hang the
#: student's test for the whole budget; the explore exercise has one.
RACY: tuple[type, ...] = (AssignLedger, UnlockedReaderLedger, LockPerCallLedger, TwoLocksLedger,
                          HalfAtomicLedger, ReadOutsideLedger, SplitUpdateLedger,
                          RowsFirstLedger)
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


def _revoked() -> None:
    """Raised by a hidden ledger in a thread of a stress test that was abandoned (it hung): a
    plain ``SystemExit``, which ``threading`` does not report (a subclass it would), so the
    thread ends quietly instead of calling the ledger for ever beside the checks that follow."""
    raise SystemExit


def _anonymous(cls: type, *, costed: bool = False, revoked: threading.Event | None = None,
               overlap: Overlap | None = None, writes: Overlap | None = None
               ) -> Callable[[], Any]:
    """A factory whose objects' class is called ``Ledger`` whatever the implementation.

    Args:
        cls: The hidden implementation.
        costed: Give ``totals()`` a TF call's cost first (:func:`_costed_totals`).
        revoked: Once set, ``record()`` and ``totals()`` end their thread (:func:`_revoked`).
        overlap: Counts the calls running at once (on every object the factory makes); None
            for none (the explored ledgers: no lock of the grader's in their calls).
        writes: Counts the ``record()`` calls running at once, alike (only with ``overlap``).
    """
    read = _costed_totals if costed else cls.totals

    counting = overlap.counting if overlap is not None else contextlib.nullcontext
    writing = writes.counting if writes is not None else contextlib.nullcontext

    def record(self: Any, data: Any) -> None:
        if revoked is not None and revoked.is_set():
            _revoked()
        with counting(), writing():
            cls.record(self, data)

    def totals(self: Any) -> tuple[int, int]:
        if revoked is not None and revoked.is_set():
            _revoked()
        with counting():
            return read(self)

    # Counted calls are opaque: the answer cannot reach the overlap count through them. An
    # explored ledger's are not: an opaque hook is the grader's code, which the controlled
    # scheduler runs whole, and the race inside would never be interleaved.
    hide = opaque if overlap is not None else (lambda function: function)
    members: dict[str, Any] = {"__doc__": "A ledger (record, totals).", "record": hide(record),
                               "totals": hide(totals)}
    hidden = type("Ledger", (cls,), members)
    hidden.__qualname__ = "Ledger"

    def make_ledger() -> Any:
        return hidden()

    return make_ledger


def racy_once(overlap: Overlap, writes: Overlap, revoked: threading.Event | None = None
              ) -> Callable[[], Any]:
    """A factory of ledgers that race the way an intermittent bug does: once, then never again.

    Its ledgers are :class:`AssignLedger`'s (lost updates and torn snapshots) until one of
    them has had two ``record()`` calls running at once; every ledger made after that is a
    :class:`LockedLedger`'s. A test that fails on the first race it sees fails it; one that
    retries until an attempt passes, or that judges a later ledger than the one it stressed
    first, passes it. Both are costed and anonymous; ``overlap`` and ``writes`` count, across
    all of them, the calls and the ``record()`` calls that ran at once.
    """
    racy = _anonymous(AssignLedger, costed=True, revoked=revoked, overlap=overlap,
                      writes=writes)
    fixed = _anonymous(LockedLedger, costed=True, revoked=revoked, overlap=overlap,
                       writes=writes)

    def make_ledger() -> Any:
        return fixed() if writes.most >= 2 else racy()

    # Opaque: the answer cannot reach the counts (nor tell the two factories apart) through it.
    return opaque(make_ledger)


def held_reader(probe: Any, revoked: threading.Event | None = None,
                seen: dict[str, Any] | None = None) -> Callable[[], Any]:
    """A factory of ledgers whose first reader thread is held by ``probe`` (a
    :class:`~autograder.checks.kit.JoinProbe`): a thread that calls ``totals()`` without having
    recorded stops there until the test waits for it. Every ``record()`` counts as progress.

    The ledgers are :class:`LockedLedger`'s (costed and anonymous) but for that one held call:
    when the test waited for it (a join, or a quiet wait) after at least one ``record()``, it
    returns a torn snapshot, the last record's request counted and its rows not yet. So the
    race shows only to a test that checks what its reader saw after waiting for the reader.
    ``seen["torn"]`` says whether it did (else every snapshot was whole: the ledger was correct).
    """
    writers: set[int] = set()
    if seen is not None:
        seen["torn"] = False

    def record(self: Any, data: Any) -> None:
        if revoked is not None and revoked.is_set():
            _revoked()
        writers.add(threading.get_ident())
        probe.progress()
        n = _rows_of(data)
        with self.lock:
            self.requests += 1
            self.rows += n
            self.last_rows = n

    def totals(self: Any) -> tuple[int, int]:
        if revoked is not None and revoked.is_set():
            _revoked()
        held = threading.get_ident() not in writers and probe.hold()
        if held and probe.released_by in ("join", "quiet"):
            with self.lock:
                if self.requests:
                    if seen is not None:
                        seen["torn"] = True
                    return self.requests, self.rows - self.last_rows
        return _costed_totals(self)

    hidden = type("Ledger", (LockedLedger,), {"__doc__": "A ledger (record, totals).",
                                              "record": record, "totals": totals})
    hidden.__qualname__ = "Ledger"

    def make_ledger() -> Any:
        return hidden()

    return make_ledger
