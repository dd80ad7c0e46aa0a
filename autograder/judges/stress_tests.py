"""Lesson 05's judge: the student's stress test and explorer against the hidden ledgers, and the
benchmark's numbers on servers of known physics, from what ran."""

from __future__ import annotations

import math

from autograder.judges import expect, field, items

# The check's plans and settings (``autograder.checks.stress_tests``; a test ties them).
#: Exercise 1's hidden ledgers in the order they run (the seeded shuffle of the racy and the
#: correct ones), each with whether it is racy.
STRESS_LEDGERS = [
    ("LockPerCallLedger", True), ("TwoLocksLedger", True), ("TupleLedger", False),
    ("QueueLedger", False), ("ShardedLedger", False), ("UnlockedReaderLedger", True),
    ("SplitUpdateLedger", True), ("RowsFirstLedger", True), ("AssignLedger", True),
    ("LockedLedger", False), ("ReadOutsideLedger", True), ("HalfAtomicLedger", True),
    ("VariableLedger", False),
]
#: How the held reader of exercise 1's last run may have gone on ("" when no thread was held;
#: "finish" only when the test returned while it was held, which fails).
RELEASED_BY = ("", "join", "quiet", "timeout", "finish")
#: Exercise 3's hidden pure-Python ledgers, alike.
EXPLORE_LEDGERS = [
    ("PlainLockPerCall", True), ("PlainTwoLocks", True), ("PlainUnlockedReader", True),
    ("PlainLedger", True), ("PlainTuple", False), ("PlainLocked", False),
    ("PlainRowsFirst", True), ("PlainOrderDeadlock", True), ("PlainLostNoTear", True),
    ("PlainRLock", False),
]
#: Verdicts of a harness Result that name a race, and what the grader's witness of the
#: explored ledgers can see (``autograder.checks.stress_tests``: ``FAILING``, ``ANOMALIES``).
FAILING = ("race", "deadlock", "error")
ANOMALIES = ("snapshot", "deadlock")
#: Exercise 2's workload: threads, calls per thread, and the servers' sleep (seconds).
THREADS = 4
CALLS = 6
SLEEP_S = 0.004
#: The servers ``measure`` ran on, by the names the check gives them.
OVERLAPPING = "overlapping sleeps"
LOCKED = "sleeps behind one lock"
ALTERNATING = "calls of 1 ms and 12 ms in turns"


def _ledgers(seen: dict, plan: list[tuple[str, bool]]) -> list[dict]:
    """The report's ledgers, which must be the graded plan's, in its order."""
    ledgers = items(seen, "ledgers", dict, at_least=0, at_most=len(plan))
    ran = [(field(row, "name", str), field(row, "racy", bool)) for row in ledgers]
    expect(ran == plan, f"the test ran against {len(ran)} hidden ledgers, not the graded "
                        f"{len(plan)} in their order")
    return ledgers


def check_stress_test(seen: dict) -> None:
    """The student's test raised on every racy ledger, while at least two of its calls ran at
    once, and returned on every correct one; on the last correct ledger, whose first reader
    thread was held until the test waited for it, it returned, and not while that thread was
    held; and it raised on the ledgers that race only until two record() calls overlapped,
    after they did. The held-reader run is made twice: its first reader thread held, then its
    second (``joined_second``; nothing is held when the test starts one reader)."""
    for number, row in enumerate(_ledgers(seen, STRESS_LEDGERS), 1):
        verdict = field(row, "verdict", str)
        wanted = "raised" if row["racy"] else "returned"
        expect(verdict == wanted, f"ledger {number} ({'racy' if row['racy'] else 'correct'}): "
                                  f"the test {verdict}, not {wanted}")
        overlap = field(row, "overlap", int)
        expect(not row["racy"] or overlap >= 2,
               f"ledger {number} (racy): the test failed it, but at most {overlap} of its calls "
               "ran at once: the race never happened")
    for name in ("joined", "joined_second"):
        joined = field(seen, name, dict)
        torn = field(joined, "torn", bool)
        wanted = "raised" if torn else "returned"
        expect(field(joined, "verdict", str) == wanted,
               f"the held-reader ledger ({'its held read torn' if torn else 'correct'}): the "
               f"test {joined['verdict']}, not {wanted}")
        field(joined, "held", bool)
        expect(field(joined, "released_by", str) in RELEASED_BY,
               "the held-reader run does not say how its reader went on")
        expect(field(joined, "returned_while_held", bool) is False,
               "the test returned while the reader thread it started was still held")
    once = field(seen, "racy_once", dict)
    verdict = field(once, "verdict", str)
    expect(verdict == "raised", f"the ledger that races once (racy): the test {verdict}, "
                                "not raised")
    writes = field(once, "writes", int)
    expect(writes >= 2 and field(once, "overlap", int) >= writes,
           f"the ledger that races once (racy): the test failed it, but at most {writes} of "
           "its record() calls ran at once: the race never happened")


