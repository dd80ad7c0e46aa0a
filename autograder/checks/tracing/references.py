"""The lesson's own answers, by the notebook's definitions: what the graders compare with."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

#: The audit event each reference analysis raises first: while graded, only the grader's own
#: code may call one (``autograder.kernel.audit``).
REFERENCE_EVENT = "racelab.reference"


def reference_log_access(log: list[dict[str, Any]], op: str, resource: str,
                         fn: Callable[[], Any], lock: Any = None) -> Any:
    """The lesson's ``log_access`` (the grader logs with this one, not the student's)."""
    start = time.perf_counter_ns()
    try:
        return fn()
    finally:
        log.append({"thread": threading.current_thread().name, "op": op, "resource": resource,
                    "start": start, "end": time.perf_counter_ns(), "lock": lock})


def reference_who_overwrote(log: Sequence[dict[str, Any]]) -> set[tuple[str, str, str]]:
    """The lost updates of a log, by the notebook's definition (ordered by ``start``)."""
    sys.audit(REFERENCE_EVENT, "reference_who_overwrote")
    order = sorted(range(len(log)), key=lambda i: (log[i]["start"], i))
    last_read: dict[tuple[str, str], int] = {}
    found = set()
    position = {index: rank for rank, index in enumerate(order)}
    for index in order:
        r = log[index]
        key = (r["thread"], r["resource"])
        if r["op"] == "read":
            last_read[key] = index
            continue
        if key not in last_read:
            continue
        since = position[last_read[key]]
        for other in order[since + 1:position[index]]:
            o = log[other]
            if o["op"] == "write" and o["resource"] == r["resource"] and o["thread"] != r["thread"]:
                found.add((r["thread"], o["thread"], r["resource"]))
    return found


def reference_find_conflicts(log: Sequence[dict[str, Any]]) -> set[tuple[int, int]]:
    """The conflicting index pairs of a log, by the notebook's definition."""
    sys.audit(REFERENCE_EVENT, "reference_find_conflicts")
    found = set()
    for i in range(len(log)):
        a = log[i]
        for j in range(i + 1, len(log)):
            b = log[j]
            if a["resource"] != b["resource"] or a["thread"] == b["thread"]:
                continue
            if a["op"] != "write" and b["op"] != "write":
                continue
            if not (a["start"] < b["end"] and b["start"] < a["end"]):
                continue
            if a.get("lock") is not None and a.get("lock") == b.get("lock"):
                continue
            found.add((i, j))
    return found


def reference_lockset_races(log: Sequence[dict[str, Any]]) -> set[str]:
    """The resources a lockset check flags, by the notebook's definition.

    A resource is flagged when two different threads accessed it, at least one access was a
    write, and no lock name is common to every access to it (``None`` holds no lock).
    """
    sys.audit(REFERENCE_EVENT, "reference_lockset_races")
    by_resource: dict[str, list[dict[str, Any]]] = {}
    for record in log:
        by_resource.setdefault(record["resource"], []).append(record)
    found = set()
    for resource, accesses in by_resource.items():
        threads = {r["thread"] for r in accesses}
        written = any(r["op"] == "write" for r in accesses)
        common = set.intersection(*({r.get("lock")} - {None} for r in accesses))
        if len(threads) > 1 and written and not common:
            found.add(resource)
    return found
