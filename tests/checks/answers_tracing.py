"""Answers a student might write for lesson 06 (tracing): wrong ones and correct ones.

``log_access``: the mistakes are a timestamp from the wrong clock (``time.time_ns``), the start
taken after the call, no ``try``/``finally`` (a failed access is not logged), the exception
swallowed, the main thread's name instead of the caller's, and the value not returned.
``who_overwrote``: the first read instead of the most recent one, any other thread's access
counted (reads too), the resource ignored, the tuple the wrong way round, the log taken in
its given (unsorted) order. ``find_conflicts``: touching intervals counted, read-read pairs
counted, locks ignored, any two locks treated as protection, only neighbours in time compared.
``lockset_races``: one thread or reads alone flagged, ``None`` taken for a lock, any lock
taken for protection, the writes looked at alone, overlap asked again, a resource named twice.
"""

from __future__ import annotations

import bisect
import itertools
import threading
import time
from collections import defaultdict
from typing import Any

from tests.checks.liars import lying

# --------------------------------------------------------------------------- log_access


def _record(op: str, resource: str, start: int, end: int, lock: Any,
            thread: str | None = None) -> dict[str, Any]:
    return {"thread": thread or threading.current_thread().name, "op": op, "resource": resource,
            "start": start, "end": end, "lock": lock}


def log_access_wall_clock(log, op, resource, fn, lock=None):
    """``time.time_ns``: another clock than ``perf_counter_ns``; it cannot be compared."""
    start = time.time_ns()
    try:
        return fn()
    finally:
        log.append(_record(op, resource, start, time.time_ns(), lock))


def log_access_start_after_call(log, op, resource, fn, lock=None):
    """Both timestamps after the call: the record does not cover the access."""
    try:
        return fn()
    finally:
        now = time.perf_counter_ns()
        log.append(_record(op, resource, now, now, lock))


def log_access_no_finally(log, op, resource, fn, lock=None):
    """Logs only when ``fn`` returns: the failed write never shows up."""
    start = time.perf_counter_ns()
    value = fn()
    log.append(_record(op, resource, start, time.perf_counter_ns(), lock))
    return value


def log_access_swallows(log, op, resource, fn, lock=None):
    """Logs the failure, then hides it from the caller."""
    start = time.perf_counter_ns()
    value = None
    try:
        value = fn()
    except Exception:  # noqa: BLE001 - the mistake under test
        pass
    log.append(_record(op, resource, start, time.perf_counter_ns(), lock))
    return value


def log_access_main_thread(log, op, resource, fn, lock=None):
    """Names the main thread, not the one making the access."""
    start = time.perf_counter_ns()
    try:
        return fn()
    finally:
        log.append(_record(op, resource, start, time.perf_counter_ns(), lock,
                           thread=threading.main_thread().name))


def log_access_no_return(log, op, resource, fn, lock=None):
    """Forgets to return ``fn``'s value (a read then gives ``None``)."""
    start = time.perf_counter_ns()
    try:
        fn()
    finally:
        log.append(_record(op, resource, start, time.perf_counter_ns(), lock))


def log_access_except_reraise(log, op, resource, fn, lock=None):
    """Correct: ``except BaseException`` logs and re-raises, ``else`` logs the success."""
    name = threading.current_thread().name
    before = time.perf_counter_ns()
    try:
        result = fn()
    except BaseException:
        log.append({"thread": name, "op": op, "resource": resource, "start": before,
                    "end": time.perf_counter_ns(), "lock": lock})
        raise
    log.append({"thread": name, "op": op, "resource": resource, "start": before,
                "end": time.perf_counter_ns(), "lock": lock})
    return result


class _Access:
    """A context manager that writes its record on exit, however the block ends."""

    def __init__(self, log, op, resource, lock):
        self.log, self.op, self.resource, self.lock = log, op, resource, lock

    def __enter__(self):
        self.start = time.perf_counter_ns()
        return self

    def __exit__(self, *exc):
        self.log.append(dict(thread=threading.current_thread().name, op=self.op,
                             resource=self.resource, start=self.start,
                             end=time.perf_counter_ns(), lock=self.lock))
        return False


def log_access_context_manager(log, op, resource, fn, lock=None):
    """Correct: the timing lives in a context manager's ``__enter__``/``__exit__``."""
    with _Access(log, op, resource, lock):
        return fn()


