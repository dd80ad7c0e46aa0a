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
# # Threads or processes? Share one model across processes, and measure which wins
#
# You run one process per model copy, and wonder whether one process with many threads
# sharing one model would save memory, and whether it would be safe. Lessons 01 to 07 made
# the threaded design safe. This lesson asks the question before it: should the requests
# share one process at all? You measure both designs, and a third one that gets most of the
# memory back with processes: workers that all read one copy of the weights in shared memory.
#
# **What you will see.** N worker processes, each with its own copy of a Keras model, next to
# one process whose N threads share one copy, and next to N processes reading one copy in
# shared memory: their memory, counted so that shared pages are not counted N times.
#
# **What you will see break.** A process forked after TensorFlow has started its thread pool
# runs its next TensorFlow op and never finishes it (it hangs or crashes); a spawned one
# works. A pool that rebuilds the model for every task is slow. Processes that update one
# ledger in shared memory without a lock lose updates, exactly as threads did in lesson 00,
# and a `multiprocessing.Array` (which "has a lock") does not save them.
#
# **What you will measure.** Requests per second of each design on a workload that is mostly
# TensorFlow compute, and on one with heavy pure-Python pre-processing per request.
#
# **What you will build.**
#
# 1. `SharedWeightsPool`: worker processes started with `spawn`, weights in shared memory
#    once, each request answered exactly once from many threads, a clean shutdown.
# 2. `run_ledger`: a ledger updated by several processes without losing an update.
# 3. `choose`: threads or processes, decided from measurements.
#
# **How long it takes.** About 50 minutes. The notebook runs top to bottom in under two
# minutes on two cores; every number it prints is measured while you watch, so yours will
# differ from run to run. Lessons 00 (lost updates) and 02 (locks) come first.

# %% [markdown]
# ## Setup
#
# Import everything here. The notebook itself never imports TensorFlow: the processes you
# start do. `autograder.checks.process_workers` holds the code that runs *inside* worker
# processes (a function defined in a notebook cannot be started with `spawn`, as you will
# see); `autograder.checks.processes` starts and measures them, and holds the graders.

# %%
import itertools
import multiprocessing
import threading
from importlib.metadata import packages_distributions, version
from multiprocessing import shared_memory

import numpy as np

from autograder.checks import process_workers, processes
from autograder.lesson import claim, quick_test_passed

# %matplotlib inline
print("TensorFlow", version(packages_distributions()["tensorflow"][0]))
print("Keras", version("keras"))
print("multiprocessing start methods:", multiprocessing.get_all_start_methods())
# Worker processes per design. The autograder runs one of each, to stay within its limits.
N = 2
at_start = processes.snapshot()

# %% [markdown]
# ## See it: N copies, or one shared model
#
# The served model is a dense network, 512 -> 2048 -> 2048 -> 2048 -> 10, about 9.5 million
# float32 weights (38 MB). Start the first design: N worker processes, each of which imports
# TensorFlow and builds its own copy of the model. `start_servers` starts them with
# `multiprocessing.get_context("spawn")` and waits until each one has answered a first request.
# Importing TensorFlow takes a few seconds per process, so this cell takes a while:

# %%
tf_servers = processes.start_servers(N, "tf")
print(f"{len(tf_servers)} TensorFlow worker processes ready, pids {[s.pid for s in tf_servers]}")

# %% [markdown]
# The second design is one process whose N threads share one model. You do not need another
# process for it: the first worker process above serves with N threads when asked to, and its
# memory is that of one process with one copy.
#
# The third design keeps processes but not the copies. Put the weights in one shared-memory
# block, `pack` below, and start N numpy workers that attach to it read-only: each worker sees
# the same physical pages. They compute the same network with numpy, so they do not need
# TensorFlow either.

# %%
mlp_block = processes.pack(process_workers.mlp_weights())
np_servers = processes.start_servers(N, "numpy", segment=mlp_block)
print(f"shared block {mlp_block.name}: {mlp_block.size / 2**20:.0f} MB; "
      f"{len(np_servers)} numpy workers attached")

# %% [markdown]
# Serve a few requests with every design, so that each process has touched everything it
# will use, then measure memory:

# %%
warm_ids = list(range(2 * N))
processes.serve_rate(tf_servers[:1], "tf", warm_ids, threads=N)
processes.serve_rate(tf_servers, "tf", warm_ids)
processes.serve_rate(np_servers, "tf", warm_ids)