def check_explore_ledger(seen: dict) -> None:
    """The student's explorer returned a harness Result that is ok (a pass) for every correct
    ledger, which nothing tampered with and which never misbehaved; and for every racy one a
    Result that is not ok, with a verdict that names a race (a deadlock exactly when the
    grader saw the ledger deadlock), after the grader saw the exploration break that ledger."""
    for number, row in enumerate(_ledgers(seen, EXPLORE_LEDGERS), 1):
        outcome = field(row, "outcome", str)
        result = field(row, "result", (dict, type(None)))
        witness = field(row, "witness", dict)
        anomaly = field(witness, "anomaly", str)
        tampered = field(witness, "tampered", str)
        expect(anomaly in ("", *ANOMALIES), f"ledger {number}: an unknown anomaly {anomaly!r}")
        field(witness, "ledgers", int)
        field(witness, "calls", int)
        is_result = result is not None and field(result, "type", str) == "Result"
        ok = is_result and field(result, "ok", bool)
        verdict = field(result, "verdict", str) if is_result else ""
        kind = "racy" if row["racy"] else "correct"
        expect(not tampered, f"ledger {number} ({kind}): {tampered}")
        if row["racy"]:
            expect(outcome == "returned" and is_result and not ok and verdict in FAILING,
                   f"ledger {number} (racy): the explorer {outcome} without a Result that "
                   "names a race")
            expect(anomaly != "" and (anomaly == "deadlock") == (verdict == "deadlock"),
                   f"ledger {number} (racy): the Result said {verdict!r}, but the grader saw "
                   f"no such thing happen to the ledger ({anomaly or 'nothing'})")
        else:
            expect(outcome == "returned" and ok and verdict == "pass"
                   and field(result, "schedules", int) > 0,
                   f"ledger {number} (correct): the explorer {outcome} without an ok Result")
            expect(anomaly == "", f"ledger {number} (correct): the grader saw it misbehave")


def _numbers(seen: dict, name: str) -> tuple[float, list[float], float]:
    numbers = field(seen, name, dict)
    wall = field(numbers, "wall_s", float)
    latencies = items(numbers, "latencies_s", float, at_least=0, at_most=10_000)
    expect(all(math.isfinite(latency) for latency in latencies),
           f"on {name} a latency is not a finite number")
    return wall, latencies, field(numbers, "throughput", float)


def check_measure(seen: dict) -> None:
    """On each server: called from the threads asked for, one positive latency per call,
    throughput = calls / wall_s, no call longer than the run, latencies adding up to at most
    threads x wall_s, sleeps at least as long as they sleep; overlapping sleeps overlapped,
    locked ones did not, and the short and long calls were told apart (the check's own
    bounds)."""
    calls = THREADS * CALLS
    results = {}
    for name in (OVERLAPPING, LOCKED, ALTERNATING):
        wall, latencies, throughput = _numbers(seen, name)
        results[name] = (wall, latencies)
        where = f"on {name}"
        expect(len(latencies) == calls, f"{where}: {len(latencies)} latencies, not {calls}")
        callers = field(field(seen, name, dict), "callers", int)
        expect(callers == THREADS, f"{where}: serve() was called from {callers} threads, not "
                                   f"{THREADS}")
        made = items(field(seen, name, dict), "calls", int, at_least=THREADS, at_most=THREADS)
        expect(made == [CALLS] * THREADS, f"{where}: serve() was called {made} times per "
                                          f"thread, not {CALLS} on each")
        expect(wall > 0 and min(latencies) > 0 and throughput > 0,
               f"{where}: a number was not positive")
        expect(not abs(throughput * wall / calls - 1) > 0.02,
               f"{where}: throughput {throughput:.1f}/s is not {calls} calls / wall_s")
        expect(not max(latencies) > wall * 1.02, f"{where}: a call took longer than wall_s")
        expect(not sum(latencies) > THREADS * wall * 1.05,
               f"{where}: the latencies add up to more than threads x wall_s")
        if name != ALTERNATING:
            expect(not min(latencies) < SLEEP_S * 0.95,
                   f"{where}: a latency of {min(latencies) * 1000:.2f} ms, shorter than the "
                   f"{SLEEP_S * 1000:.0f} ms sleep")
    serial = THREADS * CALLS * SLEEP_S
    overlapped, busy = results[OVERLAPPING][0], sum(results[OVERLAPPING][1])
    expect(not overlapped > 0.6 * busy,
           f"on {OVERLAPPING}: wall_s {overlapped:.3f} s against {busy:.3f} s of calls: the "
           f"threads ran one after another")
    locked = results[LOCKED][0]
    expect(not locked < serial * 0.98,
           f"on {LOCKED}: wall_s {locked:.3f} s, under the {serial:.3f} s the calls need")
    latencies = sorted(results[ALTERNATING][1])
    expect(not latencies[-1] < 3 * latencies[0],
           f"on {ALTERNATING}: the longest latency is under 3 x the shortest")