def log_access_except_exception(log, op, resource, fn, lock=None):
    """Wrong: logs in ``except Exception`` and after a success, so an exception that is not an
    ``Exception`` (``KeyboardInterrupt``, a cancellation) leaves no record."""
    start = time.perf_counter_ns()
    try:
        result = fn()
    except Exception:
        log.append(_record(op, resource, start, time.perf_counter_ns(), lock))
        raise
    log.append(_record(op, resource, start, time.perf_counter_ns(), lock))
    return result


def log_access_retries_once(log, op, resource, fn, lock=None):
    """Wrong: a failing ``fn()`` is run a second time, so a write can happen twice under one
    record."""
    start = time.perf_counter_ns()
    try:
        try:
            return fn()
        except OSError:
            return fn()
    finally:
        log.append(_record(op, resource, start, time.perf_counter_ns(), lock))


_LOG_GUARD = threading.RLock()


def log_access_serialised(log, op, resource, fn, lock=None):
    """Wrong: "a thread-safe logger": one lock of its own around the access and its record, so
    the accesses it logs can no longer overlap (it changes the program it observes), and each
    record says lock None although a lock was held."""
    with _LOG_GUARD:
        start = time.perf_counter_ns()
        try:
            return fn()
        finally:
            log.append(_record(op, resource, start, time.perf_counter_ns(), lock))


def log_access_sorted_copy(log, op, resource, fn, lock=None):
    """Wrong: keeps the log sorted by writing back a sorted copy with the record added, so a
    thread that copies the log while another adds its record writes that record away."""
    start = time.perf_counter_ns()
    try:
        return fn()
    finally:
        record = _record(op, resource, start, time.perf_counter_ns(), lock)
        log[:] = sorted(log + [record], key=lambda r: r["start"])


def log_access_rebuilt(log, op, resource, fn, lock=None):
    """Wrong: builds the new log as a copy and swaps its contents in (clear, then extend)."""
    start = time.perf_counter_ns()
    try:
        return fn()
    finally:
        rebuilt = list(log)
        rebuilt.append(_record(op, resource, start, time.perf_counter_ns(), lock))
        log.clear()
        log.extend(rebuilt)


_APPEND_GUARD = threading.Lock()


def log_access_locked_append(log, op, resource, fn, lock=None):
    """Correct: ``fn()`` runs unlocked; only the sorted insert of its record takes a lock of
    the logger's own."""
    start = time.perf_counter_ns()
    try:
        return fn()
    finally:
        record = _record(op, resource, start, time.perf_counter_ns(), lock)
        with _APPEND_GUARD:
            log[:] = sorted(log + [record], key=lambda r: r["start"])


_WRITE_GUARD = threading.Lock()


def log_access_serialising_writes(log, op, resource, fn, lock=None):
    """Wrong (round 8): a lock of its own around ``fn()`` for writes only. The stress trials'
    reads still overlap, but two writers of one resource can no longer race in the log."""
    if op != "write":
        return log_access_except_reraise(log, op, resource, fn, lock)
    with _WRITE_GUARD:
        return log_access_except_reraise(log, op, resource, fn, lock)


def log_access_keeping_the_error(log, op, resource, fn, lock=None):
    """Correct (round 8, graded 0/3 before): also keeps what ``fn`` raised in the record,
    under a key of its own (an exception object, not plain data)."""
    start = time.perf_counter_ns()
    error = None
    try:
        return fn()
    except BaseException as raised:
        error = raised
        raise
    finally:
        record = _record(op, resource, start, time.perf_counter_ns(), lock)
        record["error"] = error
        log.append(record)


_NAMED_LOCKS: dict = {}


def log_access_takes_the_named_lock(log, op, resource, fn, lock=None):
    """Wrong (red team, session 26; it passed): runs ``fn()`` under a lock of its own, one per
    lock name a caller gives: the record's lock claim comes true by itself, so a caller that
    never held the real lock is hidden."""
    if lock is None:
        return log_access_except_reraise(log, op, resource, fn, lock=lock)
    with _NAMED_LOCKS.setdefault(lock, threading.Lock()):
        return log_access_except_reraise(log, op, resource, fn, lock=lock)