copies = processes.memory_of(f"{N} processes, a copy each", [s.pid for s in tf_servers])
threaded = processes.memory_of(f"1 process, {N} threads", [tf_servers[0].pid])
shared = processes.memory_of(f"{N} processes, shared weights", [s.pid for s in np_servers],
                             mlp_block.size)
for row in (copies, threaded, shared):
    print(f"{row.label:32} USS {row.uss_mb:7.0f} MB + shared {row.shared_mb:3.0f} MB = "
          f"{row.total_mb:7.0f} MB   (sum of RSS {row.rss_mb:7.0f} MB)")
processes.plot_memory([copies, threaded, shared])

# %% [markdown]
# **How memory is counted here.** A process's resident set size (RSS) counts every page it
# has in RAM, including pages it shares with other processes: the Python and TensorFlow
# libraries, and a shared-memory block. Adding up RSS over processes counts a shared page once
# per process that maps it, so it overstates what several processes cost. The unique set size
# (USS, `psutil.Process().memory_full_info().uss`) counts only the pages no other process
# maps: what the machine would get back if that process ended. A design's cost is the sum of
# its processes' USS, plus each shared block once.

# %%
print(f"{N} processes with copies / 1 process with {N} threads: "
      f"{copies.total_mb / threaded.total_mb:.1f}x the memory")
print(f"{N} processes on shared weights / {N} processes with copies: "
      f"{shared.total_mb / copies.total_mb:.2f}x the memory")
print(f"adding up RSS over-counts the shared design by {shared.rss_mb - shared.total_mb:.0f} MB")
claim(f"{N} TensorFlow processes with a copy each used over 1.5 times the memory of one "
      f"process with {N} threads", N == 1 or copies.total_mb > 1.5 * threaded.total_mb)
claim("the processes on shared weights used less than half the memory of the processes with "
      "copies", shared.total_mb < copies.total_mb / 2)
claim("adding up RSS counted the shared weights more than once",
      N == 1 or shared.rss_mb > shared.total_mb + mlp_block.size / 2**20)

# %% [markdown]
# Each TensorFlow process pays for TensorFlow itself and for its own model copy (38 MB of
# weights): compare those 38 MB with the memory of one process, the `1 process` row printed
# above, to see which part dominates. Threads pay both once. Shared-memory workers pay one
# small Python process each and the weights once, but give up TensorFlow inside the workers.

# %% [markdown]
# ## See it break
#
# ### `fork` after TensorFlow has started
#
# On Linux, `multiprocessing` starts processes with `fork` by default (Python 3.11 and 3.12;
# 3.14 changes the default). A forked child is a copy of its parent's memory with *one*
# thread: the parent's other threads, such as TensorFlow's thread pool, do not exist in the
# child, but TensorFlow's bookkeeping says they do. `fork_after_tf` runs the experiment in a
# separate Python, so nothing here can hang: that Python imports TensorFlow, runs a 512 x 512
# matmul (which starts the thread pool), then forks three children and spawns one, all
# running the same matmul, and kills whatever has not finished in time (5 s for the forks,
# which need milliseconds; 90 s for the spawned one, which imports TensorFlow itself):

# %%
fork_runs = [processes.fork_after_tf() for _ in range(1)]
for run in fork_runs:
    for method, outcome, seconds in run:
        print(f"{method:6} child: {outcome} after {seconds:.1f} s")
forked = [outcome for run in fork_runs for method, outcome, _ in run if method == "fork"]
spawned = [outcome for run in fork_runs for method, outcome, _ in run if method == "spawn"]
claim("no child forked after TensorFlow had started finished its matmul",
      forked and all(outcome != "finished" for outcome in forked))
claim("the child started with spawn finished it", spawned and all(o == "finished" for o in spawned))

# %% [markdown]
# The forked children never finish (they hang or crash): the matmul is handed to the thread
# pool, and no thread is left to run it. Start processes that use TensorFlow with
# `multiprocessing.get_context("spawn")` (or `forkserver`): the child is a fresh Python that
# imports what it needs. The price is that the child imports its target by name, so the
# target must live in an importable module, not in a notebook cell, and everything you pass
# it is pickled.

# %% [markdown]
# ### A pool that rebuilds the model for every task
#
# The easy way to use processes is `multiprocessing.Pool().map(predict, requests)` with a
# `predict` that builds the model and runs it. Every task then pays for building the model.
# Time it on the first TensorFlow worker: three requests with the model built per request,
# against the same three on the model the worker built once:

# %%
ids = [100, 101, 102]
rebuild_s = processes.rebuild_seconds(tf_servers[0], "tf", ids) / len(ids)
loaded_s = 1 / processes.serve_rate(tf_servers[:1], "tf", ids)
print(f"per request: rebuilt {rebuild_s * 1000:.0f} ms, built once {loaded_s * 1000:.1f} ms "
      f"({rebuild_s / loaded_s:.0f}x)")
claim("rebuilding the model for each task made a request at least 5 times slower",
      rebuild_s > 5 * loaded_s)

# %% [markdown]
# Load the model once per worker, when the worker starts, as the servers above do.
#
# ### Processes racing on one ledger
#
# Each worker process records the requests it served in a shared ledger of 8 accounts.
# `process_workers.tally(ledger, lock, index, workers, updates)` is what one worker runs: for
# each update it reads an account, checks the request, and writes the account back, holding
# `lock` around the three steps when `lock` is not None. Between the read and the write it
# waits a tenth of a millisecond (`time.sleep`), as a worker writing a log line there would: a
# simulated I/O that makes the race show on an idle machine and on a busy one alike. Run three of them, 400 updates each,
# on a ledger in shared memory, three ways: with no lock; with a new lock for each worker; and
# on a `multiprocessing.Array`, which comes with a lock of its own:

# %%
race = {kind: processes.tally_race(kind, trials=5)
        for kind in ("none", "per worker", "array")}
for kind, lost in race.items():
    print(f"lock: {kind:10}  updates lost per trial (of 3 x 400): {lost}")
for kind, lost in race.items():
    claim(f"with lock '{kind}' updates were lost in every trial", all(n > 0 for n in lost))

# %% [markdown]
# This is lesson 00's lost update, between processes instead of threads, and without a GIL to
# hide it: the workers really run at the same time. A lock made per worker excludes nobody
# (lesson 02). The `Array`'s lock is taken for each read and for each write separately, so a
# read-modify-write still interleaves; `counter.value += 1` on a `multiprocessing.Value` has
# the same problem. Everybody who updates must hold the *same* lock around the whole update.

# %% [markdown]
# ## Measure when each wins
#
# Serve the same requests two ways. In the **TensorFlow workload**, each request is a batch
# of 16 rows through the network: nearly all of the time is TensorFlow compute, which runs
# with the GIL released. In the **Python workload**, each request first tokenises and hashes
# a text in pure Python (tens of milliseconds, holding the GIL), then runs one row through the
# network. Each round measures the three designs one after the other on both workloads; the
# ratios are medians over rounds, each round's designs measured a moment apart.

# %%
request_ids = list(range(16))
rounds = 3
designs = {"threads": lambda w: processes.serve(tf_servers[:1], w, request_ids, threads=N),
           "processes": lambda w: processes.serve(tf_servers, w, request_ids),
           "shared": lambda w: processes.serve(np_servers, w, request_ids)}
served = {(d, w): [] for d in designs for w in ("tf", "python")}
for _ in range(rounds):
    for workload in ("tf", "python"):
        for design, run in designs.items():
            served[design, workload].append(run(workload))
rates = {key: [s.per_second for s in runs] for key, runs in served.items()}
cores = {key: max(s.cores for s in runs) for key, runs in served.items()}
for (design, workload), runs in rates.items():
    print(f"{design:9} {workload:6} workload: {np.median(runs):6.1f} requests/s, "
          f"up to {cores[design, workload]:.2f} cores busy  {np.round(runs, 1)}")
tf_speedup = processes.paired_median(rates["processes", "tf"], rates["threads", "tf"])
py_speedup = processes.paired_median(rates["processes", "python"], rates["threads", "python"])
print(f"processes / threads: TensorFlow workload {tf_speedup:.2f}x, Python workload {py_speedup:.2f}x")
for name, speedup in (("TensorFlow", tf_speedup), ("Python", py_speedup)):
    verdict = "won by at least 20 %" if speedup >= 1.2 else "did not win by 20 %"
    print(f"On the {name} workload, processes {verdict} in this run.")

# %%
claim("on the Python workload the threaded process never kept more than one core busy (the GIL)",
      cores["threads", "python"] <= 1.15)

