"""The hidden pure-Python ledgers whose races the GIL hides from real threads (exercise 3)."""

from __future__ import annotations

import threading
from typing import Any

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


class PlainRowsFirst(PlainUnlockedReader):
    """Racy (GIL-hidden): the writer locks, the reader does not, and ``record`` counts the
    rows before the request, so a torn snapshot shows rows that no counted request made: a
    check that only looks for requests without their rows never sees it."""

    def record(self, data: Any) -> None:
        with self.lock:
            self.rows += len(data)
            self.requests += 1


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
#: ``PlainTwoLocks``; ``PlainRowsFirst`` tears the other way), lost updates without any torn
#: snapshot (``PlainLostNoTear``) and a deadlock without either (``PlainOrderDeadlock``).
GIL_HIDDEN_RACY: tuple[type, ...] = (PlainLedger, PlainUnlockedReader, PlainLockPerCall,
                                     PlainTwoLocks, PlainLostNoTear, PlainOrderDeadlock,
                                     PlainRowsFirst)
GIL_HIDDEN_CORRECT: tuple[type, ...] = (PlainLocked, PlainTuple, PlainRLock)