WRONG_LOG_ACCESS = [log_access_wall_clock, log_access_start_after_call, log_access_no_finally,
                    log_access_swallows, log_access_main_thread, log_access_no_return,
                    log_access_except_exception, log_access_retries_once,
                    log_access_serialised, log_access_sorted_copy, log_access_rebuilt,
                    log_access_serialising_writes, log_access_takes_the_named_lock]
log_access_serialising_writes.decided_by_construction = True  # fn() calls meet or time out
log_access_takes_the_named_lock.decided_by_construction = True  # alike
CORRECT_LOG_ACCESS = [log_access_except_reraise, log_access_context_manager,
                      log_access_locked_append, log_access_keeping_the_error]


# --------------------------------------------------------------------------- who_overwrote


def _overwrites(log, *, first_read=False, any_op=False, any_resource=False, swap=False,
                sort=True):
    ordered = sorted(log, key=lambda r: r["start"]) if sort else list(log)
    found = set()
    for k, w in enumerate(ordered):
        if w["op"] != "write":
            continue
        reads = [j for j in range(k) if ordered[j]["op"] == "read"
                 and ordered[j]["thread"] == w["thread"]
                 and (any_resource or ordered[j]["resource"] == w["resource"])]
        if not reads:
            continue
        since = reads[0] if first_read else reads[-1]
        for o in ordered[since + 1:k]:
            if o["thread"] == w["thread"] or (not any_op and o["op"] != "write"):
                continue
            if not any_resource and o["resource"] != w["resource"]:
                continue
            pair = (o["thread"], w["thread"]) if swap else (w["thread"], o["thread"])
            found.add((*pair, w["resource"]))
    return list(found)


def who_overwrote_first_read(log):
    """Looks back to the thread's first read of the resource, not its latest one."""
    return _overwrites(log, first_read=True)


def who_overwrote_counts_reads(log):
    """Counts any other thread's access in the window, reads included."""
    return _overwrites(log, any_op=True)


def who_overwrote_ignores_resource(log):
    """Mixes resources: a write to ``step`` 'overwrites' one to ``best``."""
    return _overwrites(log, any_resource=True)


def who_overwrote_swapped(log):
    """Returns ``(overwritten, overwriter)``: the victim first."""
    return _overwrites(log, swap=True)


def who_overwrote_unsorted(log):
    """Walks the log in the order it was appended, not by start time."""
    return _overwrites(log, sort=False)


def who_overwrote_per_resource_timeline(log):
    """Correct: one timeline per resource, remembering each thread's last read position."""
    by_resource = defaultdict(list)
    for r in log:
        by_resource[r["resource"]].append(r)
    result = []
    for resource, records in by_resource.items():
        records = sorted(records, key=lambda r: r["start"])
        last_read = {}
        writes_so_far = []  # (position, thread)
        for pos, r in enumerate(records):
            if r["op"] == "read":
                last_read[r["thread"]] = pos
                continue
            if r["thread"] in last_read:
                for wpos, who in writes_so_far:
                    if wpos > last_read[r["thread"]] and who != r["thread"]:
                        entry = (r["thread"], who, resource)
                        if entry not in result:
                            result.append(entry)
            writes_so_far.append((pos, r["thread"]))
    return result


def who_overwrote_bisect(log):
    """Correct: sorted start times and ``bisect`` to find the writes inside each window."""
    order = sorted(log, key=lambda r: r["start"])
    starts = [r["start"] for r in order]
    out = set()
    for k, w in enumerate(order):
        if w["op"] != "write":
            continue
        mine = [j for j, r in enumerate(order[:k]) if r["op"] == "read"
                and r["thread"] == w["thread"] and r["resource"] == w["resource"]]
        if not mine:
            continue
        lo = bisect.bisect_right(starts, starts[mine[-1]], 0, k)
        lo = max(lo, mine[-1] + 1)
        out.update((w["thread"], o["thread"], w["resource"]) for o in order[lo:k]
                   if o["op"] == "write" and o["resource"] == w["resource"]
                   and o["thread"] != w["thread"])
    return sorted(out)


WRONG_WHO_OVERWROTE = [who_overwrote_first_read, who_overwrote_counts_reads,
                       who_overwrote_ignores_resource, who_overwrote_swapped,
                       who_overwrote_unsorted]
