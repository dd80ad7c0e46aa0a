"""Graded properties for lesson 06, "tracing": logs and traces that show who touched what, when.

The lesson's log is a list of access records, one dict per access to a shared resource::

    {"thread": "worker-1", "op": "read" | "write", "resource": "best",
     "start": <time.perf_counter_ns()>, "end": <time.perf_counter_ns()>, "lock": None | "name"}

Five exercises, five checks:

- :func:`check_log_access`: the student's ``log_access(log, op, resource, fn, lock=None)``
  runs ``fn`` and appends one record. It runs on real threads under
  :func:`autograder.harness.stress` (workers sleep inside ``fn``, so their accesses overlap);
  every record must name the thread that made the access, bracket the call with
  ``time.perf_counter_ns`` taken before and after it, be written even when ``fn`` raises (the
  exception still reaches the caller), and ``fn``'s value must be returned.
- :func:`check_who_overwrote`: the student's ``who_overwrote(log)`` returns the lost updates
  in a log: ``(overwriter, overwritten, resource)`` for every write by another thread that
  landed between a thread's last read of a resource and its own write. Graded against
  :func:`reference_who_overwrote` on hidden logs this module generates (fixed seeds, racy and
  clean, some with re-reads, several resources and three or four threads).
- :func:`check_find_conflicts`: the student's ``find_conflicts(log)`` returns the index pairs
  ``(i, j)``, ``i < j``, of accesses that overlap in time, touch the same resource from two
  threads, include a write, and are not both under the same lock. Graded the same way against
  :func:`reference_find_conflicts`.
- :func:`check_lockset_races`: the student's ``lockset_races(log)`` returns the resources that
  two threads accessed, one of them writing, with no lock common to every access (the Eraser
  idea). Graded against :func:`reference_lockset_races` on six small logs that each decide one
  part of the definition (none has accesses that overlap in time), then the hidden logs.
- :func:`check_publish_locked`: the student's fixed ``publish_locked(best, lock, name, score,
  access, save)`` runs under the controlled scheduler (:func:`autograder.harness.explore`,
  fixed seed, :data:`SCHEDULES` schedules) with three trainers: the record must end up with
  the best score, every access must be logged with ``lock="best_lock"``, the log must hold no
  conflict, and ``save`` must run (for the winner) with the lock released.

The hidden logs are random (seeded), so no single example output is graded; reading this
module does not give the answers away beyond the definitions the notebook states.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from autograder.checks.plain import NotPlainData, plain
from autograder.checks.report import call_text, require_ok
from autograder.harness import stress
from autograder.harness.tamper import opaque

SEED = 6
#: Real-thread trials for :func:`check_log_access` (each worker sleeps about 12 ms per trial).
STRESS_TRIALS = 6
#: Hidden logs per analysis check: half from racy runs, half from clean (locked) ones.
HIDDEN_LOGS = 40


# --------------------------------------------------------------------------- plumbing


def plot_timeline(log: Sequence[dict[str, Any]], *, title: str = "", highlight: Sequence[
        tuple[int, int]] = ()) -> Any:
    """Draw a log as a timeline: one lane per thread, one bar per access (reads light).

    Args:
        log: Access records (see the module docstring).
        title: The figure's title.
        highlight: Index pairs to outline in red (conflicts).

    Returns:
        The matplotlib Figure.
    """
    import matplotlib.pyplot as plt

    threads = sorted({r["thread"] for r in log})
    lane = {name: i for i, name in enumerate(threads)}
    t0 = min(r["start"] for r in log) if log else 0
    marked = {i for pair in highlight for i in pair}
    fig, ax = plt.subplots(figsize=(9, 0.7 + 0.6 * len(threads)))
    for i, r in enumerate(log):
        start_ms = (r["start"] - t0) / 1e6
        width_ms = max((r["end"] - r["start"]) / 1e6, 0.02)
        color = "tab:red" if r["op"] == "write" else "tab:blue"
        ax.barh(lane[r["thread"]], width_ms, left=start_ms, height=0.5, color=color,
                alpha=0.85 if r["op"] == "write" else 0.45,
                edgecolor="black" if i in marked else "none", linewidth=2 if i in marked else 0)
        label = f"{r['op'][0].upper()} {r['resource']}"
        if r.get("value") is not None:
            label += f"={r['value']}"
        ax.text(start_ms, lane[r["thread"]] + 0.33, label, fontsize=7)
    ax.set_yticks(range(len(threads)), threads)
    ax.set_xlabel("ms since the first access (time.perf_counter_ns)")
    ax.set_title(title or "accesses per thread (red: write, blue: read)")
    ax.invert_yaxis()
    fig.tight_layout()
    return fig


def read_xplane_threads(logdir: str) -> dict[str, list[tuple[str, float, float]]]:
    """Read the newest ``*.xplane.pb`` under ``logdir`` and return the host's events per thread.

    Uses the XSpace protobuf that TensorFlow ships (``tensorflow.tsl.profiler.protobuf``).

    Returns:
        ``{line name and id: [(event name, start_ms, end_ms), ...]}`` for the ``/host:CPU``
        plane, times relative to the earliest event.
    """
    import glob
    import os

    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    paths = sorted(glob.glob(os.path.join(logdir, "plugins", "profile", "*", "*.xplane.pb")))
    if not paths:
        raise FileNotFoundError(f"no *.xplane.pb under {logdir}/plugins/profile")
    space = xplane_pb2.XSpace()
    with open(paths[-1], "rb") as handle:
        space.ParseFromString(handle.read())
    lines: dict[str, list[tuple[str, float, float]]] = {}
    for plane in space.planes:
        if plane.name != "/host:CPU":
            continue
        names = {key: meta.name for key, meta in plane.event_metadata.items()}
        for line in plane.lines:
            key = f"{line.name} #{line.id % 10000:04d}"
            events = []
            for event in line.events:
                start_ns = line.timestamp_ns + event.offset_ps / 1000
                events.append((names.get(event.metadata_id, "?"), start_ns,
                               start_ns + event.duration_ps / 1000))
            lines[key] = events
    t0 = min((e[1] for events in lines.values() for e in events), default=0)
    return {key: [(n, (s - t0) / 1e6, (e - t0) / 1e6) for n, s, e in events]
            for key, events in lines.items()}


def overlap_ms(a: Sequence[tuple[str, float, float]],
               b: Sequence[tuple[str, float, float]]) -> float:
    """Total time (ms) during which an event of ``a`` and an event of ``b`` both ran."""
    total = 0.0
    for _, s1, e1 in a:
        for _, s2, e2 in b:
            total += max(0.0, min(e1, e2) - max(s1, s2))
    return total


# --------------------------------------------------------------------------- references


def reference_who_overwrote(log: Sequence[dict[str, Any]]) -> set[tuple[str, str, str]]:
    """The lost updates of a log, by the notebook's definition (ordered by ``start``)."""
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