# %% [markdown]
# "Cores busy" is the CPU time the design's processes used per second of wall time. On the
# Python workload the threaded process stays at one core at most, however many threads it
# has: only the thread holding the GIL runs Python. Processes have no such ceiling: each runs
# its Python on a core of its own, so on a machine with free cores they serve up to N times
# as many requests. On the TensorFlow workload, TensorFlow releases the GIL while it
# computes, so threads in one process can keep several cores busy too, with one copy of
# everything. How much either design gains depends on the cores free at the moment: on a
# machine shared with other work, its scheduler may give your processes no more CPU than your
# threads, and the verdicts above say what happened in your run. Keep these numbers: you
# decide with them in exercise 3. Stop the workers now, and free the block:

# %%
processes.stop_servers(tf_servers + np_servers)
mlp_block.close()
mlp_block.unlink()

# %% [markdown]
# ## Fix it
#
# ### Exercise 1: a pool of processes on shared weights
#
# Write `SharedWeightsPool`, a pool of worker processes that serve a model held once in
# shared memory. The model is an embedding table and a small dense head:
# `processes.embedding_weights()` returns its three float32 arrays (24 MB). The workers run
# `process_workers.serve(source, shapes, requests, answers)`: it attaches to the weights, then
# takes `(request_id, tokens)` items from the `requests` queue and puts
# `(request_id, output)` on the `answers` queue, until it takes `None`. `source` is the name
# of a `SharedMemory` block holding the arrays back to back (float32, C order), which the
# worker attaches read-only; `shapes` is the list of the arrays' shapes.
#
# - `SharedWeightsPool(weights, workers=2, target=process_workers.serve)` puts `weights` in
#   one new shared-memory block and starts `workers` processes with the `spawn` start method,
#   each running `target(block_name, shapes, requests, answers)`;
# - `predict(tokens)` sends the request to the workers and returns their output for `tokens`
#   (a tuple of 4 floats; the grader counts the requests its workers answered); many threads
#   call it at once, and workers may answer in any order (`process_workers.serve` does, on purpose),
#   even before the thread that asked is ready for the answer; two calls with the same tokens
#   are two requests, and each caller gets its own answer, waiting for it however long it
#   takes (no timeout: the grader's schedules let any timed wait run out); the pool keeps
#   answering however long it was left idle (the grader leaves it idle longer than any time
#   limit its threads wait with, then calls `predict` again);
# - `close()` stops and joins every worker, joins every thread the pool started (a thread
#   that collects answers, say), and closes *and unlinks* the block, so that no process, no
#   thread and no segment in `/dev/shm` is left when it returns.
#
# The grader counts the private memory of every worker (a worker that got the arrays
# themselves holds a copy) and the shared blocks (one copy of the weights, not one per
# worker), and checks that nothing is left after `close()`. Then it runs your pool's
# bookkeeping (request ids, waiting callers, the answers) under the controlled scheduler of
# lesson 00, with the worker processes replaced by stand-ins in the notebook's process: every
# interleaving of two callers with one preemption, so a check-then-act between threads fails
# every time, not once in a thousand runs; once more with both callers sending the same
# tokens. On those stand-ins it also closes your pool while it
# holds the pool's own thread at the queue until `close()` joins it: a `close()` that returns
# without that join (or sleeps instead) is seen every time.

# %% nbgrader={"grade": false, "grade_id": "ex_processes_pool", "locked": false, "schema_version": 3, "solution": true, "task": false}
class SharedWeightsPool:
    """Worker processes answering ``predict`` from one copy of the weights in shared memory."""

    def __init__(self, weights, workers=2, target=process_workers.serve):
        ### BEGIN SOLUTION
        ctx = multiprocessing.get_context("spawn")
        shapes = [w.shape for w in weights]
        self._block = shared_memory.SharedMemory(create=True,
                                                 size=sum(w.nbytes for w in weights))
        offset = 0
        for w in weights:
            data = np.ascontiguousarray(w, dtype=np.float32).tobytes()
            self._block.buf[offset:offset + len(data)] = data
            offset += len(data)
        self._requests, self._answers = ctx.Queue(), ctx.Queue()
        self._workers = [
            ctx.Process(target=target, args=(self._block.name, shapes, self._requests,
                                             self._answers))
            for _ in range(workers)]
        for process in self._workers:
            process.start()
        self._lock = threading.Lock()
        self._waiting = {}
        self._ids = itertools.count()
        self._collector = threading.Thread(target=self._collect, daemon=True)
        self._collector.start()
        ### END SOLUTION

    ### BEGIN SOLUTION
    def _collect(self):
        while True:
            item = self._answers.get()
            if item is None:
                return
            request_id, output = item
            with self._lock:
                done, box = self._waiting.pop(request_id)
            box.append(output)
            done.set()
    ### END SOLUTION

    def predict(self, tokens):
        """The model's output for ``tokens``; safe to call from many threads at once."""
        ### BEGIN SOLUTION
        done, box = threading.Event(), []
        with self._lock:
            request_id = next(self._ids)
            self._waiting[request_id] = (done, box)
        self._requests.put((request_id, tokens))
        done.wait()
        return box[0]
        ### END SOLUTION

    def close(self):
        """Stop and join every worker; close and unlink the shared block."""
        ### BEGIN SOLUTION
        for _ in self._workers:
            self._requests.put(None)
        for process in self._workers:
            process.join()
        self._answers.put(None)
        self._collector.join()
        self._block.close()
        self._block.unlink()
        ### END SOLUTION