CORRECT_WHO_OVERWROTE = [who_overwrote_per_resource_timeline, who_overwrote_bisect]


# --------------------------------------------------------------------------- find_conflicts


def _conflicts(log, *, touching=False, reads=False, locks=True, any_lock=False):
    out = []
    for i, j in itertools.combinations(range(len(log)), 2):
        a, b = log[i], log[j]
        if a["resource"] != b["resource"] or a["thread"] == b["thread"]:
            continue
        if not reads and a["op"] == "read" and b["op"] == "read":
            continue
        if touching:
            if a["start"] > b["end"] or b["start"] > a["end"]:
                continue
        elif a["start"] >= b["end"] or b["start"] >= a["end"]:
            continue
        if locks:
            if any_lock and a["lock"] is not None and b["lock"] is not None:
                continue
            if a["lock"] is not None and a["lock"] == b["lock"]:
                continue
        out.append((i, j))
    return out


def find_conflicts_touching(log):
    """``<=``: one access ending the nanosecond the other starts is counted."""
    return _conflicts(log, touching=True)


def find_conflicts_read_read(log):
    """Two reads counted as a conflict."""
    return _conflicts(log, reads=True)


def find_conflicts_ignores_locks(log):
    """Overlap alone: accesses under the same lock are reported too."""
    return _conflicts(log, locks=False)


def find_conflicts_any_lock(log):
    """Any lock counts as protection, even two different locks."""
    return _conflicts(log, any_lock=True)


def find_conflicts_neighbours(log):
    """Sorts by start and compares each access only with the next one."""
    order = sorted(range(len(log)), key=lambda k: log[k]["start"])
    out = []
    for i, j in zip(order, order[1:], strict=False):
        a, b = log[i], log[j]
        if (a["resource"] == b["resource"] and a["thread"] != b["thread"]
                and "write" in (a["op"], b["op"]) and b["start"] < a["end"]
                and not (a["lock"] is not None and a["lock"] == b["lock"])):
            out.append((min(i, j), max(i, j)))
    return out


def find_conflicts_sweep(log):
    """Correct: sweep by start time, keeping the accesses still open."""
    order = sorted(range(len(log)), key=lambda k: log[k]["start"])
    open_ = []
    out = []
    for k in order:
        r = log[k]
        open_ = [o for o in open_ if log[o]["end"] > r["start"]]
        for o in open_:
            q = log[o]
            if q["resource"] == r["resource"] and q["thread"] != r["thread"] \
                    and (q["op"] == "write" or r["op"] == "write") \
                    and (q["lock"] is None or q["lock"] != r["lock"]) \
                    and q["start"] < r["end"]:
                out.append((min(o, k), max(o, k)))
        open_.append(k)
    return out


def find_conflicts_grouped(log):
    """Correct: group by resource first, then test each pair with a helper predicate."""
    def overlaps(a, b):
        return max(a["start"], b["start"]) < min(a["end"], b["end"])

    def guarded(a, b):
        return a["lock"] is not None and a["lock"] == b["lock"]

    groups = defaultdict(list)
    for index, record in enumerate(log):
        groups[record["resource"]].append(index)
    pairs = set()
    for indices in groups.values():
        for i, j in itertools.combinations(sorted(indices), 2):
            a, b = log[i], log[j]
            if a["thread"] != b["thread"] and {a["op"], b["op"]} != {"read"} \
                    and overlaps(a, b) and not guarded(a, b):
                pairs.add((i, j))
    return sorted(pairs)


def find_conflicts_both_directions(log):
    """Checks every ordered pair and reports each conflict as it meets it, normalised to
    ``(min, max)``: every pair twice, where the spec says each pair once (issue #18, class 6:
    compared as a set, it passed)."""
    found = set(_conflicts(log))
    return [(min(i, j), max(i, j)) for i in range(len(log)) for j in range(len(log))
            if i != j and (min(i, j), max(i, j)) in found]


def find_conflicts_as_generator(log):
    """Correct, unusual: a generator of lists ``[i, j]`` (not a list of tuples), each once."""
    return ([i, j] for i, j in _conflicts(log))