# --------------------------------------------------------------------------- hidden logs


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
    ]
    return [(f"small log #{k}", log) for k, log in enumerate(edge)]


def _copy(log: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [dict(r) for r in log]


def _describe_record(log: Sequence[dict[str, Any]], i: int) -> str:
    r = log[i]
    lock = f", lock {r['lock']}" if r.get("lock") else ", no lock"
    return (f"[{i}] {r['thread']} {r['op']}s {r['resource']} "
            f"from {r['start']} to {r['end']} ns{lock}")


# --------------------------------------------------------------------------- exercise 1


def run_log_access(log_access: Callable[..., Any], *, trials: int = STRESS_TRIALS,
                   seed: int = SEED) -> Any:
    """Three real threads call ``log_access`` twice each (a read and a write that raises).

    ``fn`` sleeps (releasing the GIL) so the accesses overlap; it notes its own thread name and
    a ``perf_counter_ns`` taken inside the call, which every record must match and bracket.
    """

    def setup() -> dict[str, Any]:
        return {"log": [], "inside": {}, "returned": {}, "raised": {}}

    def make_worker(k: int) -> Callable[[dict[str, Any]], None]:
        def worker(state: dict[str, Any]) -> None:
            def read() -> int:
                time.sleep(0.006)
                state["inside"][("read", k)] = (threading.current_thread().name,
                                                time.perf_counter_ns())
                time.sleep(0.006)
                return 100 + k

            def write() -> None:
                time.sleep(0.002)
                state["inside"][("write", k)] = (threading.current_thread().name,
                                                 time.perf_counter_ns())
                raise OSError(f"disk full for worker {k}")

            state["returned"][k] = log_access(state["log"], "read", f"res{k % 2}", read)
            try:
                log_access(state["log"], "write", f"res{k % 2}", write, lock=None)
            except OSError as error:
                state["raised"][k] = str(error)

        worker.__name__ = f"worker_{k}"
        return worker

    def check(state: dict[str, Any]) -> None:
        # What log_access returned and appended, as plain data (its own == never decides).
        log = plain(state["log"], "reading the records log_access appended")
        for k in range(3):
            returned = plain(state["returned"].get(k), f"log_access(log, 'read', 'res{k % 2}', fn)")
            assert returned == 100 + k, (
                f"expected log_access to return fn's value {100 + k}, got {returned!r}")
            assert k in state["raised"], (
                "expected the OSError raised by fn to reach the caller of log_access, "
                "but it was swallowed")
        assert isinstance(log, list) and len(log) == 6, (
            f"expected 6 records (3 threads x a read and a failing write), got "
            f"{len(log) if isinstance(log, list) else type(log).__name__}: the write whose fn "
            "raised must be logged too (use try/finally)")
        names = sorted({str(r.get("thread")) for r in log if isinstance(r, dict)})
        for (op, k), (name, inside_ns) in state["inside"].items():
            matches = [r for r in log if isinstance(r, dict) and r.get("op") == op
                       and r.get("resource") == f"res{k % 2}" and r.get("thread") == name]
            assert matches, (
                f"expected a record with thread {name!r}, op {op!r}, resource 'res{k % 2}' "
                f"(the thread that ran fn), got threads {names}")
            ok = [r for r in matches if isinstance(r.get("start"), int) and isinstance(
                r.get("end"), int) and r["start"] <= inside_ns <= r["end"]]
            assert ok, (
                f"expected start <= {inside_ns} <= end (time.perf_counter_ns() inside fn) for "
                f"{name}'s {op}, got start={matches[0].get('start')!r}, "
                f"end={matches[0].get('end')!r}: take perf_counter_ns before and after the call")
            assert all(r.get("lock") is None for r in ok), "expected lock None when none is held"

    workers = [make_worker(k) for k in range(3)]
    return stress(setup, workers, check, trials=trials, seed=seed)


def check_log_access(log_access: Callable[..., Any]) -> None:
    """Graded: every record names its thread, brackets the call, survives an exception."""
    _smoke_log_access(log_access)
    result = run_log_access(log_access)
    require_ok(result, exercise="log_access",
               again=call_text("tracing.run_log_access", "log_access"))


def _smoke_log_access(log_access: Callable[..., Any]) -> None:
    log: list[dict[str, Any]] = []
    lock = "best_lock"
    try:
        value = log_access(log, "write", "best", lambda: 7, lock=lock)
    except Exception as error:  # noqa: BLE001 - reported to the student
        raise AssertionError(f"log_access: calling it with lock=... raised "
                             f"{type(error).__name__}: {error}") from None
    value = plain(value, "log_access: log_access(log, 'write', 'best', fn, lock='best_lock')")
    assert value == 7, f"log_access: expected it to return fn's value 7, got {value!r}"
    assert len(log) == 1, f"log_access: expected one record appended, got {len(log)}"
    record = plain(log[0], "log_access: reading the record it appended")
    assert isinstance(record, dict), f"log_access: expected a dict record, got {record!r}"
    missing = {"thread", "op", "resource", "start", "end", "lock"} - set(record)
    assert not missing, f"log_access: expected keys {sorted(missing)} in the record, got {record}"
    assert record["lock"] == lock, (
        f"log_access: expected the record's lock to be the name passed in, {lock!r}, got "
        f"{record['lock']!r}")
    assert record["op"] == "write" and record["resource"] == "best", (
        f"log_access: expected op 'write' and resource 'best' in the record, got {record}")


# --------------------------------------------------------------------------- exercises 2 to 4


def _grade_on_hidden_logs(answer: Callable[[list[dict[str, Any]]], Any], *, exercise: str,
                          reference: Callable[[Sequence[dict[str, Any]]], set[Any]],
                          normalise: Callable[[Any], set[Any]], explain: Callable[
                              [list[dict[str, Any]], Any], str],
                          logs: list[tuple[str, list[dict[str, Any]]]] | None = None) -> None:
    for name, log in _hidden_logs() if logs is None else logs:
        given = _copy(log)
        try:
            got = answer(given)
        except Exception as error:  # noqa: BLE001 - reported to the student
            raise AssertionError(f"{exercise}: on the {name} ({len(log)} records) it raised "
                                 f"{type(error).__name__}: {error}") from None
        try:
            unchanged = plain(given, exercise) == log
        except NotPlainData:  # something that is no plain record was put in the log
            unchanged = False
        assert unchanged, f"{exercise}: expected the log to be left unchanged, it was modified"
        try:
            # The results as plain data: their own ==, hash and iteration never decide.
            items = plain(_listed(got), f"{exercise}: on the {name}, {exercise}(log)")
            seen = normalise(items)
        except (TypeError, ValueError) as error:
            raise AssertionError(f"{exercise}: expected a list of tuples, got {got!r} "
                                 f"({error})") from None
        expected = reference(log)
        if len(items) != len(seen):
            # The spec says each result once: compared as a list, not only as a set
            # (issue #18, class 6).
            repeated = next(item for item in items if items.count(item) > 1)
            shown = tuple(repeated) if isinstance(repeated, list) else repeated
            raise AssertionError(
                f"{exercise}: on the {name} ({len(log)} records) expected each result once, "
                f"but the {len(items)} results hold only {len(seen)} different ones "
                f"({shown!r} more than once)")
        if seen != expected:
            extra = sorted(seen - expected)
            missed = sorted(expected - seen)
            lines = [f"{exercise}: on the {name} ({len(log)} records) expected "
                     f"{len(expected)} result(s), got {len(seen)}."]
            if missed:
                lines.append(f"  missed: {missed[0]!r}" + explain(log, missed[0]))
            if extra:
                lines.append(f"  wrongly reported: {extra[0]!r}" + explain(log, extra[0]))
            raise AssertionError("\n".join(lines))


def _listed(got: Any) -> list[Any]:
    """The items of what ``who_overwrote``/``find_conflicts`` returned, in a list. A list,
    tuple, set or dict (or a subclass) is read through the built-in type's own iteration;
    anything else (a generator) is iterated once."""
    for base in (list, tuple, set, frozenset, dict):
        if issubclass(type(got), base):
            return list(base.__iter__(got))
    return list(got)


def _norm_overwrites(got: Any) -> set[tuple[str, str, str]]:
    items = list(got)
    seen = set()
    for item in items:
        a, b, c = item
        seen.add((a, b, c))
    return seen


def _explain_overwrite(log: list[dict[str, Any]], item: Any) -> str:
    try:
        over, lost, res = item
    except (TypeError, ValueError):
        return ""
    rows = sorted((r["start"], r["thread"], r["op"]) for r in log
                  if r["resource"] == res and r["thread"] in (over, lost))
    return "\n    accesses to " + repr(res) + " by these threads, by start: " + ", ".join(
        f"{t} {op}@{s}" for s, t, op in rows)


def check_who_overwrote(who_overwrote: Callable[[list[dict[str, Any]]], Any]) -> None:
    """Graded on 40 hidden seeded logs (20 racy, 20 clean) against the notebook's definition."""
    _grade_on_hidden_logs(who_overwrote, exercise="who_overwrote",
                          reference=reference_who_overwrote, normalise=_norm_overwrites,
                          explain=_explain_overwrite)


def _norm_pairs(got: Any) -> set[tuple[int, int]]:
    seen = set()
    for item in list(got):
        i, j = item
        if isinstance(i, bool) or isinstance(j, bool) or not isinstance(i, int) \
                or not isinstance(j, int):
            raise TypeError(f"expected index pairs of ints, got {item!r}")
        seen.add((i, j))
    return seen


def _explain_pair(log: list[dict[str, Any]], item: Any) -> str:
    try:
        i, j = item
        return "\n    " + _describe_record(log, i) + "\n    " + _describe_record(log, j)
    except (TypeError, ValueError, IndexError, KeyError):
        return ""


def check_find_conflicts(find_conflicts: Callable[[list[dict[str, Any]]], Any]) -> None:
    """Graded on 40 hidden seeded logs (20 racy, 20 clean) against the notebook's definition."""
    _grade_on_hidden_logs(find_conflicts, exercise="find_conflicts",
                          reference=reference_find_conflicts, normalise=_norm_pairs,
                          explain=_explain_pair)


def _norm_resources(got: Any) -> set[str]:
    seen = set()
    for item in list(got):
        if not isinstance(item, str):
            raise TypeError(f"expected resource names (str), got {item!r}")
        seen.add(item)
    return seen


def _explain_resource(log: list[dict[str, Any]], item: Any) -> str:
    rows = sorted((r["start"], r["thread"], r["op"], r.get("lock")) for r in log
                  if r["resource"] == item)
    return "\n    its accesses, by start: " + ", ".join(
        f"{t} {op} ({f'lock {lock}' if lock else 'no lock'})" for _, t, op, lock in rows)


def check_lockset_races(lockset_races: Callable[[list[dict[str, Any]]], Any]) -> None:
    """Graded on 6 small logs (one part of the definition each) and the 40 hidden logs."""
    _grade_on_hidden_logs(lockset_races, exercise="lockset_races",
                          reference=reference_lockset_races, normalise=_norm_resources,
                          explain=_explain_resource,
                          logs=_lockset_edge_logs() + _hidden_logs())


# --------------------------------------------------------------------------- exercise 5

#: Schedules per run of :func:`check_publish_locked` (controlled scheduler, fixed seed). Search
#: bound: every schedule with at most one preemption or other departure from round-robin order
#: (142 for the solution), in an order no seed changes, then SAMPLES seeded samples; SCHEDULES
#: only caps an unusually long answer (past it the verdict is a fixed, seed-free sample).
SCHEDULES = 1000
SAMPLES = 30
PUBLISH_SCORES = {"trainer-0": 0.71, "trainer-1": 0.93, "trainer-2": 0.85}


def reference_log_access(log: list[dict[str, Any]], op: str, resource: str,
                         fn: Callable[[], Any], lock: Any = None) -> Any:
    """The lesson's ``log_access`` (the grader logs with this one, not the student's)."""
    start = time.perf_counter_ns()
    try:
        return fn()
    finally:
        log.append({"thread": threading.current_thread().name, "op": op, "resource": resource,
                    "start": start, "end": time.perf_counter_ns(), "lock": lock})


class OwnedLock:
    """A ``threading.Lock`` that also knows which thread holds it (for the ``save`` check)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.owner: int | None = None

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        got = self._lock.acquire(blocking, timeout)
        if got:
            self.owner = threading.get_ident()
        return got

    def release(self) -> None:
        self.owner = None
        self._lock.release()

    def locked(self) -> bool:
        return self._lock.locked()

    def held_by_me(self) -> bool:
        return self.owner == threading.get_ident()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.release()


def run_publish_locked(publish_locked: Callable[..., Any], *, seed: int = SEED,
                       schedules: int = SCHEDULES) -> Any:
    """Three trainers publish under the controlled scheduler; see :func:`check_publish_locked`."""
    import functools

    from autograder.harness import explore

    def setup() -> dict[str, Any]:
        return {"best": {"score": float("-inf"), "by": None}, "lock": OwnedLock(),
                "log": [], "saves": []}

    def make_worker(name: str) -> Callable[[dict[str, Any]], None]:
        def worker(state: dict[str, Any]) -> None:
            def save(who: str) -> None:
                state["saves"].append((who, state["lock"].held_by_me()))

            # Opaque: the answer cannot reach the log or the saves through them.
            publish_locked(state["best"], state["lock"], name, PUBLISH_SCORES[name],
                           opaque(functools.partial(reference_log_access, state["log"])),
                           opaque(save))

        worker.__name__ = f"publish_{name.replace('-', '_')}"
        return worker

    def check(state: dict[str, Any]) -> None:
        # What publish_locked wrote, logged (op, resource, lock) and saved, as plain data.
        best = plain(state["best"], "reading the record publish_locked updated")
        log = plain(state["log"], "reading the accesses publish_locked logged")
        saves = plain(state["saves"], "reading the names publish_locked saved")
        top = max(PUBLISH_SCORES, key=PUBLISH_SCORES.get)
        assert best.get("by") == top and best.get("score") == PUBLISH_SCORES[top], (
            f"expected the record to hold {top}'s {PUBLISH_SCORES[top]}, got {best}: an update "
            "was lost (read, compare and write must happen under the lock together)")
        ops = sorted({(r["thread"], r["op"]) for r in log})
        assert sum(op == "read" for _, op in ops) == len(PUBLISH_SCORES), (
            f"expected every trainer's read of the record to be logged through access, "
            f"got {ops}")
        unnamed = [r for r in log if r.get("lock") != "best_lock"]
        assert not unnamed, (
            f"expected every access to be logged with lock='best_lock' (the lock it holds), "
            f"got a {unnamed[0]['op']} logged with lock={unnamed[0].get('lock')!r}")
        conflicts = reference_find_conflicts(log)
        assert not conflicts, (
            f"expected no conflicting accesses in the log, got {len(conflicts)}")
        locked_saves = [who for who, held in saves if held]
        assert not locked_saves, (
            f"expected save() to run with the lock released (the checkpoint write is slow I/O), "
            f"but {locked_saves[0]} saved while holding it")
        assert any(who == top for who, _ in saves), (
            f"expected {top}, whose score beat the record, to save its checkpoint; saves: "
            f"{[who for who, _ in saves]}")

    workers = [make_worker(name) for name in PUBLISH_SCORES]
    return explore(setup, workers, check, seed=seed, max_schedules=schedules, timeout_s=60.0,
                   samples=SAMPLES)


def check_publish_locked(publish_locked: Callable[..., Any], **kwargs: Any) -> None:
    """Graded with the controlled scheduler: the best score survives, the log proves it."""
    result = run_publish_locked(publish_locked, **kwargs)
    require_ok(result, exercise="publish_locked",
               again=call_text("tracing.run_publish_locked", "publish_locked", **kwargs))
