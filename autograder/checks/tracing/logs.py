"""The logs exercises 2 to 4 are graded on: seeded hidden logs and small lockset logs."""

from __future__ import annotations

import random
from typing import Any

from autograder.checks.tracing.settings import HIDDEN_LOGS, SEED


def hidden_log(seed: int, *, racy: bool) -> list[dict[str, Any]]:
    """A seeded log of 3-4 threads doing read-then-write updates on 2-3 resources.

    Racy logs interleave freely and take locks only sometimes (and sometimes different locks);
    clean logs serialise every update of a resource under its own lock. Some threads re-read
    before writing, some only read, some writes touch back to back (``end == start``).
    """
    rng = random.Random(seed * 7919 + (1 if racy else 0))
    threads = [f"worker-{i}" for i in range(rng.choice([3, 4]))]
    resources = ["best", "step", "path"][:rng.choice([2, 3])]
    log: list[dict[str, Any]] = []
    clock = 1_000_000
    busy_until = {res: 0 for res in resources}
    for _ in range(rng.randint(8, 14)):
        thread = rng.choice(threads)
        res = rng.choice(resources)
        lock = f"{res}_lock" if not racy or rng.random() < 0.35 else None
        if racy and lock is None and rng.random() < 0.2:
            lock = "other_lock"
        start = clock + rng.randint(0, 4000)
        if racy and log and rng.random() < 0.25:
            start = rng.choice(log)["end"]  # starts the very nanosecond another access ended
        if not racy:
            start = max(start, busy_until[res])
        reads = 1 + (rng.random() < 0.25)
        t = start
        for _ in range(reads):
            d = rng.randint(500, 3000)
            log.append({"thread": thread, "op": "read", "resource": res, "start": t,
                        "end": t + d, "lock": lock})
            t += d + rng.choice([0, 0, rng.randint(1, 2000)])
        if rng.random() < 0.85:
            d = rng.randint(500, 3000)
            log.append({"thread": thread, "op": "write", "resource": res, "start": t,
                        "end": t + d, "lock": lock})
            t += d
        if not racy:
            busy_until[res] = t
            clock = start + rng.randint(0, 1500)
        else:
            clock += rng.randint(0, 2500)
    seen: set[int] = set()
    for record in sorted(log, key=lambda r: r["start"]):  # distinct starts: one order by start
        while record["start"] in seen:
            record["start"] += 1
            record["end"] += 1
        seen.add(record["start"])
    rng.shuffle(log)  # a log merged from several threads' buffers is not in time order
    return log


def _hidden_logs() -> list[tuple[str, list[dict[str, Any]]]]:
    logs = []
    for k in range(HIDDEN_LOGS):
        racy = k % 2 == 0
        logs.append((f"{'racy' if racy else 'clean'} log #{k // 2}", hidden_log(SEED * 100 + k,
                                                                                  racy=racy)))
    return logs


def _access(thread: str, op: str, resource: str, start: int, lock: str | None = None
            ) -> dict[str, Any]:
    return {"thread": thread, "op": op, "resource": resource, "start": start,
            "end": start + 900, "lock": lock}


def _lockset_edge_logs() -> list[tuple[str, list[dict[str, Any]]]]:
    """Small logs, each deciding one part of the lockset definition the random logs may not.

    None of them has two accesses that overlap in time: a lockset check must not need them.
    """
    a, b, c = "worker-0", "worker-1", "worker-2"
    edge = [
        # one thread reads and writes with no lock: nobody to race with
        [_access(a, "read", "best", 0), _access(a, "write", "best", 1000),
         _access(b, "read", "step", 2000, "step_lock"), _access(b, "write", "step", 3000,
                                                                  "step_lock")],
        # three threads only read, with no lock: reads do not race with reads
        [_access(a, "read", "best", 0), _access(b, "read", "best", 1000),
         _access(c, "read", "best", 2000)],
        # two threads, each always under a lock, but not the same one
        [_access(a, "read", "best", 0, "lock_a"), _access(a, "write", "best", 1000, "lock_a"),
         _access(b, "read", "best", 2000, "lock_b"), _access(b, "write", "best", 3000,
                                                                  "lock_b")],
        # every write under best_lock, one read by a third thread under no lock
        [_access(a, "write", "best", 0, "best_lock"), _access(b, "write", "best", 1000,
                                                                  "best_lock"),
         _access(c, "read", "best", 2000)],
        # a lost update spread out in time, no lock at all
        [_access(a, "read", "best", 0), _access(b, "read", "best", 1000),
         _access(a, "write", "best", 2000), _access(b, "write", "best", 3000)],
        # one resource guarded by its lock, another not
        [_access(a, "write", "best", 0, "best_lock"), _access(b, "write", "best", 1000,
                                                                  "best_lock"),
         _access(a, "write", "step", 2000), _access(b, "read", "step", 3000)],
        # the write and the other thread's read under best_lock, but the writer's first read
        # under no lock: no lock is common to every access (a pair-by-pair check misses it)
        [_access(a, "read", "best", 0), _access(a, "write", "best", 1000, "best_lock"),
         _access(b, "read", "best", 2000, "best_lock")],
    ]
    return [(f"small log #{k}", log) for k, log in enumerate(edge)]


def _span(thread: str, op: str, resource: str, start: int, end: int,
          lock: str | None = None) -> dict[str, Any]:
    return {"thread": thread, "op": op, "resource": resource, "start": start, "end": end,
            "lock": lock}


def _conflict_edge_logs() -> list[tuple[str, list[dict[str, Any]]]]:
    """Small logs, each deciding one part of the conflict definition the random logs may not:
    those give every access its own start, and list them by start."""
    a, b = "worker-0", "worker-1"
    edge = [
        # two writes that start at the same nanosecond: they overlap
        [_span(a, "write", "best", 0, 900), _span(b, "write", "best", 0, 500)],
        # a read and a write with the same start and the same end
        [_span(a, "read", "best", 100, 900), _span(b, "write", "best", 100, 900)],
        # a write inside a longer read, the later start listed first
        [_span(b, "write", "best", 500, 700), _span(a, "read", "best", 0, 2000)],
        # the same start under the same lock, and the same start on one thread: no conflict
        [_span(a, "write", "best", 0, 900, "best_lock"),
         _span(b, "write", "best", 0, 900, "best_lock"),
         _span(a, "write", "step", 1000, 1900), _span(a, "read", "step", 1000, 1500)],
        # back to back from the same start: one ends as the other starts, then a same-start pair
        [_span(a, "write", "best", 0, 900), _span(b, "write", "best", 900, 1800),
         _span(a, "read", "best", 900, 1000)],
    ]
    return [(f"small log #{k}", log) for k, log in enumerate(edge)]