def find_conflicts_one_starts_inside(log):
    """Wrong (red team, session 26; it passed): two accesses overlap only when one starts
    strictly inside the other, so two that start at the same nanosecond never conflict."""
    def during(t, access):
        return access["start"] < t < access["end"]

    pairs = []
    for i, a in enumerate(log):
        for j in range(i + 1, len(log)):
            b = log[j]
            if a["resource"] != b["resource"] or a["thread"] == b["thread"]:
                continue
            if a["op"] != "write" and b["op"] != "write":
                continue
            if not (during(a["start"], b) or during(b["start"], a)):
                continue
            if a["lock"] is not None and a["lock"] == b["lock"]:
                continue
            pairs.append((i, j))
    return pairs


WRONG_FIND_CONFLICTS = [find_conflicts_touching, find_conflicts_read_read,
                        find_conflicts_ignores_locks, find_conflicts_any_lock,
                        find_conflicts_neighbours, find_conflicts_both_directions,
                        find_conflicts_one_starts_inside]
CORRECT_FIND_CONFLICTS = [find_conflicts_sweep, find_conflicts_grouped,
                          find_conflicts_as_generator]


# --------------------------------------------------------------------------- lockset_races


def _locksets(log, *, threads=True, writes=True, none_is_a_lock=False, any_lock=False,
              writes_only=False):
    by_resource = defaultdict(list)
    for record in log:
        by_resource[record["resource"]].append(record)
    races = []
    for resource, accesses in by_resource.items():
        considered = [r for r in accesses if r["op"] == "write"] if writes_only else accesses
        if not considered:
            continue
        if threads and len({r["thread"] for r in considered}) < 2:
            continue
        if writes and not any(r["op"] == "write" for r in considered):
            continue
        locks = [{r["lock"]} if none_is_a_lock else {r["lock"]} - {None} for r in considered]
        if any_lock:
            safe = all(locks)
        else:
            safe = bool(set.intersection(*locks))
        if not safe:
            races.append(resource)
    return races


def lockset_races_one_thread_too(log):
    """Forgets the two threads: a resource only one thread touches is flagged."""
    return _locksets(log, threads=False)


def lockset_races_reads_too(log):
    """Forgets the write: resources only read, from many threads, are flagged."""
    return _locksets(log, writes=False)


def lockset_races_none_is_a_lock(log):
    """Counts ``None`` as a lock name: accesses under no lock at all share it."""
    return _locksets(log, none_is_a_lock=True)


def lockset_races_any_lock(log):
    """Any lock held counts as protection, even a different lock per thread."""
    return _locksets(log, any_lock=True)


def lockset_races_writes_only(log):
    """Looks at the writes alone: an unlocked read of a guarded resource is not flagged."""
    return _locksets(log, writes_only=True)


def lockset_races_by_overlap(log):
    """Asks the overlap question again: a resource is flagged when two accesses overlapped."""
    return sorted({log[i]["resource"] for i, _ in _conflicts(log)})


def lockset_races_every_access(log):
    """Names the resource once per unguarded access: each resource is reported several times."""
    flagged = set(_locksets(log))
    return [r["resource"] for r in log if r["resource"] in flagged]


def lockset_races_candidate_sets(log):
    """Correct, the Eraser way: refine each resource's candidate set access by access."""
    candidates, threads, written = {}, defaultdict(set), defaultdict(bool)
    for r in log:
        held = set() if r["lock"] is None else {r["lock"]}
        res = r["resource"]
        candidates[res] = held if res not in candidates else candidates[res] & held
        threads[res].add(r["thread"])
        written[res] = written[res] or r["op"] == "write"
    return [res for res in candidates
            if len(threads[res]) > 1 and written[res] and not candidates[res]]


def lockset_races_counted(log):
    """Correct, unusual: counts locks per resource and returns a set."""
    from collections import Counter

    totals, locks, threads, writes = Counter(), defaultdict(Counter), defaultdict(set), set()
    for r in log:
        totals[r["resource"]] += 1
        if r["lock"] is not None:
            locks[r["resource"]][r["lock"]] += 1
        threads[r["resource"]].add(r["thread"])
        if r["op"] == "write":
            writes.add(r["resource"])
    return {res for res, n in totals.items() if len(threads[res]) > 1 and res in writes
            and n not in locks[res].values()}


