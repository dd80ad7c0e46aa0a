"""Lesson 02's judge: the metrics' snapshots, the cache's builds, the slot moves and the model
slot's answers, from what every explored schedule saw."""

from __future__ import annotations

from autograder.judges import expect, explored, field, items

# The check's settings (``autograder.checks.mutex``; a test ties them).
#: The most schedules a graded exploration runs, and the seeded samples it runs once every
#: schedule within its preemption bound has run: a complete search runs more than SAMPLES
#: (the bound is never empty) unless it covered the whole space first.
SCHEDULES = 3000
SAMPLES = 100
FIRST_USE_SCHEDULES = 3000
#: ServerMetrics: the latencies recorded, the snapshots the dashboard takes per schedule, the
#: one-thread snapshot after one ok and one failed request, and the final one after 2 + 2.
OK_LATENCY_S = 1.0
ERROR_LATENCY_S = 4.0
SNAPSHOTS = 2
ONE_THREAD_SNAPSHOT = [2, 1, 1, OK_LATENCY_S + ERROR_LATENCY_S]
FINAL_SNAPSHOT = [4, 2, 2, 2 * OK_LATENCY_S + 2 * ERROR_LATENCY_S]
#: PredictionCache: the keys asked for, and how many gets of each.
SLOW_KEY, FAST_PREFIX = "slow", "fast-"
SLOW_GETS, FAST_GETS = 2, 1
#: PredictionCache: the keys the one-thread run gets twice each (a cache keeps them all).
KEPT_KEYS = 300
#: move_slots: free slots of each replica at the start, slots each move moves, and what the
#: two one-thread moves return and leave (moved, source's slots, destination's slots).
SLOTS_EACH = 2
MOVE = 2
ONE_THREAD_MOVES = [[True, 1, 3], [False, 1, 2]]
#: ModelSlot: the versions, the warm-up batch's name, and the answers per schedule.
OLD_VERSION, NEW_VERSION = 1, 2
EXAMPLE = "example"
ANSWERS = 3
FIRST_USE_ANSWERS = 2

_NUMBER = (int, float, bool)


def _first_use(seen: dict) -> list[dict]:
    """The first-use search's schedules (two threads, one call each, on a new object): every
    schedule within its bound and no sample, at most :data:`FIRST_USE_SCHEDULES`, one entry
    each."""
    return explored(field(seen, "first_use", dict), FIRST_USE_SCHEDULES, 0)


def _explored(seen: dict) -> list[dict]:
    """The graded exploration's schedules, one entry each, after checking it ran them all."""
    schedules = field(seen, "schedules", int)
    covered = field(seen, "covered", bool)
    expect(1 <= schedules <= SCHEDULES and (schedules > SAMPLES or covered),
           f"{schedules} schedules ran: not a complete graded search (every schedule within "
           f"its bound, then {SAMPLES} samples, at most {SCHEDULES})")
    return items(seen, "runs", dict, at_least=schedules, at_most=schedules)


def _numbers(seen: dict, key: str, count: int) -> list:
    return items(seen, key, _NUMBER, at_least=count, at_most=count)


def check_metrics(seen: dict) -> None:
    """One thread's snapshot counts one ok and one failed request, and so does the next once
    the caller changed the one it got; in every schedule every
    snapshot is consistent (ok + errors = requests, the latencies add up) and unchanged later,
    and the final snapshot counts all four requests; in every first-use schedule (one ok and
    one failed request, no snapshot) the final snapshot counts both."""
    one_thread = _numbers(seen, "one_thread", 4)
    expect(one_thread == ONE_THREAD_SNAPSHOT,
           f"on one thread the snapshot was {one_thread}, not {ONE_THREAD_SNAPSHOT}")
    after = _numbers(seen, "after_a_change", 4)
    expect(after == ONE_THREAD_SNAPSHOT,
           f"on one thread, after the caller changed a returned snapshot, the next said "
           f"{after}, not {ONE_THREAD_SNAPSHOT}")
    for number, run in enumerate(_explored(seen), 1):
        returned = items(run, "snapshots", list, at_least=SNAPSHOTS, at_most=SNAPSHOTS)
        later = items(run, "later", list, at_least=SNAPSHOTS, at_most=SNAPSHOTS)
        for snap, again in zip(returned, later, strict=True):
            requests, ok, errors, latency = _numbers({"snap": snap}, "snap", 4)
            expect(ok + errors == requests,
                   f"schedule {number}: a snapshot said {snap}: ok + errors != requests")
            expect(latency == OK_LATENCY_S * ok + ERROR_LATENCY_S * errors,
                   f"schedule {number}: a snapshot said {snap}: the latencies do not add up")
            expect(_numbers({"snap": again}, "snap", 4) == snap,
                   f"schedule {number}: a snapshot said {snap}, later {again}")
        final = _numbers(run, "final", 4)
        expect(final == FINAL_SNAPSHOT,
               f"schedule {number}: the final snapshot said {final}, not {FINAL_SNAPSHOT}: an "
               "update was lost")
    for number, run in enumerate(_first_use(seen), 1):
        items(run, "snapshots", list, at_least=0, at_most=0)
        final = _numbers(run, "final", 4)
        expect(final == ONE_THREAD_SNAPSHOT,
               f"first-use schedule {number}: the final snapshot said {final}, not "
               f"{ONE_THREAD_SNAPSHOT}: an update was lost")


