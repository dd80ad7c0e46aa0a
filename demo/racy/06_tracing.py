# Lesson 06 (tracing), a student whose logger loses the failed accesses, whose conflict
# finder only compares neighbours in time, and whose publish lets go of the lock between the
# check and the write (a lost update); the lost-update finder is right.

# %% ex_tracing_log_access
def log_access(log, op, resource, fn, lock=None):
    """Call ``fn()``, append a record of the access to ``log``, return ``fn()``'s value."""
    start = time.perf_counter_ns()
    value = fn()  # no finally: an access that raises leaves no record
    log.append({"thread": threading.current_thread().name, "op": op, "resource": resource,
                "start": start, "end": time.perf_counter_ns(), "lock": lock})
    return value

# %% ex_tracing_who_overwrote
def who_overwrote(log):
    """Return ``[(overwriter, overwritten, resource), ...]``: the lost updates in ``log``."""
    timeline = sorted(log, key=lambda r: r["start"])
    last_read = {}
    answer = set()
    for pos, r in enumerate(timeline):
        key = (r["thread"], r["resource"])
        if r["op"] == "read":
            last_read[key] = pos
        elif key in last_read:
            for other in timeline[last_read[key] + 1:pos]:
                if other["op"] == "write" and other["resource"] == r["resource"] \
                        and other["thread"] != r["thread"]:
                    answer.add((r["thread"], other["thread"], r["resource"]))
    return list(answer)

# %% ex_tracing_find_conflicts
def find_conflicts(log):
    """Return ``[(i, j), ...]`` with ``i < j``: the pairs of conflicting accesses in ``log``."""
    order = sorted(range(len(log)), key=lambda k: log[k]["start"])
    result = []
    for i, j in zip(order, order[1:], strict=False):  # only the next access in time is compared
        a, b = log[i], log[j]
        if a["resource"] == b["resource"] and a["thread"] != b["thread"] \
                and "write" in (a["op"], b["op"]) and b["start"] < a["end"] \
                and not (a["lock"] is not None and a["lock"] == b["lock"]):
            result.append((min(i, j), max(i, j)))
    return result

# %% ex_tracing_lockset_races
def lockset_races(log):
    """Return the resources that two threads touched, one writing, with no common lock."""
    flagged = []
    for name in {r["resource"] for r in log}:
        accesses = [r for r in log if r["resource"] == name]
        if len({r["thread"] for r in accesses}) > 1 and any(r["op"] == "write" for r in accesses) \
                and any(r["lock"] is None for r in accesses):  # any lock at all taken as safe
            flagged.append(name)
    return flagged

# %% ex_tracing_publish_locked
def publish_locked(best, lock, name, score, access, save):
    """Publish ``score`` to ``best`` under ``lock``; save the checkpoint outside the lock."""
    with lock:
        seen = access("read", "best", lambda: best["score"], lock="best_lock")
    if score > seen:  # the lock is released between the check and the write
        with lock:
            access("write", "best", lambda: best.update(score=score, by=name), lock="best_lock")
        save(name)