def lockset_races_pairwise(log):
    """Wrong (round 8, 2/2 before): flags a resource when some pair of accesses by two threads,
    one a write, shares no lock, instead of asking for a lock common to every access."""
    races = []
    for resource in dict.fromkeys(r["resource"] for r in log):
        accesses = [r for r in log if r["resource"] == resource]
        if any(a["thread"] != b["thread"] and "write" in (a["op"], b["op"])
               and not ({a["lock"]} & {b["lock"]}) - {None}
               for a in accesses for b in accesses):
            races.append(resource)
    return races


WRONG_LOCKSET = [lockset_races_one_thread_too, lockset_races_reads_too,
                 lockset_races_none_is_a_lock, lockset_races_any_lock,
                 lockset_races_writes_only, lockset_races_by_overlap,
                 lockset_races_every_access, lockset_races_pairwise]
lockset_races_pairwise.decided_by_construction = True  # small log #6
CORRECT_LOCKSET = [lockset_races_candidate_sets, lockset_races_counted]


# --------------------------------------------------------------------------- publish_locked


def publish_unlocked(best, lock, name, score, access, save):
    """The lesson's racy publish, with the lock name logged but the lock never taken."""
    seen = access("read", "best", lambda: best["score"], lock="best_lock")
    if score > seen:
        access("write", "best", lambda: best.update(score=score, by=name), lock="best_lock")
        save(name)


def publish_split_locks(best, lock, name, score, access, save):
    """Reads under the lock, writes under the lock, but lets go in between: check-then-act."""
    with lock:
        seen = access("read", "best", lambda: best["score"], lock="best_lock")
    if score > seen:
        with lock:
            access("write", "best", lambda: best.update(score=score, by=name), lock="best_lock")
        save(name)


def publish_save_under_lock(best, lock, name, score, access, save):
    """Correct record, but the slow checkpoint write happens while holding the lock."""
    with lock:
        seen = access("read", "best", lambda: best["score"], lock="best_lock")
        if score > seen:
            access("write", "best", lambda: best.update(score=score, by=name), lock="best_lock")
            save(name)


def publish_lock_not_logged(best, lock, name, score, access, save):
    """Right locking, but the log does not say so: the records carry ``lock=None``."""
    with lock:
        seen = access("read", "best", lambda: best["score"])
        better = score > seen
        if better:
            access("write", "best", lambda: best.update(score=score, by=name))
    if better:
        save(name)


def _publish_holding(guard, best, name, score, access, save):
    """The fixed publish, holding ``guard``: whichever lock the answer chose to hold."""
    with guard:
        seen = access("read", "best", lambda: best["score"], lock="best_lock")
        better = score > seen
        if better:
            access("write", "best", lambda: best.update(score=score, by=name), lock="best_lock")
    if better:
        save(name)


def publish_new_lock(best, lock, name, score, access, save):
    """A new lock in every call: nobody ever waits for anybody."""
    _publish_holding(threading.Lock(), best, name, score, access, save)


def publish_acquire_finally(best, lock, name, score, access, save):
    """Correct: ``acquire``/``release`` in ``try``/``finally``, one access doing compare+write."""
    lock.acquire()
    try:
        current = access("read", "best", lambda: best["score"], lock="best_lock")
        won = score > current
        if won:
            access("write", "best", lambda: best.update({"score": score, "by": name}),
                   lock="best_lock")
    finally:
        lock.release()
    if won:
        save(name)


def publish_decide_then_save(best, lock, name, score, access, save):
    """Correct: a helper decides under the lock and returns; saving follows outside."""
    def claim():
        with lock:
            if access("read", "best", lambda: best["score"], lock="best_lock") >= score:
                return False
            access("write", "best", lambda: best.update(score=score, by=name), lock="best_lock")
            return True

    if claim():
        save(name)


def publish_tie_wins(best, lock, name, score, access, save):
    """Locked right, but a score equal to the record counts as beating it (``>=``): the second
    of two trainers with the same score writes and saves again (the boundary mutant)."""
    with lock:
        seen = access("read", "best", lambda: best["score"], lock="best_lock")
        better = score >= seen
        if better:
            access("write", "best", lambda: best.update(score=score, by=name), lock="best_lock")
    if better:
        save(name)


_OWN_LOCK = threading.Lock()