# %%
weights = processes.embedding_weights()
pool = SharedWeightsPool(weights, workers=2)
some = processes.request_tokens(3)
print([np.round(pool.predict(tokens), 3) for tokens in some])
pool.close()

# %% nbgrader={"grade": true, "grade_id": "test_processes_pool", "locked": true, "points": 5, "schema_version": 3, "solution": false, "task": false}
before = processes.snapshot()
pool = SharedWeightsPool(processes.embedding_weights(), workers=2)
try:
    tokens = processes.request_tokens(2, seed=5)
    for t in tokens:
        got = pool.predict(t)
        assert np.allclose(got, processes.reference_output(t)), f"predict() returned {got}, expected {processes.reference_output(t)}"
finally:
    pool.close()
left = before.since()
assert not left, f"after close(): {left.describe()}, expected none"
quick_test_passed()
### BEGIN HIDDEN TESTS
processes.check_pool(SharedWeightsPool)
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 2: a ledger that loses nothing across processes
#
# Write `run_ledger(workers, updates)`. It makes a ledger of `process_workers.LEDGER_SLOTS`
# int64 slots, all zero, in shared memory; starts `workers` processes with `spawn`, worker
# `k` running `process_workers.tally(ledger, lock, k, workers, updates)`; waits for all of
# them, however long they take (no timeout: a loaded machine can make a worker slow, and a
# worker stopped early loses its updates); and returns the first `process_workers.ACCOUNTS`
# slots as a list of ints. No update may be lost, and nothing may be left running or in
# `/dev/shm` when it returns. Every process it starts (a manager's or a pool's too) must be
# started with `spawn`. The grader runs it with thousands of updates per worker.
#
# `ledger` may be a `SharedMemory` block's name or a `multiprocessing` array; `lock` is what
# the worker holds around each update (or None). `tally` also accepts a queue as `ledger`: it
# then sends each `(account, amount)` to it, and your function applies them itself (one
# writer, no lock). A process that put items on a `multiprocessing` queue does not exit until
# they have been read, so read them before you join it.
# `process_workers.expected_totals(workers, updates)` says what the accounts must hold when
# you run it yourself. While graded, each worker's last update also adds an amount the grader
# picks and does not tell you, so return what your ledger holds: totals you compute are wrong.

# %% nbgrader={"grade": false, "grade_id": "ex_processes_ledger", "locked": false, "schema_version": 3, "solution": true, "task": false}
def run_ledger(workers, updates):
    """Run ``workers`` ledger workers on processes; the accounts' totals, no update lost."""
    ### BEGIN SOLUTION
    ctx = multiprocessing.get_context("spawn")
    ledger = shared_memory.SharedMemory(create=True, size=8 * process_workers.LEDGER_SLOTS)
    try:
        ledger.buf[:] = bytes(len(ledger.buf))
        lock = ctx.Lock()
        workers_ = [ctx.Process(target=process_workers.tally,
                                args=(ledger.name, lock, k, workers, updates))
                    for k in range(workers)]
        for process in workers_:
            process.start()
        for process in workers_:
            process.join()
        slots = ledger.buf.cast("q")
        totals = list(slots[:process_workers.ACCOUNTS])
        slots.release()
        return totals
    finally:
        ledger.close()
        ledger.unlink()
    ### END SOLUTION


# %%
print(run_ledger(2, 50), "expected", process_workers.expected_totals(2, 50))

