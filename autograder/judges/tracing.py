"""Lesson 06's judge: log_access's records in every stress trial, the three analyses' results
on every graded log (recomputed here by the notebook's definitions), and publish_locked's
record, log and saves in every explored schedule, from what ran."""

from __future__ import annotations

import hashlib
import json

from autograder.judges import Malformed, expect, explored, field, items

# The check's settings (``autograder.checks.tracing.settings``; a test ties them).
#: Exercise 1: stress trials; the workers of a trial (each makes a read that returns
#: ``100 + k`` and a write whose ``fn`` raises, on resource ``res{k % 2}``); the one-call
#: smoke test's value and record.
STRESS_TRIALS = 6
LOG_WORKERS = 3
#: Exercise 1 explored: threads that each log one read, the most schedules and the seeded
#: samples after the search's bound.
LOG_EXPLORE_THREADS = 2
LOG_SCHEDULES = 80
LOG_SAMPLES = 20
READ_VALUE = 100
SMOKE_VALUE = 7
SMOKE_RECORD = ["write", "best", "best_lock"]
#: The cases of two threads that log one resource's access at once, whose fn() must meet.
TOGETHER_CASES = ("read", "write", "write naming one lock")
RECORD_KEYS = ["end", "lock", "op", "resource", "start", "thread"]
#: Exercises 2 to 4: the hidden logs (every analysis), the small lockset logs (graded first by
#: ``check_lockset_races``), the small conflict logs (graded first by ``check_find_conflicts``)
#: and the SHA-256 of each set's records as the judge reads them (:func:`fingerprint`): the
#: logs graded are the grader's, unchanged.
HIDDEN_LOGS = 40
EDGE_LOGS = 7
CONFLICT_EDGE_LOGS = 5
HIDDEN_LOGS_SHA256 = "14161c0b8bda29f166d5c846f4d2387052c1546be9cfca78d45a4bddedb11b91"
EDGE_LOGS_SHA256 = "f4f4a88d0a336339c456d2acbb6259efa8afd4b58aa7c6944cd80d73800367a6"
CONFLICT_EDGE_LOGS_SHA256 = "bb3d0dff92f603fbb36aefa00f10de620449e8d2b4069a2965e87529bdd2f032"
#: Exercise 5: the most schedules the graded exploration runs, the seeded samples after its
#: bound, the trainers' scores and the lock name every access must be logged with.
SCHEDULES = 1000
SAMPLES = 30
PUBLISH_SCORES = {"trainer-0": 0.71, "trainer-1": 0.93, "trainer-2": 0.71}
LOCK_NAME = "best_lock"

_NONE = type(None)
_SCALAR = (str, int, float, bool, _NONE)
#: A record as the check reports it: ``[thread, op, resource, start, end, lock]``.
_THREAD, _OP, _RESOURCE, _START, _END, _LOCK = range(6)


# --------------------------------------------------------------------------- records


def _record(value: object, what: str) -> list:
    """A reported record: six scalars, its times exact ints."""
    record = items({what: value}, what, _SCALAR, at_least=6, at_most=6)
    for index in (_START, _END):
        if type(record[index]) is not int:
            raise Malformed(f"{what} has a time that is not an int")
    return record


def _log(seen: dict, key: str, what: str) -> list[list]:
    """``seen[key]``: a log, a list of records."""
    records = items(seen, key, list, at_least=0, at_most=1000)
    return [_record(record, f"a record of {what}") for record in records]