def publish_own_lock(best, lock, name, score, access, save):
    """A module-wide lock of its own instead of the ``lock`` all trainers share, while the log
    says ``best_lock``: any other code that takes ``lock`` to touch the record writes anyway."""
    _publish_holding(_OWN_LOCK, best, name, score, access, save)


def publish_write_not_logged(best, lock, name, score, access, save):
    """Locked right, but the write goes straight to the record, not through ``access``: the
    log shows reads only, and the lost-update analysis cannot see the writes."""
    with lock:
        seen = access("read", "best", lambda: best["score"], lock="best_lock")
        better = score > seen
        if better:
            best.update(score=score, by=name)
    if better:
        save(name)


def publish_saves_if_still_the_record(best, lock, name, score, access, save):
    """Locked right, but decides to save by reading the record again after letting go (an
    unlocked check-then-act): a trainer that beat the record and was overtaken before its
    second look never saves."""
    with lock:
        seen = access("read", "best", lambda: best["score"], lock="best_lock")
        if score > seen:
            access("write", "best", lambda: best.update(score=score, by=name), lock="best_lock")
    if best["by"] == name:
        save(name)


def publish_reads_before_the_lock(best, lock, name, score, access, save):
    """Double-checked: a first read outside the lock (logged as under it), then the locked
    read and write."""
    if access("read", "best", lambda: best["score"], lock="best_lock") >= score:
        return
    _publish_holding(lock, best, name, score, access, save)


def publish_saves_on_a_thread(best, lock, name, score, access, save):
    """Wrong (round 8, 3/3 before): locked right, but the checkpoint is saved on a thread
    that is started and never joined, so publish_locked returns before it is written."""
    with lock:
        seen = access("read", "best", lambda: best["score"], lock="best_lock")
        better = score > seen
        if better:
            access("write", "best", lambda: best.update(score=score, by=name), lock="best_lock")
    if better:
        threading.Thread(target=save, args=(name,)).start()


def publish_timed_acquire_unchecked(best, lock, name, score, access, save):
    """Wrong (red team, session 26; it passed): ``lock.acquire(timeout=1.0)`` whose result is
    never looked at: on a loaded machine the wait gives up and the trainer publishes without
    the lock (and then releases a lock it does not hold)."""
    lock.acquire(timeout=1.0)
    try:
        seen = access("read", "best", lambda: best["score"], lock="best_lock")
        better = score > seen
        if better:
            access("write", "best", lambda: best.update(score=score, by=name), lock="best_lock")
    finally:
        lock.release()
    if better:
        save(name)


def publish_timed_acquire_retried(best, lock, name, score, access, save):
    """Correct: a timed acquire whose result is checked, tried again until it succeeds."""
    while not lock.acquire(timeout=0.5):
        pass
    try:
        seen = access("read", "best", lambda: best["score"], lock="best_lock")
        better = score > seen
        if better:
            access("write", "best", lambda: best.update(score=score, by=name), lock="best_lock")
    finally:
        lock.release()
    if better:
        save(name)


WRONG_PUBLISH = [publish_unlocked, publish_split_locks, publish_save_under_lock,
                 publish_lock_not_logged, publish_new_lock, publish_tie_wins, publish_own_lock,
                 publish_write_not_logged, publish_saves_if_still_the_record,
                 publish_reads_before_the_lock, publish_saves_on_a_thread,
                 publish_timed_acquire_unchecked]
publish_saves_on_a_thread.decided_by_construction = True  # explore: the default schedule
CORRECT_PUBLISH = [publish_acquire_finally, publish_decide_then_save,
                   publish_timed_acquire_retried]


# --------------------------------------------------------------------------- lying answers
# Values that lie in comparisons (issue: a returned value decides how ``==`` treats it). Each
# passed the checks before they read what comes back from student code as plain data.


class _SameInt(int):
    """An int equal to every value (and ordered as wanted by nobody)."""

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = int.__hash__


class _LateInt(int):
    """An int that claims to be at least as late as any moment it is compared with."""

    def __ge__(self, other):
        return True

    def __le__(self, other):
        return False


class _SameStr(str):
    """A str equal to every value."""

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = str.__hash__


class _SameFloat(float):
    """A float equal to every value."""

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = float.__hash__


