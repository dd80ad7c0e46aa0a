# Lesson 06 (tracing), a student who answers every exercise correctly, in their own words.

# %% ex_tracing_log_access
def log_access(log, op, resource, fn, lock=None):
    """Call ``fn()``, append a record of the access to ``log``, return ``fn()``'s value."""
    record = {"thread": threading.current_thread().name, "op": op, "resource": resource,
              "lock": lock, "start": time.perf_counter_ns()}
    try:
        result = fn()
    except BaseException:
        record["end"] = time.perf_counter_ns()
        log.append(record)
        raise
    record["end"] = time.perf_counter_ns()
    log.append(record)
    return result

# %% ex_tracing_who_overwrote
def who_overwrote(log):
    """Return ``[(overwriter, overwritten, resource), ...]``: the lost updates in ``log``."""
    timeline = sorted(log, key=lambda r: r["start"])
    last_read = {}  # (thread, resource) -> position of its latest read
    answer = []
    for pos, r in enumerate(timeline):
        key = (r["thread"], r["resource"])
        if r["op"] == "read":
            last_read[key] = pos
        elif key in last_read:
            for other in timeline[last_read[key] + 1:pos]:
                hit = (r["thread"], other["thread"], r["resource"])
                if other["op"] == "write" and other["resource"] == r["resource"] \
                        and other["thread"] != r["thread"] and hit not in answer:
                    answer.append(hit)
    return answer

# %% ex_tracing_find_conflicts
def find_conflicts(log):
    """Return ``[(i, j), ...]`` with ``i < j``: the pairs of conflicting accesses in ``log``."""
    result = []
    for i in range(len(log)):
        for j in range(i + 1, len(log)):
            a, b = log[i], log[j]
            same_lock = a["lock"] is not None and a["lock"] == b["lock"]
            overlap = max(a["start"], b["start"]) < min(a["end"], b["end"])
            if (a["resource"] == b["resource"] and a["thread"] != b["thread"]
                    and (a["op"] == "write" or b["op"] == "write") and overlap and not same_lock):
                result.append((i, j))
    return result

# %% ex_tracing_lockset_races
def lockset_races(log):
    """Return the resources that two threads touched, one writing, with no common lock."""
    candidates, threads, written = {}, {}, set()
    for r in log:
        held = set() if r["lock"] is None else {r["lock"]}
        name = r["resource"]
        candidates[name] = candidates.get(name, held) & held
        threads.setdefault(name, set()).add(r["thread"])
        if r["op"] == "write":
            written.add(name)
    return [name for name in candidates
            if len(threads[name]) > 1 and name in written and not candidates[name]]

# %% ex_tracing_publish_locked
def publish_locked(best, lock, name, score, access, save):
    """Publish ``score`` to ``best`` under ``lock``; save the checkpoint outside the lock."""
    lock.acquire()
    try:
        better = access("read", "best", lambda: best["score"], lock="best_lock") < score
        if better:
            access("write", "best", lambda: best.update({"score": score, "by": name}),
                   lock="best_lock")
    finally:
        lock.release()
    if better:
        save(name)