def fingerprint(logs: list[list[list]]) -> str:
    """The SHA-256 of logs (each a list of ``[thread, op, resource, start, end, lock]``)."""
    text = json.dumps(logs, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


# --------------------------------------------------------------------------- the definitions


def who_overwrote(log: list[list]) -> set[tuple]:
    """The lost updates of a log, by the notebook's definition (ordered by ``start``)."""
    order = sorted(range(len(log)), key=lambda i: (log[i][_START], i))
    position = {index: rank for rank, index in enumerate(order)}
    last_read: dict[tuple, int] = {}
    found = set()
    for index in order:
        r = log[index]
        key = (r[_THREAD], r[_RESOURCE])
        if r[_OP] == "read":
            last_read[key] = index
            continue
        if key not in last_read:
            continue
        for other in order[position[last_read[key]] + 1:position[index]]:
            o = log[other]
            if o[_OP] == "write" and o[_RESOURCE] == r[_RESOURCE] and o[_THREAD] != r[_THREAD]:
                found.add((r[_THREAD], o[_THREAD], r[_RESOURCE]))
    return found


def find_conflicts(log: list[list]) -> set[tuple[int, int]]:
    """The conflicting index pairs of a log, by the notebook's definition."""
    found = set()
    for i, a in enumerate(log):
        for j in range(i + 1, len(log)):
            b = log[j]
            if a[_RESOURCE] != b[_RESOURCE] or a[_THREAD] == b[_THREAD]:
                continue
            if a[_OP] != "write" and b[_OP] != "write":
                continue
            if not (a[_START] < b[_END] and b[_START] < a[_END]):
                continue
            if a[_LOCK] is not None and a[_LOCK] == b[_LOCK]:
                continue
            found.add((i, j))
    return found


def lockset_races(log: list[list]) -> set:
    """The resources two threads accessed, one writing, with no lock common to every access."""
    by_resource: dict = {}
    for record in log:
        by_resource.setdefault(record[_RESOURCE], []).append(record)
    found = set()
    for resource, accesses in by_resource.items():
        threads = {r[_THREAD] for r in accesses}
        written = any(r[_OP] == "write" for r in accesses)
        common = set.intersection(*({r[_LOCK]} - {None} for r in accesses))
        if len(threads) > 1 and written and not common:
            found.add(resource)
    return found


# --------------------------------------------------------------------------- exercise 1


def check_log_access(seen: dict) -> None:
    """One call returned fn's value and appended one record with every key; in every trial
    each read returned its value, each failing write raised to its caller, and each of the six
    calls has one record, by the thread that ran fn, whose start and end bracket the time fn
    noted inside the call, with no lock; two fn() calls ran at once in some trial, and two
    threads' reads, then writes, of one resource ran at once; and in every
    explored schedule of two threads each read returned its value and has its record."""
    one_call = field(seen, "one_call", dict)
    value = field(one_call, "value", (int, float))
    expect(value == SMOKE_VALUE, f"one call returned {value!r}, not fn's {SMOKE_VALUE}")
    appended = field(one_call, "records", int)
    expect(appended == 1, f"one call appended {appended} records, not 1")
    keys = items(one_call, "keys", str, at_least=0, at_most=100)
    expect(set(RECORD_KEYS) <= set(keys), f"one call's record had the keys {keys}")
    record = items(one_call, "record", _SCALAR, at_least=3, at_most=3)
    expect(record == SMOKE_RECORD, f"one call's record said {record}, not {SMOKE_RECORD}")
    ran = field(seen, "trials_run", int)
    expect(ran == STRESS_TRIALS, f"{ran} trials ran, not the graded {STRESS_TRIALS}")
    overlap = field(seen, "overlap", int)
    expect(overlap >= 2, f"at most {overlap} fn() call(s) ran at once: log_access serialised "
                         "the accesses it logged")
    together = field(seen, "together", dict)
    for case in TOGETHER_CASES:
        expect(field(together, case, bool), f"two threads' {case}s of one resource did not "
                                            "run at once: log_access serialised them")
    trials = items(seen, "trials", dict, at_least=STRESS_TRIALS, at_most=STRESS_TRIALS)
    calls = sorted((op, k) for op in ("read", "write") for k in range(LOG_WORKERS))
    for number, trial in enumerate(trials, 1):
        returned = items(trial, "returned", _SCALAR, at_least=LOG_WORKERS, at_most=LOG_WORKERS)
        wanted = [READ_VALUE + k for k in range(LOG_WORKERS)]
        expect(all(type(got) in (int, float) for got in returned) and returned == wanted,
               f"trial {number}: the reads returned {returned}, not {wanted}")
        raised = items(trial, "raised", int, at_least=0, at_most=LOG_WORKERS)
        expect(raised == list(range(LOG_WORKERS)),
               f"trial {number}: only workers {raised} got their write's error")
        _logged_calls(trial, f"trial {number}", calls)
    explored_log = field(seen, "explored", dict)
    reads = [("read", k) for k in range(LOG_EXPLORE_THREADS)]
    for number, schedule in enumerate(explored(explored_log, LOG_SCHEDULES, LOG_SAMPLES), 1):
        returned = items(schedule, "returned", _SCALAR, at_least=LOG_EXPLORE_THREADS,
                         at_most=LOG_EXPLORE_THREADS)
        wanted = [READ_VALUE + k for k in range(LOG_EXPLORE_THREADS)]
        expect(all(type(got) in (int, float) for got in returned) and returned == wanted,
               f"schedule {number}: the reads returned {returned}, not {wanted}")
        _logged_calls(schedule, f"schedule {number}", reads)


def _logged_calls(trial: dict, what: str, calls: list[tuple[str, int]]) -> None:
    """Each of ``calls`` (``(op, worker)``) ran fn once and has one record, by the thread that
    ran fn, whose start and end bracket the time fn noted inside the call, with no lock."""
    log = _log(trial, "records", what)
    expect(len(log) == len(calls), f"{what} logged {len(log)} records, not {len(calls)}")
    noted = []
    for entry in items(trial, "inside", list, at_least=len(calls), at_most=len(calls)):
        op, k, thread, ns = items({"inside": entry}, "inside", _SCALAR, at_least=4, at_most=4)
        if type(k) is not int or type(ns) is not int or type(thread) is not str:
            raise Malformed(f"{what}: what fn noted is not read as an int and a str")
        noted.append((op, k))
        resource = f"res{k % 2}"
        matches = [r for r in log if r[_OP] == op and r[_RESOURCE] == resource
                   and r[_THREAD] == thread]
        expect(bool(matches), f"{what}: no record by {thread} of its {op} of {resource} (the "
                              "thread that ran fn)")
        expect(any(r[_START] <= ns <= r[_END] and r[_LOCK] is None for r in matches),
               f"{what}: {thread}'s {op} was logged from {matches[0][_START]} to "
               f"{matches[0][_END]} with lock {matches[0][_LOCK]!r}, not around {ns} (inside "
               "fn) with no lock")
    expect(sorted(noted) == calls, f"{what}: fn ran for {sorted(noted)}")


# --------------------------------------------------------------------------- exercises 2 to 4


def _graded_logs(seen: dict, counts: tuple[int, ...], digests: tuple[str, ...]) -> list:
    """The reported logs, after checking they are the graded ones: ``counts[i]`` logs whose
    records have the fingerprint ``digests[i]``, one set after the other."""
    logs = items(seen, "logs", dict, at_least=sum(counts), at_most=sum(counts))
    records = [_log(graded, "log", f"log {number}") for number, graded in enumerate(logs, 1)]
    start = 0
    for count, digest in zip(counts, digests, strict=True):
        if fingerprint(records[start:start + count]) != digest:
            raise Malformed("the logs graded are not the grader's logs")
        start += count
    return [(field(graded, "name", str), log, graded) for graded, log in
            zip(logs, records, strict=True)]


def _judge_results(seen: dict, exercise: str, definition, read, *,
                   counts: tuple[int, ...] = (HIDDEN_LOGS,),
                   digests: tuple[str, ...] = (HIDDEN_LOGS_SHA256,)) -> None:
    for name, log, graded in _graded_logs(seen, counts, digests):
        results = [read(result, name) for result in
                   items(graded, "results", (list, str, int), at_least=0, at_most=10_000)]
        expected = definition(log)
        expect(len(set(results)) == len(results) == field(graded, "returned", int),
               f"on the {name}, {exercise} returned a result more than once")
        got = set(results)
        missed, extra = sorted(expected - got, key=repr), sorted(got - expected, key=repr)
        expect(not missed and not extra,
               f"on the {name} ({len(log)} records) {exercise} returned {len(got)} results "
               f"for {len(expected)} (missed {missed[:1]}, wrongly reported {extra[:1]})")


def _triple(result: object, name: str) -> tuple:
    return tuple(items({name: result}, name, str, at_least=3, at_most=3))


def _pair(result: object, name: str) -> tuple:
    return tuple(items({name: result}, name, int, at_least=2, at_most=2))


def _resource(result: object, name: str) -> str:
    if type(result) is not str:
        raise Malformed(f"a result on the {name} is not a resource's name")
    return result


def check_who_overwrote(seen: dict) -> None:
    """On each of the hidden logs, exactly the lost updates the definition finds, each once."""
    _judge_results(seen, "who_overwrote", who_overwrote, _triple)


def check_find_conflicts(seen: dict) -> None:
    """On each small conflict log, then each hidden log, exactly the conflicting pairs the
    definition finds, each once."""
    _judge_results(seen, "find_conflicts", find_conflicts, _pair,
                   counts=(CONFLICT_EDGE_LOGS, HIDDEN_LOGS),
                   digests=(CONFLICT_EDGE_LOGS_SHA256, HIDDEN_LOGS_SHA256))


def check_lockset_races(seen: dict) -> None:
    """On each small log, then each hidden log, exactly the resources the lockset definition
    flags, each once."""
    _judge_results(seen, "lockset_races", lockset_races, _resource,
                   counts=(EDGE_LOGS, HIDDEN_LOGS), digests=(EDGE_LOGS_SHA256, HIDDEN_LOGS_SHA256))


# --------------------------------------------------------------------------- exercise 5



def check_publish_locked(seen: dict) -> None:
    """In every schedule the record holds the best trainer's score, every trainer's read is
    logged, every access with the lock's name and made holding the lock passed in, no two
    accesses conflict, and the best trainer saved, with the lock released like every save;
    the trainers that saved are those that wrote the record, each before its publish_locked
    returned; of two trainers with the same score, one saved at most."""
    top = max(PUBLISH_SCORES, key=PUBLISH_SCORES.get)
    for number, schedule in enumerate(explored(seen, SCHEDULES, SAMPLES), 1):
        best = items(schedule, "best", _SCALAR, at_least=2, at_most=2)
        expect(best == [top, PUBLISH_SCORES[top]] and type(best[1]) is float,
               f"schedule {number}: the record held {best}, not {top}'s "
               f"{PUBLISH_SCORES[top]}: an update was lost")
        log = _log(schedule, "log", f"schedule {number}")
        reads = {r[_THREAD] for r in log if r[_OP] == "read"}
        expect(len(reads) == len(PUBLISH_SCORES),
               f"schedule {number}: {len(reads)} trainers' reads were logged, not "
               f"{len(PUBLISH_SCORES)}")
        locks = sorted({repr(r[_LOCK]) for r in log})
        expect(all(r[_LOCK] == LOCK_NAME for r in log),
               f"schedule {number}: accesses were logged with locks {locks}")
        conflicts = find_conflicts(log)
        expect(not conflicts, f"schedule {number}: {len(conflicts)} conflicting accesses")
        saves = items(schedule, "saves", list, at_least=0, at_most=1000)
        saved = [items({"save": save}, "save", _SCALAR, at_least=2, at_most=2)
                 for save in saves]
        expect(all(type(held) is bool for _, held in saved),
               f"schedule {number}: a save's lock is not read as True or False")
        expect(not any(held for _, held in saved),
               f"schedule {number}: a save ran while its thread held the lock")
        expect(any(who == top for who, _ in saved),
               f"schedule {number}: {top} did not save (saves: {[w for w, _ in saved]})")
        savers = {who for who, _ in saved if who in PUBLISH_SCORES}
        accesses = [items({"access": entry}, "access", _SCALAR, at_least=3, at_most=3)
                    for entry in items(schedule, "accesses", list, at_least=0, at_most=1000)]
        expect(all(held is True for _, _, held in accesses),
               f"schedule {number}: an access ran without the lock passed in held")
        writers = {who for who, op, _ in accesses if op == "write"}
        expect(savers == writers and len(savers) == len(saved),
               f"schedule {number}: the trainers that wrote the record ({sorted(writers)}) are "
               f"not those that saved ({sorted(savers)})")
        scores = [PUBLISH_SCORES[who] for who in savers]
        expect(len(scores) == len(set(scores)),
               f"schedule {number}: trainers with the same score both saved ({sorted(savers)}):"
               " a score equal to the record does not beat it")
        on_return = items(schedule, "saved_on_return", str, at_least=0,
                          at_most=len(PUBLISH_SCORES))
        expect(writers <= set(on_return),
               f"schedule {number}: a trainer's publish_locked returned before its save ran "
               f"(wrote {sorted(writers)}, saved by their return {on_return})")