class _SameDict(dict):
    """A dict equal to every value."""

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = None


class _OnceEach(list):
    """A list whose iteration skips the repeats it holds."""

    def __iter__(self):
        return iter(dict.fromkeys(list.__iter__(self)))


def log_access_lying_return(log, op, resource, fn, lock=None):
    """Liar: forgets fn's value and returns an int that equals every value instead."""
    log_access_no_return(log, op, resource, fn, lock)
    return _SameInt(0)


def log_access_lying_end(log, op, resource, fn, lock=None):
    """Liar: logs before the call (no try/finally) with an ``end`` that claims to be later."""
    start = time.perf_counter_ns()
    log.append(_record(op, resource, start, _LateInt(start), lock))
    return fn()


def log_access_lying_thread(log, op, resource, fn, lock=None):
    """Liar: names the main thread, as a str that equals every thread's name."""
    start = time.perf_counter_ns()
    try:
        return fn()
    finally:
        log.append(_record(op, resource, start, time.perf_counter_ns(), lock,
                           thread=_SameStr(threading.main_thread().name)))


def who_overwrote_sorts_log_lying(log):
    """Liar: sorts the log in place, and hides it behind records that equal every record."""
    log.sort(key=lambda r: r["start"])
    log[:] = [_SameDict(r) for r in log]
    return who_overwrote_per_resource_timeline(log)


def who_overwrote_repeats_hidden(log):
    """Liar: every result twice, in a list whose iteration yields each once."""
    found = who_overwrote_per_resource_timeline(log)
    return _OnceEach(found + found)


def find_conflicts_marks_log_lying(log):
    """Liar: writes an index into every record, and hides it behind records equal to all."""
    for i, r in enumerate(log):
        log[i] = _SameDict(r, index=i)
    return _conflicts(log)


def find_conflicts_repeats_hidden(log):
    """Liar: every pair in both directions' order, in a list whose iteration yields each once."""
    return _OnceEach(find_conflicts_both_directions(log))


def lockset_races_repeats_hidden(log):
    """Liar: every flagged resource once per access, in a list whose iteration yields each
    once."""
    return _OnceEach(lockset_races_every_access(log))


def publish_unlocked_lying_record(best, lock, name, score, access, save):
    """Liar: the racy publish, writing a score and a name that equal every value."""
    seen = access("read", "best", lambda: best["score"], lock="best_lock")
    if score > seen:
        access("write", "best",
               lambda: best.update(score=_SameFloat(score), by=_SameStr(name)),
               lock="best_lock")
        save(name)


def publish_lying_lock_name(best, lock, name, score, access, save):
    """Liar: right locking, logged with lock ``""``, a str that equals ``"best_lock"`` too."""
    wrong = _SameStr("")
    with lock:
        seen = access("read", "best", lambda: best["score"], lock=wrong)
        better = score > seen
        if better:
            access("write", "best", lambda: best.update(score=score, by=name), lock=wrong)
    if better:
        save(name)


def publish_lying_op(best, lock, name, score, access, save):
    """Liar: the read is never logged; one access per trainer, its op a str equal to any op."""
    def compare_and_write():
        better = score > best["score"]
        if better:
            best.update(score=score, by=name)
        return better

    with lock:
        better = access(_SameStr("write"), "best", compare_and_write, lock="best_lock")
    if better:
        save(name)


LYING_LOG_ACCESS = lying(log_access_lying_return, log_access_lying_end, log_access_lying_thread)
LYING_WHO_OVERWROTE = lying(who_overwrote_sorts_log_lying, who_overwrote_repeats_hidden)
LYING_FIND_CONFLICTS = lying(find_conflicts_marks_log_lying, find_conflicts_repeats_hidden)
LYING_LOCKSET = lying(lockset_races_repeats_hidden)
LYING_PUBLISH = lying(publish_unlocked_lying_record, publish_lying_lock_name, publish_lying_op)
WRONG_LOG_ACCESS += LYING_LOG_ACCESS
WRONG_WHO_OVERWROTE += LYING_WHO_OVERWROTE
WRONG_FIND_CONFLICTS += LYING_FIND_CONFLICTS
WRONG_LOCKSET += LYING_LOCKSET
WRONG_PUBLISH += LYING_PUBLISH