# %% nbgrader={"grade": true, "grade_id": "test_processes_ledger", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
totals = run_ledger(2, 20)
assert list(totals) == process_workers.expected_totals(2, 20), f"run_ledger(2, 20) returned {totals}, expected {process_workers.expected_totals(2, 20)}"
processes.check_ledger(run_ledger)
quick_test_passed()
### BEGIN HIDDEN TESTS
processes.check_ledger(run_ledger)
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 3: threads or processes?
#
# Write `choose(threads, processes_, memory_budget_mb)`, which returns `"threads"` or
# `"processes"`. Each design's measurement is a `processes.DesignRun`: `per_second`, the
# requests per second of each round (round `i` of both designs measured a moment apart, as
# above), and `memory_mb`, the whole design's memory. The rule:
#
# - processes cost memory: when `processes_.memory_mb` is over `memory_budget_mb`, choose
#   threads;
# - otherwise choose processes only when they serve at least 20 % more requests per second,
#   judged by the median over rounds of `processes_.per_second[i] / threads.per_second[i]`
#   (pair the rounds: a burst of other work on the machine hits both designs of a round).
#   The median is the middle ratio once they are sorted; for an even number of rounds it is
#   the mean of the two middle ratios, as `statistics.median` computes it. "At least" means a
#   median of exactly 1.2 chooses processes;
# - otherwise threads: one copy of everything, and simpler.
#
# One round, the best or the worst, never decides: only the median does.

# %% nbgrader={"grade": false, "grade_id": "ex_processes_choose", "locked": false, "schema_version": 3, "solution": true, "task": false}
def choose(threads, processes_, memory_budget_mb):
    """``"threads"`` or ``"processes"`` for two measured designs and a memory budget."""
    ### BEGIN SOLUTION
    if processes_.memory_mb > memory_budget_mb:
        return "threads"
    ratios = sorted(p / t for p, t in zip(processes_.per_second, threads.per_second, strict=True))
    middle = len(ratios) // 2
    median = ratios[middle] if len(ratios) % 2 else (ratios[middle - 1] + ratios[middle]) / 2
    return "processes" if median >= 1.2 else "threads"
    ### END SOLUTION


# %% [markdown]
# Ask it about your own measurements, with a budget of 4 GB:

# %%
for workload in ("tf", "python"):
    decision = choose(processes.DesignRun(tuple(rates["threads", workload]), threaded.total_mb),
                      processes.DesignRun(tuple(rates["processes", workload]), copies.total_mb),
                      4096)
    print(f"{workload} workload: {decision}")

# %% nbgrader={"grade": true, "grade_id": "test_processes_choose", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
fast = processes.DesignRun((100.0, 100.0, 100.0), 500.0)
faster = processes.DesignRun((200.0, 190.0, 210.0), 1500.0)
assert choose(fast, faster, 4000) == "processes", "processes twice as fast and within budget: expected 'processes'"
assert choose(fast, faster, 1000) == "threads", "processes over the memory budget: expected 'threads'"
assert choose(faster, fast, 4000) == "threads", "threads faster: expected 'threads'"
quick_test_passed()
### BEGIN HIDDEN TESTS
processes.check_choose(choose)
### END HIDDEN TESTS

# %% [markdown]
# ## Closing note: the three designs, measured in this run
#
# Every figure below comes from the cells above (memory after serving; requests per second,
# the median of the rounds):

# %%
print(f"{'design':34} {'memory':>9} {'TF workload':>13} {'Python workload':>16}")
for label, row, key in ((copies.label, copies, "processes"), (threaded.label, threaded, "threads"),
                        (shared.label, shared, "shared")):
    print(f"{label:34} {row.total_mb:6.0f} MB {np.median(rates[key, 'tf']):9.1f} /s "
          f"{np.median(rates[key, 'python']):12.1f} /s")
left = at_start.since()
print("left behind by this notebook:", left.describe() or "nothing")
claim("the notebook left no process and no shared-memory segment behind", not left)

# %% [markdown]
# ## Summary
#
# When TensorFlow does the work, serve one model from threads in one process: TensorFlow
# releases the GIL, so threads get the cores, and you pay for TensorFlow and the weights once;
# choose processes instead only if your measurement above shows them winning the TensorFlow
# workload by a clear margin (at least 20 %). When pure Python does the work, use processes,
# started with `spawn`, each loading the model once, with large weights in shared memory; and
# give every piece of state they share one lock, or one writer.