def check_cache(seen: dict) -> None:
    """In every schedule each key was computed once, get(fast key) returned during the slow
    build, and every get returned its key's value, the two slow ones the same object. The fast
    key is the check's ``fast-<n>`` of that process (one whose hash the slow key's shares)."""
    fast = field(seen, "fast_key", str)
    expect(fast.startswith(FAST_PREFIX) and fast[len(FAST_PREFIX):].isdigit(),
           f"the other key {fast!r} is not one the check makes")
    kept = field(seen, "kept", dict)
    keys = field(kept, "keys", int)
    expect(keys == KEPT_KEYS, f"the one-thread run got {keys} keys, not the graded {KEPT_KEYS}")
    expect(field(kept, "computed", int) == KEPT_KEYS and field(kept, "same", int) == KEPT_KEYS,
           f"on one thread, {KEPT_KEYS} keys got twice ran compute {kept['computed']} times "
           f"and gave the same object {kept['same']} times: not each key computed once, kept")
    for number, run in enumerate(_explored(seen), 1):
        computed = items(run, "computed", (str, type(None)), at_least=0, at_most=1000)
        expect(None not in computed and sorted(computed) == sorted([SLOW_KEY, fast]),
               f"schedule {number} computed {computed}, not each key once")
        gave_up = field(run, "gave_up", int)
        expect(gave_up == 0, f"schedule {number}: get({fast!r}) waited for the slow build")
        slow = items(run, "slow", (str, type(None)), at_least=SLOW_GETS, at_most=SLOW_GETS)
        got = items(run, "fast", (str, type(None)), at_least=FAST_GETS, at_most=FAST_GETS)
        expect(slow == [SLOW_KEY] * SLOW_GETS and got == [fast] * FAST_GETS,
               f"schedule {number}: the gets returned values of {slow} and {got}")
        expect(field(run, "same_object", bool) is True,
               f"schedule {number}: the two get({SLOW_KEY!r}) returned different objects")
    failing = field(seen, "failing", dict)
    for number, run in enumerate(_explored(failing), 1):
        outcomes = items(run, "outcomes", str, at_least=2, at_most=2)
        expect(set(outcomes) <= {"raised", "value"},
               f"failing-build schedule {number}: the gets ended {outcomes}, not each with the "
               "key's value or an error")


def check_move_slots(seen: dict) -> None:
    """The one-thread moves; in every schedule no unguarded access, no negative count, no slot
    lost or made up, and replica a's slots match the moves that returned True."""
    one_thread = items(seen, "one_thread", list, at_least=2, at_most=2)
    moves = [_numbers({"one-thread move": move}, "one-thread move", 3) for move in one_thread]
    expect(all(type(moved) is bool for moved, _, _ in moves),
           "on one thread a move's outcome is not read as True or False")
    expect(moves == ONE_THREAD_MOVES,
           f"on one thread the moves gave {moves}, not {ONE_THREAD_MOVES}")
    for number, run in enumerate(_explored(seen), 1):
        unguarded = items(run, "unguarded", int, at_least=2, at_most=2)
        expect(unguarded == [0, 0], f"schedule {number}: {unguarded} unguarded accesses")
        lowest = _numbers(run, "lowest", 2)
        expect(min(lowest) >= 0, f"schedule {number}: a replica went down to {min(lowest)}")
        a, b = _numbers(run, "slots", 2)
        in_flight = field(run, "in_flight", int)
        expect(a + b + in_flight == 2 * SLOTS_EACH,
               f"schedule {number}: a={a}, b={b} with {in_flight} in flight: not "
               f"{2 * SLOTS_EACH} slots in all")
        a_to_b, b_to_a = _numbers(run, "moved", 2)
        expect(a_to_b in (True, False) and b_to_a in (True, False),
               f"schedule {number}: the moves returned {a_to_b!r} and {b_to_a!r}")
        want_a = SLOTS_EACH - MOVE * a_to_b + MOVE * b_to_a - in_flight
        expect(a == want_a, f"schedule {number}: a ended with {a}, not {want_a}")


def _slot_run(run: dict, schedule: str, answers: int) -> None:
    """One model-slot schedule: the bad batch (if any) raised, ``answers`` answers each of the
    version of the model that computed it, the new model warmed first and inside swap(), and
    the request after swap() of the new version."""
    expect(field(run, "bad_raised", bool) is True,
           f"{schedule}: predict() on a bad batch did not raise")
    for answer in items(run, "answers", list, at_least=answers, at_most=answers):
        version, computed_by = _numbers({"answer": answer}, "answer", 2)
        expect(version == computed_by,
               f"{schedule}: an answer of version {version} was computed by version "
               f"{computed_by}")
    calls = items(run, "new_calls", (str, type(None)), at_least=1, at_most=1000)
    expect(calls[0] == EXAMPLE, f"{schedule}: the new model first served {calls[0]}")
    at_swap = items(run, "calls_at_swap", (str, type(None)), at_least=1, at_most=1000)
    expect(at_swap[0] == EXAMPLE, f"{schedule}: swap() returned before warming the new model")
    after = field(run, "after_swap", _NUMBER)
    expect(after == NEW_VERSION, f"{schedule}: the request after swap() got version {after}")


def check_model_slot(seen: dict) -> None:
    """In every schedule, and every first-use schedule (the swapper and one request, two
    answers), the bad batch raised, every answer's version is the version of the model that
    computed it, the new model was warmed first and inside swap(), and the request after
    swap() got the new version."""
    for number, run in enumerate(_explored(seen), 1):
        _slot_run(run, f"schedule {number}", ANSWERS)
    for number, run in enumerate(_first_use(seen), 1):
        _slot_run(run, f"first-use schedule {number}", FIRST_USE_ANSWERS)
