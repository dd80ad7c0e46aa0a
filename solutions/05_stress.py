# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Find races before your users do: stress tests and benchmarks
#
# A race that shows up once a week in production shows up zero times in a test that runs two
# threads for a millisecond. In this lesson you write tests that make races show up every time
# they exist, and benchmarks whose numbers you can trust.
#
# **What you will see break.** A request ledger that loses updates under load, while a quick
# threaded test passes it in some runs and fails it in others; a test that retries until it
# passes, hiding the race; and a race that no test with real threads finds, because the GIL
# hides it, which the controlled scheduler finds in a few schedules.
#
# **What you will build.**
#
# 1. `stress_ledger`: a stress test for a ledger interface, graded by running it against
#    hidden implementations, racy and correct.
# 2. `measure`: a multi-threaded benchmark whose numbers obey physics.
# 3. `explore_ledger`: the same property checked by the controlled scheduler, for races the
#    GIL hides.
#
# You then benchmark three ways to serve one Keras model from several threads, and run
# `tf.test.Benchmark` the ways people use it, to see what it does and does not test.
#
# **How long it takes.** About 45 minutes; the notebook runs top to bottom in about a minute
# on two cores. Every number it prints is measured while you watch. Lessons 01 and 02 come
# first.

# %% [markdown]
# ## Setup
#
# `autograder.checks.stress_tests` holds the small helpers and the graders; `explore` and
# `stress` are the harness's controlled scheduler and stress runner.

# %%
import os

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"

import inspect
import threading
import time

import keras
import matplotlib.pyplot as plt
import numpy as np
import tensorflow as tf

from autograder.checks import stress_tests
from autograder.harness import explore, stress
from autograder.lesson import claim, quick_test_passed

# %matplotlib inline
tf.get_logger().setLevel("ERROR")
print("TensorFlow", tf.__version__)
print("Keras", keras.__version__)

# %% [markdown]
# ## The ledger
#
# An inference server keeps a ledger of what it served. Every request thread calls
# `record(batch)`; a dashboard calls `totals()`. The contract:
#
# - `record(batch)` counts one request of `len(batch)` rows;
# - `totals()` returns `(requests, rows)`, in which every recorded request is counted in both
#   numbers or in neither, and no request is ever lost.
#
# Here is a first version. It keeps its counters in `tf.Variable`s, so it can live next to
# the model, and asks TensorFlow for the batch size:

# %%
class VariableLedger:
    def __init__(self):
        self.requests = tf.Variable(0, dtype=tf.int64)
        self.rows = tf.Variable(0, dtype=tf.int64)

    def record(self, batch):
        self.requests.assign(self.requests + 1)
        self.rows.assign(self.rows + int(tf.shape(batch)[0]))

    def totals(self):
        return int(self.requests.numpy()), int(self.rows.numpy())


ledger = VariableLedger()
ledger.record(stress_tests.batch(3))
ledger.record(stress_tests.batch(2))
print(ledger.totals())

# %% [markdown]
# ## See it break
#
# ### A quick test passes it, sometimes
#
# A first test starts two threads that record two batches each, one thread after the other,
# and checks the totals at the end. Run it 30 times, and on (at most 1,000 runs) until it has
# both passed and failed:

# %%
def quick_test(make_ledger, threads=2, records=2):
    ledger = make_ledger()
    data = stress_tests.batch(3)
    pool = [threading.Thread(target=lambda: [ledger.record(data) for _ in range(records)])
            for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    expected = (threads * records, 3 * threads * records)
    assert ledger.totals() == expected, f"expected {expected}, saw {ledger.totals()}"


def caught(test, make_ledger, n):
    """How many of n runs of test(make_ledger) raised AssertionError."""
    count = 0
    for _ in range(n):
        try:
            test(make_ledger)
        except AssertionError:
            count += 1
    return count


n, MOST_RUNS = 30, 1000
quick_failed, quick_runs = 0, 0
while quick_runs < n or (quick_failed in (0, quick_runs) and quick_runs < MOST_RUNS):
    quick_failed += caught(quick_test, VariableLedger, 1)
    quick_runs += 1
print(f"quick test failed the ledger in {quick_failed} of {quick_runs} runs, passed it in "
      f"{quick_runs - quick_failed}")
claim("the quick test passed the racy ledger in some runs and failed it in others",
      0 < quick_failed < quick_runs)

# %% [markdown]
# The ledger is racy: `self.requests.assign(self.requests + 1)` reads the variable in one
# TensorFlow op and writes it in another, and TensorFlow releases the GIL while each op runs,
# so two threads can both read 7 and both write 8. The quick test gives a different verdict
# from run to run: each thread finishes its two records in about the time the next thread
# takes to start, so whether the threads run at the same time, and for how long, is luck. How
# often it catches the race depends on how busy the machine is, which is the worst property a
# test can have.
#
# ### A stress test makes it show
#
# A stress test makes the threads overlap on purpose: it starts them all, holds them at a
# `threading.Barrier` until every one is ready, gives each enough work to keep running while
# the others do (hundreds of calls, not ten), and checks an invariant, here the final totals.
# It also records when each thread ran, to prove the threads did overlap:

# %%
def aligned_test(make_ledger, threads=4, records=100):
    ledger = make_ledger()
    data = stress_tests.batch(3)
    barrier = threading.Barrier(threads)
    spans = []

    def writer():
        barrier.wait()
        start = time.perf_counter()
        for _ in range(records):
            ledger.record(data)
        spans.append((start, time.perf_counter()))

    pool = [threading.Thread(target=writer) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    aligned_test.overlap = max(0.0, min(e for _, e in spans) - max(s for s, _ in spans))
    expected = (threads * records, 3 * threads * records)
    assert ledger.totals() == expected, f"expected {expected}, saw {ledger.totals()}"


aligned_failed = caught(aligned_test, VariableLedger, n)
print(f"aligned test failed the ledger in {aligned_failed} of {n} runs")
aligned_test(stress_tests.LockedLedger)
print(f"on a correct ledger, all four threads ran at once for {aligned_test.overlap * 1000:.0f} ms")
claim("the aligned test failed the racy ledger in every run, and its threads overlapped",
      aligned_failed == n and aligned_test.overlap > 0)

# %% [markdown]
# ### Retries hide the bug
#
# A test that fails now and then gets called "flaky", and a common reflex is to retry it.
# Retry the quick test up to three times, and pass when any attempt passes. Count, besides
# the runs it fails, the runs it passes although an earlier attempt had caught the race (30
# runs, and on, at most 1,000, until there is one):

# %%
def quick_test_with_retries(make_ledger, caught_attempts):
    for attempt in range(3):
        try:
            return quick_test(make_ledger)
        except AssertionError:
            caught_attempts.append(attempt)
    raise AssertionError("failed three times in a row")


retried_failed = hidden = retried_runs = 0
while retried_runs < n or (hidden == 0 and retried_runs < MOST_RUNS):
    caught_attempts = []
    retried_runs += 1
    try:
        quick_test_with_retries(VariableLedger, caught_attempts)
    except AssertionError:
        retried_failed += 1
    else:
        hidden += bool(caught_attempts)
print(f"without retries: failed {quick_failed} of {quick_runs} runs (above)")
print(f"with retries:    failed {retried_failed} of {retried_runs} runs; passed {hidden} runs in "
      "which an attempt had caught the race")
claim("the retries passed at least one run in which an attempt had caught the race", hidden >= 1)

# %% [markdown]
# Each run counted on the last line had a failing attempt: the test found the lost update,
# and the retry threw the finding away. A retry passes whenever any attempt passes, so every
# retry multiplies the chance that a real race slips through. A failing stress test is a found
# bug: keep the failure, never retry it away.
#
# ### The GIL hides some races from every stress test
#
# Now a ledger in plain Python, with no lock at all:

# %%
class PlainLedger:
    def __init__(self):
        self.requests = 0
        self.rows = 0

    def record(self, batch):
        self.requests += 1
        self.rows += len(batch)

    def totals(self):
        return self.requests, self.rows

# %% [markdown]
# Run the aligned test on it as many times as on the tensor ledger:

# %%
plain_failed = caught(aligned_test, PlainLedger, n)
print(f"aligned test failed the plain ledger in {plain_failed} of {n} runs")
claim("the aligned test never failed the plain Python ledger", plain_failed == 0)

# %% [markdown]
# It is just as racy (`self.requests += 1` is a read, an add and a write), but CPython 3.11
# switches threads only at calls and loop back-edges, and `record` has none between its read
# and its write. Not even `sys.setswitchinterval(1e-6)`, which the harness's `stress` runner
# sets, changes that. Run the same kind of test with `stress`: one trial per barrier-aligned
# start, four writers, 20,000 records each (enough work for the threads to overlap, which
# `stress` checks and reports):

# %%
def plain_setup():
    return PlainLedger()


def plain_writer(ledger):
    for _ in range(20_000):
        ledger.record([0, 0, 0])


def plain_totals(ledger):
    assert ledger.totals() == (80_000, 240_000), f"lost updates: totals {ledger.totals()}"


plain_stress = stress(plain_setup, [plain_writer] * 4, plain_totals, trials=20)
print("stress:", plain_stress.verdict, "after", plain_stress.schedules_run, "trials")
print(plain_stress.message.splitlines()[0] if plain_stress.message else "")
claim("stress found nothing wrong with the plain ledger", plain_stress.ok)

# %% [markdown]
# The controlled scheduler does not wait for the interpreter to switch: it picks the next
# thread itself before every instruction that another thread could see. Give it two writers
# of one record each and a dashboard that takes one snapshot:

# %%
def setup():
    return {"ledger": PlainLedger(), "seen": []}


def writer(state):
    state["ledger"].record([0, 0, 0])


def dashboard(state):
    state["seen"].append(state["ledger"].totals())


def consistent(state):
    for requests, rows in state["seen"]:
        assert rows == 3 * requests, f"torn snapshot: {requests} requests but {rows} rows"
    assert state["ledger"].totals() == (2, 6), f"lost update: totals {state['ledger'].totals()}"


found = explore(setup, [writer, writer, dashboard], consistent, seed=0)
print(found.verdict, "after", found.schedules_run, "schedules")
print(found.message.splitlines()[0])
claim("the scheduler found the plain ledger's race", found.verdict == "race")

# %% [markdown]
# ## See why
#
# Draw the interleaving the scheduler found, one lane per thread:

# %%
found.figure()

# %% [markdown]
# And count how reliable each tool is over ten seeds or trials, on the same plain ledger:

# %%
seeds = 10
by_seed = [explore(setup, [writer, writer, dashboard], consistent, seed=s) for s in range(seeds)]
print(f"explore found the race with {sum(not r.ok for r in by_seed)} of {seeds} seeds, "
      f"in {[r.schedules_run for r in by_seed]} schedules")
aligned_found = caught(aligned_test, PlainLedger, seeds)
print(f"the aligned stress test found it in {aligned_found} of {seeds} runs")
claim("explore found the race with every seed; the aligned stress test in no run",
      all(not r.ok for r in by_seed) and aligned_found == 0)

# %% [markdown]
# Use both. A stress test with real threads finds races inside TensorFlow ops and between
# ops that release the GIL, which the scheduler runs atomically; the scheduler finds races in
# your Python code that the GIL hides today, and that a free-threaded Python, or one more
# function call inside `record`, would expose tomorrow.

# %% [markdown]
# ## Fix it
#
# ### Exercise 1: a stress test that catches every racy ledger
#
# Write `stress_ledger(make_ledger)`. `make_ledger()` returns a fresh, empty ledger with the
# contract above. Your test must raise `AssertionError` when the ledger breaks the contract
# and return normally when it keeps it.
#
# It is graded by running it against hidden ledgers: several racy ones (each either loses
# updates or lets `totals()` see a request counted in one number but not the other; each has
# a TensorFlow call inside its race window, which releases the GIL, then yields the core with
# `time.sleep(0)` as a ledger that writes a log line would) and several correct ones
# (built with different primitives). Your test must fail every racy one and pass every correct
# one, on every grading run, taking at most 20 s per ledger (aim for 1 s); a test that raises anything else
# or hangs counts as failing that ledger. A racy ledger counts as caught only when your test
# failed it after calling it from two threads at once: a race that never happened cannot have
# been seen. One more racy ledger behaves as a flaky bug does: the first ledger your test
# stresses with two `record()` calls at once races, and every ledger made after it is sound.
# A test that retries a failed trial on a fresh ledger passes it; keep the first failure.
# Think about:
#
# - starting the threads together, and giving each enough work to overlap;
# - which invariant a reader can check *while* writers run, not only at the end;
# - what a correct ledger may legally return (a snapshot taken before any record, for one);
# - waiting for every thread you start before you check what it saw: on one racy ledger the
#   grader keeps your reader inside `totals()` until your test joins it, and only that last
#   call returns a torn snapshot, so a test that returns without `join()` (or sleeps
#   instead), or checks what its reader saw before joining it, fails every time.
#
# Use `stress_tests.batch(rows)` to make a batch.

# %% nbgrader={"grade": false, "grade_id": "ex_stress_ledger", "locked": false, "schema_version": 3, "solution": true, "task": false}
def stress_ledger(make_ledger):
    """Raise AssertionError if the ledger loses requests or tears a snapshot under load."""
    ### BEGIN SOLUTION
    writers, records, rows = 4, 100, 3
    data = stress_tests.batch(rows)
    ledger = make_ledger()
    barrier = threading.Barrier(writers + 1)
    writing = threading.Event()
    writing.set()
    torn = []

    def write():
        barrier.wait()
        for _ in range(records):
            ledger.record(data)

    def read():
        barrier.wait()
        while writing.is_set():
            requests, seen_rows = ledger.totals()
            if seen_rows != rows * requests:
                torn.append((requests, seen_rows))

    pool = [threading.Thread(target=write) for _ in range(writers)]
    reader = threading.Thread(target=read)
    for thread in pool + [reader]:
        thread.start()
    for thread in pool:
        thread.join()
    writing.clear()
    reader.join()
    assert not torn, f"{len(torn)} torn snapshots, e.g. {torn[0]} (expected rows = {rows} x requests)"
    expected = (writers * records, rows * writers * records)
    assert ledger.totals() == expected, f"expected totals {expected}, saw {ledger.totals()}"
    ### END SOLUTION


# %%
stress_ledger(stress_tests.LockedLedger)
print("passes a correct ledger")
try:
    stress_ledger(VariableLedger)
except AssertionError as error:
    print("fails the racy ledger:", error)

# %% nbgrader={"grade": true, "grade_id": "test_stress_ledger", "locked": true, "points": 5, "schema_version": 3, "solution": false, "task": false}
stress_tests.check_stress_test(stress_ledger, racy=[stress_tests.AssignLedger],
                               correct=[stress_tests.LockedLedger])
quick_test_passed()
### BEGIN HIDDEN TESTS
stress_tests.check_stress_test(stress_ledger)
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 2: a benchmark whose numbers obey physics
#
# Write `measure(serve, threads, calls)`. It runs `serve()` `calls` times on each of `threads`
# threads, all running at the same time, and returns a dict:
#
# - `"wall_s"`: seconds from the moment the threads start serving until the last one is done;
# - `"latencies_s"`: a list of `threads * calls` numbers, how long each call took;
# - `"throughput"`: calls served per second, over the whole run.
#
# The grader does not compare your numbers with any value. It runs `measure` on servers whose
# physics is known and checks the numbers obey it: `serve` is called from `threads` threads,
# whatever the number of cores (threads that sleep or wait on I/O overlap beyond it), `calls`
# times on each (a warm-up call inside the run would be one more, and skew the rate); every
# number is positive; no call takes longer than the run; the latencies fit in
# `threads * wall_s`; a call that sleeps 4 ms takes at least 4 ms; four threads sleeping at once
# finish much sooner than one after another, but behind one lock they cannot; and calls of 1 ms
# and 12 ms show up as such.

# %% nbgrader={"grade": false, "grade_id": "ex_stress_measure", "locked": false, "schema_version": 3, "solution": true, "task": false}
def measure(serve, threads, calls):
    """Run serve() calls times on each of threads threads at once; return wall, latencies, rate."""
    ### BEGIN SOLUTION
    barrier = threading.Barrier(threads + 1)
    latencies = [[] for _ in range(threads)]

    def body(k):
        barrier.wait()
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
    ### END SOLUTION


# %%
result = measure(lambda: time.sleep(0.005), threads=4, calls=5)
print(f"wall {result['wall_s'] * 1000:.1f} ms, {len(result['latencies_s'])} latencies, "
      f"{result['throughput']:.0f} calls/s")

# %% nbgrader={"grade": true, "grade_id": "test_stress_measure", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
r = measure(lambda: None, 2, 3)
assert set(r) >= {"wall_s", "latencies_s", "throughput"}, f"missing keys, saw {sorted(r)}"
assert len(r["latencies_s"]) == 6, f"expected 6 latencies for 2 threads x 3 calls, saw {len(r['latencies_s'])}"
quick_test_passed()
### BEGIN HIDDEN TESTS
stress_tests.check_measure(measure)
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 3: the same property, under the controlled scheduler
#
# Write `explore_ledger(make_ledger)`: call `explore` with your own `setup`, workers and check,
# and return its `Result`. It is graded on hidden pure-Python ledgers (no TensorFlow inside,
# so real threads never show their races): the `Result` must be not ok for every racy one and
# ok for every correct one, within 12 s per ledger. A few small workers are enough: the
# scheduler tries the interleavings for you, so choose workers and a check that can see both
# kinds of race (a lost request and a torn snapshot). Pass `seed=` and `max_schedules=` (200
# is plenty) so the grade is the same every run.
#
# Return the `Result` that `explore` gives you. The grader watches its hidden ledgers while you
# explore them, so a `Result` that is not ok counts against a racy ledger only when your
# exploration really broke that ledger: a `totals()` that no order of the records explains (a
# torn snapshot, or a lost update read after the writers), or a deadlock inside the ledger.
# Use the ledger only through `record()` and `totals()`.

# %% nbgrader={"grade": false, "grade_id": "ex_stress_explore", "locked": false, "schema_version": 3, "solution": true, "task": false}
def explore_ledger(make_ledger):
    """Explore two writers and a reader of a fresh ledger; return the harness Result."""
    ### BEGIN SOLUTION
    def setup_ledger():
        return {"ledger": make_ledger(), "seen": []}

    def write(state):
        state["ledger"].record(stress_tests.batch(3))

    def read(state):
        state["seen"].append(state["ledger"].totals())

    def check(state):
        for requests, rows in state["seen"]:
            assert rows == 3 * requests, f"torn snapshot: {requests} requests, {rows} rows"
        assert state["ledger"].totals() == (2, 6), f"lost update: {state['ledger'].totals()}"

    return explore(setup_ledger, [write, write, read], check, seed=0, max_schedules=200)
    ### END SOLUTION


# %%
print("plain ledger:", explore_ledger(PlainLedger).verdict)
print("locked ledger:", explore_ledger(stress_tests.PlainLocked).verdict)

# %% nbgrader={"grade": true, "grade_id": "test_stress_explore", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
assert not explore_ledger(PlainLedger).ok, "explore_ledger returned an ok Result for PlainLedger, which loses updates"
assert explore_ledger(stress_tests.PlainLocked).ok, "explore_ledger returned a failing Result for a correct, locked ledger"
quick_test_passed()
### BEGIN HIDDEN TESTS
stress_tests.check_explore_ledger(explore_ledger)
### END HIDDEN TESTS

# %% [markdown]
# ## Measure it
#
# ### `tf.test.Benchmark` on TensorFlow 2.21
#
# Many benchmark examples call `run_op_benchmark` with a fresh `tf.compat.v1.Session()`. In
# TensorFlow 2 eager mode there is no graph for that session to run. Try it:

# %%
bench = tf.test.Benchmark()
try:
    bench.run_op_benchmark(sess=tf.compat.v1.Session(), op_or_tensor=tf.constant(1.0) + 1,
                           burn_iters=1, min_iters=5)
    eager_error = None
except Exception as error:
    eager_error = error
    print(type(error).__name__, ":", error)
claim("run_op_benchmark with an eager tensor raised", eager_error is not None)

# %% [markdown]
# It needs a v1 graph, built under `tf.Graph().as_default()`, and a session on that graph:

# %%
graph = tf.Graph()
with graph.as_default():
    x = tf.random.normal((128, 128), seed=0)
    product = tf.matmul(x, x)
    with tf.compat.v1.Session(graph=graph) as session:
        entry = bench.run_op_benchmark(session, product, burn_iters=2, min_iters=50,
                                       name="matmul_128")
print(f"graph-mode matmul: {entry['wall_time'] * 1e6:.0f} us per run over {entry['iters']} runs")

# %% [markdown]
# In eager code, time it yourself and record the result with `report_benchmark`, which works
# in TensorFlow 2 and prints a benchmark entry. Time the same matmul eagerly:

# %%
x = tf.random.normal((128, 128), seed=0)
tf.matmul(x, x)
iters = 50
start = time.perf_counter()
for _ in range(iters):
    tf.matmul(x, x).numpy()
eager_s = (time.perf_counter() - start) / iters
bench.report_benchmark(iters=iters, wall_time=eager_s, name="matmul_128_eager")

# %% [markdown]
# ### What `tf.test.Benchmark` does not test
#
# The usual form is a subclass whose methods are named `benchmark_*`: `tf.test.main()` runs
# them when the test program is started with `--benchmarks=<regex>`, and each method times its
# own work and calls `report_benchmark`. Benchmark the racy `VariableLedger` that way, noting
# which threads ran its records:

# %%
class LedgerBenchmark(tf.test.Benchmark):
    def benchmark_record(self, iters=200):
        ledger, data, threads_used = VariableLedger(), stress_tests.batch(3), set()
        start = time.perf_counter()
        for _ in range(iters):
            threads_used.add(threading.current_thread().name)
            ledger.record(data)
        wall_time = (time.perf_counter() - start) / iters
        exact = ledger.totals() == (iters, 3 * iters)
        self.report_benchmark(iters=iters, wall_time=wall_time, name="variable_ledger_record",
                              extras={"threads": len(threads_used), "totals_exact": int(exact)})
        return threads_used, exact


threads_used, exact = LedgerBenchmark().benchmark_record()
print("threads that ran the records:", sorted(threads_used), "| totals exact:", exact)
print("run_op_benchmark's parameters:", list(inspect.signature(bench.run_op_benchmark).parameters))
claim("the benchmark ran the racy ledger on one thread, and its totals came out exact",
      len(threads_used) == 1 and exact)

# %% [markdown]
# `tf.test.Benchmark` times what you wrote, on the thread that called it: none of its
# parameters asks for threads, and the racy ledger passes its benchmark with exact totals
# every time. A benchmark tells you how fast, never whether it is correct under concurrency.
# For that you need a stress test (exercise 1) or the scheduler (exercise 3), and for a
# concurrent benchmark, threads you start yourself, as your `measure` does.

# %% [markdown]
# ### Three ways to serve one model from several threads
#
# Use your `measure` to compare, with four threads: one shared model behind a lock, one
# model copy per thread (no lock), and one shared, warmed model with no lock (safe for
# `predict_on_batch` on a warmed model, as lesson 01 showed). Each way runs three times, in
# turns, and the median counts, because single runs on a shared machine jump around:

# %%
model = keras.Sequential([keras.Input((32,)), keras.layers.Dense(256, activation="relu"),
                          keras.layers.Dense(10)])
data = np.ones((32, 32), "float32")
model.predict_on_batch(data)
predict_lock = threading.Lock()
copies = []
for _ in range(4):
    copy = keras.models.clone_model(model)
    copy.set_weights(model.get_weights())
    copy.predict_on_batch(data)
    copies.append(copy)


def serve_locked():
    with predict_lock:
        model.predict_on_batch(data)


def serve_shared():
    model.predict_on_batch(data)


def copies_server():
    free = list(copies)
    own = threading.local()

    def serve():
        if not hasattr(own, "model"):
            own.model = free.pop()
        own.model.predict_on_batch(data)
    return serve


rates = {"lock around predict": [], "copy per thread": [], "shared, no lock": []}
for _ in range(3):
    rates["lock around predict"].append(measure(serve_locked, 4, 40)["throughput"])
    rates["copy per thread"].append(measure(copies_server(), 4, 40)["throughput"])
    rates["shared, no lock"].append(measure(serve_shared, 4, 40)["throughput"])
medians = {name: float(np.median(values)) for name, values in rates.items()}
for name, value in medians.items():
    ratios = [v / locked for v, locked in zip(rates[name], rates["lock around predict"], strict=True)]
    print(f"{name:20s} {value:7.0f} requests/s  "
          f"({value / medians['lock around predict']:.2f}x the locked one; rounds "
          f"{min(ratios):.2f}x-{max(ratios):.2f}x)")
print("fastest in this run:", max(medians, key=medians.get))

# %%
fig, ax = plt.subplots(figsize=(6, 2.5))
ax.barh(list(medians), list(medians.values()), color=["tab:red", "tab:blue", "tab:green"])
ax.set_xlabel("requests per second, 4 threads (median)")
ax.invert_yaxis()
plt.show()

# %% [markdown]
# The lock makes four threads take turns inside TensorFlow; without it, one thread's Python
# can run while another's op computes with the GIL released. Copies cost memory (one set of
# weights per thread) and give each thread its own Keras call path. Read your numbers with
# care: each line shows, next to the median, the lowest and highest ratio of the three rounds.
# On a shared machine that spread can be wider than the differences between the ways, and a
# second run of this cell can rank them differently. That is the lesson: a benchmark on a busy
# machine needs interleaved repeats, medians and ratios, never one absolute timing, and a
# claim about which way is fastest needs the numbers from your own machine.
#
# ### TensorFlow's own thread pools
#
# Your Python threads are not the only threads. TensorFlow runs each op's work on its
# *intra-op* pool (a large matmul is split across its threads) and independent ops of one graph
# side by side on its *inter-op* pool. By default TensorFlow sizes both from the number of
# cores (`tf.config.threading` reports 0, "let TensorFlow choose"; the sizes can only be set
# before TensorFlow starts). So a single call to a large op can already keep every core busy.
# Measure what a second Python thread adds to a large matmul, with your `measure`:

# %%
print("inter-op threads:", tf.config.threading.get_inter_op_parallelism_threads(),
      "| intra-op threads:", tf.config.threading.get_intra_op_parallelism_threads(),
      "| cores:", os.cpu_count())
big = tf.random.normal((768, 768), seed=1)
tf.matmul(big, big).numpy()


def big_matmul():
    tf.matmul(big, big).numpy()


calls = 8
one_thread = measure(big_matmul, threads=1, calls=calls)["throughput"]
two_threads = measure(big_matmul, threads=2, calls=max(1, calls // 2))["throughput"]
gain = two_threads / one_thread
print(f"large matmul: 2 Python threads served {gain:.2f}x the matmuls per second of 1")
print("a second Python thread " + ("gained little: the op already used the cores"
                                   if gain < 1.3 else "still gained: the cores were not all busy"))

# %% [markdown]
# The last line is your run's verdict. Where one op already spreads over every core, more
# Python threads only queue more work for the same cores. Threads pay off where a call spends
# its time waiting with the GIL released, and for ops too small to be split.

# %% [markdown]
# ## Summary
#
# A race you did not provoke is a race you did not test: start threads together, give them
# enough work to overlap, check invariants while they run, never retry a failure away, and
# let the controlled scheduler find the races the GIL hides.
