"""Answers a student might write for lesson 05 (stress tests and benchmarks).

``stress_ledger`` wrong answers: one thread only; threads without a barrier and little work;
a good hammer that only checks the final totals (misses torn snapshots); an invariant stricter
than the contract (fails correct ledgers); retrying a failed trial and passing if any attempt
passes (retries hide races); a barrier with the wrong number of parties (hangs).
``measure`` wrong answers: threads started and joined one after another; one average instead
of per-call latencies; CPU time instead of wall time; throughput that forgets the threads.
``explore_ledger`` wrong answers: no reader thread; a check that compares only final totals;
a single writer with a reader that checks nothing; an invariant stricter than the contract;
cheats that tell the hidden ledgers apart by their classes and fail the racy ones without
breaking them (a made-up Result, a raise, a failing check, a forged torn snapshot, a timeout).
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
from collections.abc import Callable
from typing import Any

from autograder.checks.stress_tests import batch
from autograder.harness import explore
from tests.checks.liars import lying

ROWS = 3

# --------------------------------------------------------------------------- stress_ledger


def _hammer(make_ledger: Any, *, threads: int, records: int, barrier: bool,
            reader: bool, strict: bool = False, one_sided: bool = False) -> None:
    """One trial: ``threads`` writers (and maybe a reader), then the checks."""
    ledger = make_ledger()
    data = batch(ROWS)
    start = threading.Barrier(threads + int(reader)) if barrier else None
    done = threading.Event()
    torn: list[tuple[int, int]] = []

    def writer() -> None:
        if start is not None:
            start.wait()
        for _ in range(records):
            ledger.record(data)

    def read() -> None:
        if start is not None:
            start.wait()
        while not done.is_set():
            requests, rows = ledger.totals()
            torn_now = rows < ROWS * requests if one_sided else rows != ROWS * requests
            if torn_now or (strict and requests == 0):
                torn.append((requests, rows))

    pool = [threading.Thread(target=writer) for _ in range(threads)]
    if reader:
        pool.append(threading.Thread(target=read))
    for thread in pool:
        thread.start()
    for thread in pool[:threads]:
        thread.join()
    done.set()
    for thread in pool[threads:]:
        thread.join()
    assert not torn, f"torn snapshots: {torn[:3]}"
    assert ledger.totals() == (threads * records, ROWS * threads * records), ledger.totals()


def single_thread(make_ledger: Any) -> None:
    """Wrong: one thread never races."""
    _hammer(make_ledger, threads=1, records=300, barrier=False, reader=False)


def few_threads_no_barrier(make_ledger: Any) -> None:
    """Wrong: two threads, ten records each, started one after another, final totals only."""
    _hammer(make_ledger, threads=2, records=10, barrier=False, reader=False)


def final_totals_only(make_ledger: Any) -> None:
    """Wrong: a good hammer, but nobody reads while writers write: torn snapshots go unseen."""
    _hammer(make_ledger, threads=4, records=100, barrier=True, reader=False)


def stricter_than_contract(make_ledger: Any) -> None:
    """Wrong: a snapshot taken before the first record ((0, 0)) is legal, this calls it torn."""
    _hammer(make_ledger, threads=4, records=100, barrier=True, reader=True, strict=True)


def retry_until_green(make_ledger: Any) -> None:
    """Wrong: 'flaky, retry it': a trial that passes on any of three attempts counts as passed."""
    for attempt in range(3):
        try:
            _hammer(make_ledger, threads=1 + attempt % 2, records=50, barrier=False,
                    reader=False)
            return
        except AssertionError:
            continue
    raise AssertionError("failed three times")


def retry_a_sound_trial(make_ledger: Any) -> None:
    """Wrong: the lesson's own trial (aligned writers and a reader), retried on a fresh ledger
    until one attempt passes: a race that shows once, as a flaky bug does, is retried away."""
    failures = []
    for _ in range(3):
        try:
            _hammer(make_ledger, threads=4, records=100, barrier=True, reader=True)
            return
        except AssertionError as error:
            failures.append(error)
    raise failures[-1]


# Whatever its attempts see, it returns on the ledger that races once (or misses a racy one).
retry_a_sound_trial.decided_by_construction = True


def sanity_first_then_hammer(make_ledger: Any) -> None:
    """Correct: one thread checks a fresh ledger's contract first, then a fresh ledger is
    stressed: the first ledger to see concurrent calls is the one judged."""
    ledger = make_ledger()
    assert ledger.totals() == (0, 0), ledger.totals()
    ledger.record(batch(ROWS))
    assert ledger.totals() == (1, ROWS), ledger.totals()
    _hammer(make_ledger, threads=4, records=100, barrier=True, reader=True)


def barrier_miscounted(make_ledger: Any) -> None:
    """Wrong: the barrier waits for one party too many and never opens."""
    ledger = make_ledger()
    start = threading.Barrier(5)
    pool = [threading.Thread(target=lambda: (start.wait(), ledger.record(batch(ROWS))),
                             daemon=True) for _ in range(4)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()


def one_writer_with_reader(make_ledger: Any) -> None:
    """Wrong: one writer and a checking reader: torn snapshots are seen, but one writer can
    never lose an update to another (issue #18, class 7)."""
    _hammer(make_ledger, threads=1, records=300, barrier=True, reader=True)


def _reader_waited_for(make_ledger: Any, wait_for_reader: Callable[[threading.Thread], None],
                       *, check_first: bool = False) -> None:
    """A good hammer (4 writers, a reader that checks every snapshot) whose main thread waits
    for the reader with ``wait_for_reader(reader)`` once the writers are done (after its checks
    when ``check_first``)."""
    ledger = make_ledger()
    data = batch(ROWS)
    start = threading.Barrier(5)
    writing = threading.Event()
    writing.set()
    torn: list[tuple[int, int]] = []

    def write() -> None:
        start.wait()
        for _ in range(100):
            ledger.record(data)

    def read() -> None:
        start.wait()
        while writing.is_set():
            requests, rows = ledger.totals()
            if rows != ROWS * requests:
                torn.append((requests, rows))

    writers = [threading.Thread(target=write) for _ in range(4)]
    reader = threading.Thread(target=read)
    for thread in [*writers, reader]:
        thread.start()
    for thread in writers:
        thread.join()
    writing.clear()
    try:
        if not check_first:
            wait_for_reader(reader)
        assert not torn, f"torn snapshots: {torn[:3]}"
        assert ledger.totals() == (400, ROWS * 400), ledger.totals()
    finally:
        wait_for_reader(reader)


def reader_spins_writers_never_start(make_ledger: Any) -> None:
    """Wrong, and it hangs: the reader skips the barrier the writers wait at, so the writers
    never start and the reader reads for ever (the mutation benchmark's ``drop_wait``)."""
    ledger = make_ledger()
    start = threading.Barrier(5)
    writing = threading.Event()
    writing.set()

    def write() -> None:
        start.wait()
        ledger.record(batch(ROWS))

    def read() -> None:
        while writing.is_set():
            ledger.totals()

    writers = [threading.Thread(target=write, daemon=True) for _ in range(4)]
    for thread in [*writers, threading.Thread(target=read, daemon=True)]:
        thread.start()
    for thread in writers:
        thread.join()
    writing.clear()


def reader_not_joined(make_ledger: Any) -> None:
    """Wrong: the reader is never joined, so a torn snapshot it sees after the checks is
    missed (the mutation benchmark's ``drop_join`` of the reference)."""
    _reader_waited_for(make_ledger, lambda reader: None)


def reader_sleep_instead_of_join(make_ledger: Any) -> None:
    """Wrong: a short sleep stands in for the reader's join (``join_to_sleep``)."""
    _reader_waited_for(make_ledger, lambda reader: time.sleep(0.01))


def reader_joined_after_the_checks(make_ledger: Any) -> None:
    """Wrong (round 8, 5/5 before): checks what the reader saw, then joins the reader in a
    ``finally``: a torn snapshot the reader takes after the checks is never looked at."""
    _reader_waited_for(make_ledger, lambda reader: reader.join(), check_first=True)


def judged_by_its_documentation(make_ledger: Any) -> None:
    """Wrong: starts no thread; fails a ledger whose class, or a base class, says "Racy" in its
    docstring (the grader's hidden ledgers did), and checks one record on one thread."""
    ledger = make_ledger()
    for cls in type(ledger).__mro__:
        if (cls.__doc__ or "").lstrip().startswith("Racy"):
            raise AssertionError(f"{cls.__name__} is documented as racy")
    ledger.record(batch(ROWS))
    assert ledger.totals() == (1, ROWS), ledger.totals()


def judged_by_its_class_after_a_token_load(make_ledger: Any) -> None:
    """Wrong: one record on each of two threads, one after the other (never at once), then
    fails a ledger whose class is one of the lesson's racy examples by name."""
    ledger = make_ledger()
    for _ in range(2):
        writer = threading.Thread(target=ledger.record, args=(batch(ROWS),))
        writer.start()
        writer.join()
    names = {cls.__name__ for cls in type(ledger).__mro__}
    if names & {"AssignLedger", "UnlockedReaderLedger", "LockPerCallLedger", "TwoLocksLedger",
                "HalfAtomicLedger", "ReadOutsideLedger", "SplitUpdateLedger",
                "RowsFirstLedger"}:
        raise AssertionError("a racy ledger")


def reader_checks_one_side(make_ledger: Any) -> None:
    """Wrong (round 8, 5/5 before): the reader flags a snapshot only when it has too few rows
    for its requests; a ledger that counts the rows first tears the other way, unseen."""
    _hammer(make_ledger, threads=4, records=100, barrier=True, reader=True, one_sided=True)


def second_reader_not_joined(make_ledger: Any) -> None:
    """Wrong (red team, session 26; it passed 8 of 8): four writers and two readers, and only
    the last reader started is joined: the test can return while the other is inside
    totals()."""
    writers, records = 4, 100
    ledger = make_ledger()
    barrier = threading.Barrier(writers + 2)
    writing = threading.Event()
    writing.set()
    torn: list = []

    def write() -> None:
        barrier.wait()
        for _ in range(records):
            ledger.record(batch(ROWS))

    def read() -> None:
        barrier.wait()
        while writing.is_set():
            requests, rows = ledger.totals()
            if rows != ROWS * requests:
                torn.append((requests, rows))

    pool = [threading.Thread(target=write) for _ in range(writers)]
    for thread in pool:
        thread.start()
    for _ in range(2):
        reader = threading.Thread(target=read)
        reader.start()
    for thread in pool:
        thread.join()
    writing.clear()
    reader.join()
    assert not torn, f"{len(torn)} torn snapshots, e.g. {torn[0]}"
    assert ledger.totals() == (writers * records, ROWS * writers * records), ledger.totals()


WRONG_STRESS = [single_thread, few_threads_no_barrier, final_totals_only, stricter_than_contract,
                retry_until_green, retry_a_sound_trial, barrier_miscounted,
                one_writer_with_reader, reader_not_joined,
                reader_sleep_instead_of_join, judged_by_its_documentation,
                judged_by_its_class_after_a_token_load]
judged_by_its_documentation.decided_by_construction = True
WRONG_STRESS.append(reader_checks_one_side)
WRONG_STRESS.append(reader_joined_after_the_checks)
reader_joined_after_the_checks.decided_by_construction = True  # the held read tears, every run
WRONG_STRESS.append(second_reader_not_joined)
second_reader_not_joined.decided_by_construction = True  # one of two held-reader runs holds it
reader_checks_one_side.decided_by_construction = True  # RowsFirstLedger never tears its way
judged_by_its_class_after_a_token_load.decided_by_construction = True


def pool_with_checker(make_ledger: Any) -> None:
    """Correct, another structure: a thread pool, a Barrier, the reader checks every snapshot."""
    ledger = make_ledger()
    data = batch(2)
    go = threading.Barrier(5)
    writing = [True]
    snaps: list[tuple[int, int]] = []

    def write() -> None:
        go.wait()
        for _ in range(80):
            ledger.record(data)

    def read() -> None:
        go.wait()
        while writing[0]:
            snaps.append(ledger.totals())

    with concurrent.futures.ThreadPoolExecutor(5) as pool:
        reader = pool.submit(read)
        writers = [pool.submit(write) for _ in range(4)]
        for future in writers:
            future.result()
        writing[0] = False
        reader.result()
    bad = [s for s in snaps if s[1] != 2 * s[0]]
    assert not bad, f"{len(bad)} torn snapshots, e.g. {bad[0]}"
    assert ledger.totals() == (320, 640), f"lost updates: {ledger.totals()}"


def event_start_mixed_rows(make_ledger: Any) -> None:
    """Correct, another primitive: an Event starts the threads; two readers; 4-row batches."""
    ledger = make_ledger()
    big = batch(4)
    go = threading.Event()
    stop = threading.Event()
    problems: list[str] = []

    def write(which: int) -> None:
        go.wait()
        for _ in range(80):
            ledger.record(big)

    def read() -> None:
        go.wait()
        while not stop.is_set():
            requests, rows = ledger.totals()
            if rows != 4 * requests:
                problems.append(f"snapshot {requests, rows} is impossible")

    writers = [threading.Thread(target=write, args=(k,)) for k in range(4)]
    readers = [threading.Thread(target=read) for _ in range(2)]
    for thread in writers + readers:
        thread.start()
    time.sleep(0.01)
    go.set()
    for thread in writers:
        thread.join()
    stop.set()
    for thread in readers:
        thread.join()
    assert not problems, problems[0]
    assert ledger.totals() == (320, 1280), f"expected (320, 1280), saw {ledger.totals()}"


def condition_start_queue_of_snapshots(make_ledger: Any) -> None:
    """Correct, other primitives: a Condition starts the writers, the reader hands each
    snapshot to a queue, and the main thread checks them after the run."""
    import queue

    ledger = make_ledger()
    data = batch(5)
    ready = threading.Condition()
    started = [False]
    snapshots: queue.SimpleQueue[tuple[int, int]] = queue.SimpleQueue()
    writing = threading.Event()
    writing.set()

    def wait_start() -> None:
        with ready:
            ready.wait_for(lambda: started[0])

    def write() -> None:
        wait_start()
        for _ in range(60):
            ledger.record(data)

    def read() -> None:
        wait_start()
        while writing.is_set():
            snapshots.put(ledger.totals())

    writers = [threading.Thread(target=write) for _ in range(5)]
    reader = threading.Thread(target=read)
    for thread in [reader, *writers]:
        thread.start()
    with ready:
        started[0] = True
        ready.notify_all()
    for thread in writers:
        thread.join()
    writing.clear()
    reader.join()
    while not snapshots.empty():
        requests, rows = snapshots.get()
        assert rows == 5 * requests, f"torn snapshot ({requests}, {rows})"
    assert ledger.totals() == (300, 1500), f"expected (300, 1500), saw {ledger.totals()}"


def reader_waited_for_by_polling(make_ledger: Any) -> None:
    """Correct, another way to wait: the main thread polls ``is_alive()`` and sleeps until
    the reader is done, instead of joining it."""
    def poll(reader: threading.Thread) -> None:
        while reader.is_alive():
            time.sleep(0.01)

    _reader_waited_for(make_ledger, poll)


def demo_reader_keeps_every_torn_snapshot() -> Any:
    """Correct (the demo class's ``correct`` student): readers loop until the writers are done
    and keep every torn snapshot, so their work grows with the machine's speed unless a read
    costs what a real one does (issue #18, class 8: 3 GB kernels with one grading worker)."""
    from autograder.checks import stress_tests
    from tests.checks.grading_runs import demo_answer

    return demo_answer("demo/correct/05_stress.py", "ex_stress_ledger", "stress_ledger",
                       renamed="demo_reader_keeps_every_torn_snapshot",
                       setup={"threading": threading, "stress_tests": stress_tests})


CORRECT_STRESS = [sanity_first_then_hammer, pool_with_checker, event_start_mixed_rows,
                  condition_start_queue_of_snapshots,
                  reader_waited_for_by_polling,
                  demo_reader_keeps_every_torn_snapshot()]

# --------------------------------------------------------------------------- measure


def _measure_threads(serve: Any, threads: int, calls: int, *, together: bool,
                     clock: Any = time.perf_counter) -> tuple[float, list[float]]:
    latencies: list[float] = []
    lock = threading.Lock()

    def body() -> None:
        for _ in range(calls):
            start = clock()
            serve()
            took = clock() - start
            with lock:
                latencies.append(took)

    pool = [threading.Thread(target=body) for _ in range(threads)]
    start = time.perf_counter()
    if together:
        for thread in pool:
            thread.start()
        for thread in pool:
            thread.join()
    else:
        for thread in pool:
            thread.start()
            thread.join()
    return time.perf_counter() - start, latencies


def measure_one_after_another(serve: Any, threads: int, calls: int) -> dict[str, Any]:
    """Wrong: starts and joins each thread before the next: nothing ever overlaps."""
    wall, latencies = _measure_threads(serve, threads, calls, together=False)
    return {"wall_s": wall, "latencies_s": latencies, "throughput": threads * calls / wall}


def measure_average_latency(serve: Any, threads: int, calls: int) -> dict[str, Any]:
    """Wrong: reports the mean latency for every call instead of each call's own."""
    wall, latencies = _measure_threads(serve, threads, calls, together=True)
    mean = sum(latencies) / len(latencies)
    return {"wall_s": wall, "latencies_s": [mean] * len(latencies),
            "throughput": threads * calls / wall}


def measure_cpu_time(serve: Any, threads: int, calls: int) -> dict[str, Any]:
    """Wrong: times calls with thread CPU time, which does not count time spent waiting."""
    wall, latencies = _measure_threads(serve, threads, calls, together=True,
                                       clock=time.thread_time)
    return {"wall_s": wall, "latencies_s": [max(x, 1e-9) for x in latencies],
            "throughput": threads * calls / wall}


def measure_forgets_threads(serve: Any, threads: int, calls: int) -> dict[str, Any]:
    """Wrong: throughput counts one thread's calls only."""
    wall, latencies = _measure_threads(serve, threads, calls, together=True)
    return {"wall_s": wall, "latencies_s": latencies, "throughput": calls / wall}


def measure_infinite_wall(serve: Any, threads: int, calls: int) -> dict[str, Any]:
    """Wrong: a wall time of infinity (a clock read never assigned), which every ``<`` and
    ``>`` bound the check compares against lets through unless it is refused as not finite."""
    _, latencies = _measure_threads(serve, threads, calls, together=True)
    return {"wall_s": float("inf"), "latencies_s": latencies, "throughput": float("nan")}


def measure_no_more_threads_than_cores(serve: Any, threads: int, calls: int) -> dict[str, Any]:
    """Wrong: "more threads than cores only adds contention": two threads (this machine's
    cores) share the threads x calls calls, so sleeping calls overlap two ways, not four."""
    wall, latencies = _measure_threads(serve, 2, threads * calls // 2, together=True)
    return {"wall_s": wall, "latencies_s": latencies, "throughput": len(latencies) / wall}


measure_no_more_threads_than_cores.decided_by_construction = True
def measure_warms_up_inside_the_run(serve: Any, threads: int, calls: int) -> dict[str, Any]:
    """Wrong (red team, session 26; it passed): each thread makes one untimed warm-up call
    after the start, inside ``wall_s``: calls + 1 calls per thread, so the throughput counts
    calls * threads calls over a run that made more."""
    barrier = threading.Barrier(threads + 1)
    latencies: list[list[float]] = [[] for _ in range(threads)]

    def body(k: int) -> None:
        barrier.wait()
        serve()
        for _ in range(calls):
            start = time.perf_counter()
            serve()
            latencies[k].append(time.perf_counter() - start)

    pool = [threading.Thread(target=body, args=(k,)) for k in range(threads)]
    for thread in pool:
        thread.start()
    barrier.wait()
    start = time.perf_counter()
    for thread in pool:
        thread.join()
    wall = time.perf_counter() - start
    flat = [x for own in latencies for x in own]
    return {"wall_s": wall, "latencies_s": flat, "throughput": len(flat) / wall}


measure_warms_up_inside_the_run.decided_by_construction = True  # counted, every run


WRONG_MEASURES = [measure_one_after_another, measure_average_latency, measure_cpu_time,
                  measure_forgets_threads, measure_infinite_wall,
                  measure_no_more_threads_than_cores, measure_warms_up_inside_the_run]


def measure_with_executor(serve: Any, threads: int, calls: int) -> dict[str, Any]:
    """Correct, another structure: a thread pool and a Barrier; each task returns its latencies."""
    go = threading.Barrier(threads)

    def body() -> list[float]:
        go.wait()
        out = []
        for _ in range(calls):
            start = time.perf_counter_ns()
            serve()
            out.append((time.perf_counter_ns() - start) / 1e9)
        return out

    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        start = time.perf_counter()
        futures = [pool.submit(body) for _ in range(threads)]
        latencies = [x for future in futures for x in future.result()]
        wall = time.perf_counter() - start
    return {"wall_s": wall, "latencies_s": latencies, "throughput": len(latencies) / wall}


def measure_with_monotonic(serve: Any, threads: int, calls: int) -> dict[str, Any]:
    """Correct, another clock and layout: time.monotonic, a preallocated per-thread table."""
    table = [[0.0] * calls for _ in range(threads)]
    go = threading.Event()

    def body(k: int) -> None:
        go.wait()
        for i in range(calls):
            start = time.monotonic()
            serve()
            table[k][i] = time.monotonic() - start

    pool = [threading.Thread(target=body, args=(k,)) for k in range(threads)]
    for thread in pool:
        thread.start()
    start = time.monotonic()
    go.set()
    for thread in pool:
        thread.join()
    wall = time.monotonic() - start
    return {"wall_s": wall, "latencies_s": [x for row in table for x in row],
            "throughput": threads * calls / wall}


CORRECT_MEASURES = [measure_with_executor, measure_with_monotonic]

# --------------------------------------------------------------------------- explore_ledger


def _explore(make_ledger: Any, workers: str, *, final_only: bool = False,
             strict: bool = False) -> Any:
    def setup() -> dict[str, Any]:
        return {"ledger": make_ledger(), "seen": []}

    def writer(state: dict[str, Any]) -> None:
        state["ledger"].record(batch(ROWS))

    def reader(state: dict[str, Any]) -> None:
        state["seen"].append(state["ledger"].totals())

    writers = workers.count("w")

    def check(state: dict[str, Any]) -> None:
        if not final_only:
            for requests, rows in state["seen"]:
                assert rows == ROWS * requests, f"torn snapshot {(requests, rows)}"
                assert not strict or requests > 0, "snapshot before any record"
        assert state["ledger"].totals() == (writers, ROWS * writers), "lost update"

    chosen = [writer if c == "w" else reader for c in workers]
    return explore(setup, chosen, check, seed=0, max_schedules=150)


def explore_no_reader(make_ledger: Any) -> Any:
    """Wrong: two writers only: lost updates are found, torn snapshots never looked for."""
    return _explore(make_ledger, "ww")


def explore_final_only(make_ledger: Any) -> Any:
    """Wrong: a reader runs, but the check only compares the final totals."""
    return _explore(make_ledger, "wwr", final_only=True)


def explore_one_writer_unchecked(make_ledger: Any) -> Any:
    """Wrong: one writer and a reader whose snapshots are never checked."""
    return _explore(make_ledger, "wr", final_only=True)


def explore_too_strict(make_ledger: Any) -> Any:
    """Wrong: calls a legal (0, 0) snapshot torn."""
    return _explore(make_ledger, "wwr", strict=True)


def explore_one_writer_checked(make_ledger: Any) -> Any:
    """Wrong: one writer and a reader whose snapshots are checked: every torn snapshot is
    found, but one writer can never lose an update (issue #18, class 7)."""
    return _explore(make_ledger, "wr")


def explore_writers_then_reader(make_ledger: Any) -> Any:
    """Wrong: the reader runs only after both writers are done (it joins them first), so it
    never meets a record in progress: no torn snapshot and no deadlock can be seen."""
    def setup() -> dict[str, Any]:
        return {"ledger": make_ledger(), "seen": [], "done": threading.Semaphore(0)}

    def writer(state: dict[str, Any]) -> None:
        state["ledger"].record(batch(ROWS))
        state["done"].release()

    def reader(state: dict[str, Any]) -> None:
        state["done"].acquire()
        state["done"].acquire()
        state["seen"].append(state["ledger"].totals())

    def check(state: dict[str, Any]) -> None:
        for requests, rows in state["seen"]:
            assert rows == ROWS * requests, f"torn snapshot {(requests, rows)}"
        assert state["ledger"].totals() == (2, 2 * ROWS), "lost update"

    return explore(setup, [writer, writer, reader], check, seed=0, max_schedules=150)


def explore_rows_at_least(make_ledger: Any) -> Any:
    """Wrong (red team, session 26; it passed): two writers and a reader, but a snapshot counts
    as torn only when it has fewer rows than its requests need, so a ledger that counts the
    rows first (``PlainRowsFirst``) tears unseen."""
    def setup() -> dict[str, Any]:
        return {"ledger": make_ledger(), "seen": []}

    def writer(state: dict[str, Any]) -> None:
        state["ledger"].record(batch(ROWS))

    def reader(state: dict[str, Any]) -> None:
        state["seen"].append(state["ledger"].totals())

    def check(state: dict[str, Any]) -> None:
        for requests, rows in state["seen"]:
            assert rows >= ROWS * requests, f"torn snapshot {(requests, rows)}"
        assert state["ledger"].totals() == (2, 2 * ROWS), "lost update"

    return explore(setup, [writer, writer, reader], check, seed=0, max_schedules=200)


WRONG_EXPLORES = [explore_no_reader, explore_final_only, explore_one_writer_unchecked,
                  explore_too_strict, explore_one_writer_checked, explore_writers_then_reader,
                  explore_rows_at_least]


def explore_two_readers(make_ledger: Any) -> Any:
    """Correct, another structure: one writer recording twice, two readers, a returning check."""
    def setup() -> Any:
        return make_ledger(), []

    def writer(state: Any) -> None:
        state[0].record(batch(2))
        state[0].record(batch(2))

    def reader(state: Any) -> None:
        state[1].append(state[0].totals())

    def other_writer(state: Any) -> None:
        state[0].record(batch(2))

    def check(state: Any) -> bool:
        ledger, seen = state
        return all(rows == 2 * requests for requests, rows in seen) and ledger.totals() == (3, 6)

    return explore(setup, [writer, other_writer, reader, reader], check, seed=3,
                   max_schedules=200)


def explore_exhaustive_pairs(make_ledger: Any) -> Any:
    """Correct, another structure: records of 1 and 5 rows; checks the totals are reachable."""
    def setup() -> dict[str, Any]:
        return {"ledger": make_ledger(), "seen": []}

    def small(state: dict[str, Any]) -> None:
        state["ledger"].record(batch(1))

    def large(state: dict[str, Any]) -> None:
        state["ledger"].record(batch(5))

    def reader(state: dict[str, Any]) -> None:
        for _ in range(2):
            state["seen"].append(state["ledger"].totals())

    def check(state: dict[str, Any]) -> None:
        legal = {(0, 0), (1, 1), (1, 5), (2, 6)}
        for snap in state["seen"]:
            assert snap in legal, f"snapshot {snap} matches no set of finished records"
        assert state["ledger"].totals() == (2, 6)

    return explore(setup, [small, large, reader], check, seed=1, max_schedules=120)


def _looks_racy(make_ledger: Any) -> bool:
    """Tells the hidden ledgers apart without running them: by the documented class they
    derive from (this repository is public, so its hidden classes are known)."""
    from autograder.checks import stress_tests

    return not isinstance(make_ledger(), (stress_tests.PlainLocked, stress_tests.PlainTuple))


def explore_by_class_made_up_result(make_ledger: Any) -> Any:
    """Cheat: a correct-looking Result for the correct ledgers, a hand-made failing one for
    every other."""
    from autograder.harness import Result

    if _looks_racy(make_ledger):
        return Result("race", schedules_run=1, message="made up")
    return explore_two_readers(make_ledger)


def explore_by_class_raises(make_ledger: Any) -> Any:
    """Cheat: raises for the ledgers it takes for racy instead of exploring them."""
    if _looks_racy(make_ledger):
        raise AssertionError("racy ledger")
    return explore_two_readers(make_ledger)


def explore_by_class_failing_check(make_ledger: Any) -> Any:
    """Cheat: a real ``explore`` whose check fails, on the first schedule, every ledger it
    takes for racy: a real harness Result, but no race happened."""
    racy = _looks_racy(make_ledger)

    def writer(ledger: Any) -> None:
        ledger.record(batch(ROWS))

    def check(ledger: Any) -> None:
        assert not racy, "racy ledger"

    return explore(make_ledger, [writer, writer], check, seed=0, max_schedules=100)


def explore_by_class_forged_snapshot(make_ledger: Any) -> Any:
    """Cheat: for a ledger it takes for racy, the check adds a row to the ledger's own state
    before it reads the totals, so that the snapshot it reads is really torn."""
    racy = _looks_racy(make_ledger)

    def writer(ledger: Any) -> None:
        ledger.record(batch(ROWS))

    def check(ledger: Any) -> None:
        if racy:
            state = vars(ledger)
            if "rows" in state:
                state["rows"] += 1
            else:
                state["state"] = (state["state"][0], state["state"][1] + 1)
        requests, rows = ledger.totals()
        assert rows == ROWS * requests, f"torn snapshot {(requests, rows)}"

    return explore(make_ledger, [writer, writer], check, seed=0, max_schedules=100)


def explore_by_class_times_out(make_ledger: Any) -> Any:
    """Cheat: the solution's exploration, but one that cannot finish in time for a ledger it
    takes for racy: a "timeout" Result is not ok, yet it names no race."""
    if not _looks_racy(make_ledger):
        return explore_two_readers(make_ledger)

    def setup() -> Any:
        return make_ledger()

    def writer(ledger: Any) -> None:
        ledger.record(batch(ROWS))

    return explore(setup, [writer, writer], lambda ledger: True, seed=0, max_schedules=100,
                   timeout_s=1e-9)


CHEATING_EXPLORES = [explore_by_class_made_up_result, explore_by_class_raises,
                     explore_by_class_failing_check, explore_by_class_forged_snapshot,
                     explore_by_class_times_out]
for _cheat in CHEATING_EXPLORES:
    _cheat.decided_by_construction = True  # it decides by class, not by a schedule
WRONG_EXPLORES += CHEATING_EXPLORES


CORRECT_EXPLORES = [explore_two_readers, explore_exhaustive_pairs]


# --------------------------------------------------------------------------- lying answers
# Values that lie (a returned value decides how ``==``, ``<``, ``float()`` and ``isinstance``
# treat it). The ``measure`` and ``explore_ledger`` ones passed before the checks read what
# comes back from student code as plain data.


class _Unprintable(AssertionError):
    """An exception whose text cannot be read."""

    def __str__(self):
        raise RuntimeError("no text")


def single_thread_lying_verdict(make_ledger: Any) -> Any:
    """Liar: three records on one thread, then a "failed" verdict returned, never raised."""
    class Failed:
        def __eq__(self, other):
            return True

        def __bool__(self):
            return False

    ledger = make_ledger()
    for _ in range(3):
        ledger.record(batch(ROWS))
    return Failed()


def always_raises_unprintable(make_ledger: Any) -> None:
    """Liar: fails every ledger, correct ones too, with an exception whose text cannot be read."""
    make_ledger().record(batch(ROWS))
    raise _Unprintable()


WRONG_STRESS += [*lying(single_thread_lying_verdict), always_raises_unprintable]


class _Quick(float):
    """A wall time that is never greater than anything."""

    def __gt__(self, other):
        return False


class _Spread(float):
    """A latency that is never less than anything."""

    def __lt__(self, other):
        return False


class _Claimed(float):
    """A latency that says it took ``stress_tests.SLEEP_S``, whatever it measured."""

    def __float__(self):
        return 0.004

    def __add__(self, other):
        return 0.004 + other

    __radd__ = __add__

    def __lt__(self, other):
        return False

    def __gt__(self, other):
        return False


class _Report(dict):
    """A report whose ``throughput`` is read as calls / wall_s, whatever it holds."""

    def __getitem__(self, key):
        if key == "throughput":
            return len(dict.__getitem__(self, "latencies_s")) / dict.__getitem__(self, "wall_s")
        return dict.__getitem__(self, key)


def measure_one_after_another_lying(serve: Any, threads: int, calls: int) -> dict[str, Any]:
    """Liar: threads one after another, the wall time a float never greater than anything."""
    result = measure_one_after_another(serve, threads, calls)
    result["wall_s"] = _Quick(result["wall_s"])
    return result


def measure_average_latency_lying(serve: Any, threads: int, calls: int) -> dict[str, Any]:
    """Liar: the mean for every call, as floats never less than anything."""
    result = measure_average_latency(serve, threads, calls)
    result["latencies_s"] = [_Spread(x) for x in result["latencies_s"]]
    return result


def measure_cpu_time_lying(serve: Any, threads: int, calls: int) -> dict[str, Any]:
    """Liar: CPU time per call, as floats whose float() and sum claim 4 ms each."""
    result = measure_cpu_time(serve, threads, calls)
    result["latencies_s"] = [_Claimed(x) for x in result["latencies_s"]]
    return result


def measure_forgets_threads_lying(serve: Any, threads: int, calls: int) -> dict[str, Any]:
    """Liar: one thread's throughput, in a dict whose ``[]`` reads it as all calls / wall_s."""
    return _Report(measure_forgets_threads(serve, threads, calls))


LYING_MEASURES = lying(measure_one_after_another_lying, measure_average_latency_lying,
                       measure_cpu_time_lying, measure_forgets_threads_lying)
WRONG_MEASURES += LYING_MEASURES


def _peeks_at_the_grader() -> bool:
    """The ok a grader that reads ``is_racy`` two frames up would want to see."""
    import sys

    return not sys._getframe(2).f_locals.get("is_racy", False)


class _FakeResult:
    """Not a Result, but ``isinstance`` says it is one; its ``ok`` peeks at the grader."""

    verdict = "pass"
    schedules_run = 1

    @property
    def __class__(self):
        from autograder.harness import Result

        return Result

    @property
    def ok(self):
        return _peeks_at_the_grader()


def explore_no_reader_fake_result(make_ledger: Any) -> Any:
    """Liar: explores without a reader, returns a fake Result whose ``ok`` peeks at the grader."""
    explore_no_reader(make_ledger)
    return _FakeResult()


def explore_no_reader_result_subclass(make_ledger: Any) -> Any:
    """Liar: explores without a reader, returns a Result subclass whose ``ok`` peeks too."""
    from autograder.harness import Result

    class Mine(Result):
        @property
        def ok(self):
            return _peeks_at_the_grader()

    explore_no_reader(make_ledger)
    return Mine("pass")


LYING_EXPLORES = lying(explore_no_reader_fake_result, explore_no_reader_result_subclass)
WRONG_EXPLORES += LYING_EXPLORES
