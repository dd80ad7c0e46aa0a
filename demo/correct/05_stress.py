# Lesson 05 (stress tests and benchmarks), a student who answers every exercise correctly, in
# their own words: a thread pool and two readers, a monotonic clock, records of 1 and 5 rows.

# %% ex_stress_ledger
def stress_ledger(make_ledger):
    """Raise AssertionError if the ledger loses requests or tears a snapshot under load."""
    import concurrent.futures

    ledger = make_ledger()
    data = stress_tests.batch(2)
    start = threading.Barrier(6)
    done = threading.Event()

    def write():
        start.wait()
        for _ in range(100):
            ledger.record(data)

    def read():
        start.wait()
        bad = []
        while not done.is_set():
            requests, rows = ledger.totals()
            if rows != 2 * requests:
                bad.append((requests, rows))
        return bad

    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        readers = [pool.submit(read) for _ in range(2)]
        writers = [pool.submit(write) for _ in range(4)]
        for future in writers:
            future.result()
        done.set()
        torn = [snap for future in readers for snap in future.result()]
    assert not torn, f"torn snapshots such as {torn[0]}"
    assert ledger.totals() == (400, 800), f"expected (400, 800), saw {ledger.totals()}"

# %% ex_stress_measure
def measure(serve, threads, calls):
    """Run serve() calls times on each of threads threads at once; return wall, latencies, rate."""
    table = [[0.0] * calls for _ in range(threads)]
    go = threading.Event()

    def body(k):
        go.wait()
        for i in range(calls):
            t0 = time.monotonic()
            serve()
            table[k][i] = time.monotonic() - t0

    pool = [threading.Thread(target=body, args=(k,)) for k in range(threads)]
    for thread in pool:
        thread.start()
    t0 = time.monotonic()
    go.set()
    for thread in pool:
        thread.join()
    wall = time.monotonic() - t0
    return {"wall_s": wall, "latencies_s": [x for row in table for x in row],
            "throughput": threads * calls / wall}

# %% ex_stress_explore
def explore_ledger(make_ledger):
    """Explore two writers and a reader of a fresh ledger; return the harness Result."""
    def setup():
        return {"ledger": make_ledger(), "seen": []}

    def small(state):
        state["ledger"].record(stress_tests.batch(1))

    def large(state):
        state["ledger"].record(stress_tests.batch(5))

    def reader(state):
        for _ in range(2):
            state["seen"].append(state["ledger"].totals())

    def check(state):
        legal = {(0, 0), (1, 1), (1, 5), (2, 6)}
        for snap in state["seen"]:
            assert snap in legal, f"snapshot {snap} matches no set of finished records"
        assert state["ledger"].totals() == (2, 6)

    return explore(setup, [small, large, reader], check, seed=1, max_schedules=120)
