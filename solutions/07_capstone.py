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
# # Serve one Keras model to many threads, safely and fast
#
# Can many threads share one Keras model, to save memory? Yes, if the service around it is
# written for it. In this capstone you write that service: an `InferenceService` that takes a
# model nobody has called yet, answers `predict(x)` from many client threads, accepts new
# weights while it serves, counts what it did exactly, and shuts down cleanly. It uses what
# the earlier lessons taught: warm up before threads share a model (lesson 01), guard shared
# state with a lock (02), never let a prediction see half-written weights (03), and measure
# under load (05).
#
# **What you will see break.** Sixteen clients call a cold model directly, with no service
# in between: you count how often a client raises. Then weights are written while clients
# are served, and you count the predictions that mix two weight versions. Then you put one
# lock around the model, which fixes both, and measure what sixteen clients gain over one.
#
# **What you will build.** One class, `InferenceService`, graded in four parts, each under
# load: a cold start with sixteen clients at once; weight updates while serving; exact
# accounting and a clean `close()`; and throughput: at least twice the requests per second of
# the one-lock service, measured in the same run, without a copy of the model per client.
#
# **How long it takes.** About 60 minutes. The notebook runs top to bottom in under two
# minutes on two cores; every number it prints is measured while you watch, so yours will
# differ from run to run.

# %% [markdown]
# ## Setup
#
# Import everything here. `autograder.checks.capstone` holds the served model, the two
# reference services you compare against, the client runner and the graders; it reuses the
# version-reporting model of lesson 03 (`autograder.checks.variables`).

# %%
import os

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"

import gc
import inspect
import threading
import time

import keras
import numpy as np
import tensorflow as tf

from autograder.checks import capstone, variables
from autograder.lesson import claim, quick_test_passed

# %matplotlib inline
tf.get_logger().setLevel("ERROR")
print("TensorFlow", tf.__version__)
print("Keras", keras.__version__)

# Trials of the experiments. The autograder does not run them (a cold model raced from threads
# can crash TensorFlow itself): it runs only your answers, the tests and the cells they need.
COLD_TRIALS = 10
TRIALS = 10

# %% [markdown]
# ## See it break
#
# ### Sixteen clients, one cold model, no service
#
# The served model is `capstone.serving_model(seed)`: `Sequential([Dense(16, relu),
# Dense(4)])` without a `keras.Input`, so its weights are created by its first call. A request
# is one row of 8 numbers; the answer is one row of 4. Here is the most direct "service":
# every client calls the model itself.

# %%
print(inspect.getsource(capstone.DirectService))

# %%
model = capstone.serving_model()
print("built:", model.built, "| weights:", len(model.weights))

# %% [markdown]
# `capstone.cold_start_trials(service_class, trials=n)` runs `n` trials of the grader's cold
# start: in each, a fresh, never-called model, a new service, and sixteen client threads
# released together (switching threads as often as the interpreter can), each sending two
# requests. A trial fails when a client raises, an answer differs from the model's output for
# that client's own row, or the model ends up with extra weights. A cold model raced from
# threads can, rarely, crash TensorFlow itself, so each trial runs in a child process: a crash
# counts as a failed trial and your kernel keeps running. Run ten trials:

# %%
cold = capstone.cold_start_trials(capstone.DirectService, trials=COLD_TRIALS)
print(f"failed in {cold.failed} of {cold.trials} trials"
      + (f" ({cold.crashed} crashed their process)" if cold.crashed else ""))
for message in cold.messages[:3]:
    print(" -", message[:150])
claim("sixteen clients on a cold model with no service failed at least half of the trials",
      cold.failed >= COLD_TRIALS / 2)

# %% [markdown]
# ### New weights while clients are served
#
# Warm the model first, and the cold start is fixed. Now a trainer publishes new weights with
# `set_weights` while clients keep predicting. Lesson 03's version-reporting model tells, from
# one output row, which weight version each of its 8 layers had during that prediction.
# `variables.serve_while_training` runs one writer (10 updates) and two readers on real
# threads until the writer is done:

# %%
versioned = variables.versioned_model()
batch = variables.probe(versioned)
versioned.predict_on_batch(batch)


def set_version(m, k):
    m.set_weights(variables.version_weights(k, m))


def direct_predict(m, x):
    return m.predict_on_batch(x)


torn_runs = [variables.serve_while_training(versioned, set_version, direct_predict,
                                            updates=10, readers=2) for _ in range(TRIALS)]
torn = sum(run.torn for run in torn_runs)
reads = sum(len(run.reads) for run in torn_runs)
print(f"torn predictions in {sum(run.torn > 0 for run in torn_runs)} of {len(torn_runs)} trials"
      f" ({torn} of {reads} predictions)")
claim("set_weights while serving tore at least one prediction", torn > 0)

# %% [markdown]
# ### One lock around the model: safe, one request at a time
#
# The usual fix is one lock that every `predict` and every update holds while it uses the
# model. `capstone.GlobalLockService` does that (and warms the model first):

# %%
print(inspect.getsource(capstone.GlobalLockService.predict))

# %% [markdown]
# It passes the cold start. Now measure how many requests per second it serves to 1, 4 and
# 16 clients, each sending 30 requests one after another:

# %%
lock_cold = capstone.run_cold_start(capstone.GlobalLockService, trials=1)
print("cold start:", lock_cold.verdict)
locked = [capstone.benchmark(capstone.GlobalLockService, n, requests=30) for n in (1, 4, 16)]
for m in locked:
    print(f"{m.clients:>2} clients: {m.rate:6.0f} requests/s, latency p50 {m.p50_ms:6.2f} ms, "
          f"p99 {m.p99_ms:7.2f} ms")
print(f"16 clients / 1 client: {locked[2].rate / locked[0].rate:.2f}x the requests/s, "
      f"{locked[2].p50_ms / locked[0].p50_ms:.1f}x the p50 latency, "
      f"{locked[2].p99_ms / locked[0].p99_ms:.1f}x the p99 latency")
claim("the one-lock service passed the cold start", lock_cold.ok)

# %% [markdown]
# Count what the lock does with sixteen clients' requests: serve sixteen clients, ten requests
# each, and read the service's own statistics, requests accepted and model calls made:

# %%
lock_service = capstone.GlobalLockService(capstone.serving_model(), np.zeros(8, "float32"))
capstone.run_clients(lock_service, capstone.requests_for(0, 16, 10), deadline_s=30)
lock_stats = lock_service.stats()
lock_service.close()
print(f"16 clients: {lock_stats['requests']} requests, {lock_stats['batches']} model calls")
claim("behind one lock, the 160 requests of sixteen clients took 160 model calls, one each",
      lock_stats["requests"] == lock_stats["batches"] == 160)

# %% [markdown]
# Read the ratios above with that count. Sixteen times the clients do not bring sixteen times
# the requests per second: the lock lets one request at a time use the model, one model call
# per request, and the others wait. Where the waiting lands depends on who gets the lock next. A `threading.Lock` is not
# fair: a thread that has just released it can take it again before a waiting thread wakes
# up, so some requests get through at once while others wait through many. The median (p50)
# shows the typical request and the 99th percentile (p99) the unlucky ones: compare how each
# grew in your run.

# %% [markdown]
# ## See why
#
# ### The cold start, thread by thread
#
# Here is the first failing cold trial: one lane per client thread, the failure marked.

# %%
picture = cold.first_failure
picture.figure() if picture else print("(no failing trial: it was skipped)")

# %% [markdown]
# The sixteen first calls run side by side, and several find the model unbuilt: they build
# its layers and trace its predict function at once (lesson 01). A single thread that warms
# the model before any client arrives removes the race.
#
# ### A torn prediction
#
# Each column is one prediction, each row a layer, the colour the weight version that layer
# had. A column that changes colour partway down is a torn prediction:

# %%
variables.plot_reads(max(torn_runs, key=lambda run: run.torn))

# %% [markdown]
# `set_weights` assigns the layers one after the other, and a prediction running at the same
# time reads them one after the other (lesson 03). Something must keep the two apart.
#
# ### Why one lock does not scale: 16 rows cost a call little more than 1 row
#
# With the lock, the model serves one request per call. Time one call with one row and one
# call with sixteen rows:

# %%
warm = capstone.serving_model()
one, sixteen = np.ones((1, 8), "float32"), np.ones((16, 8), "float32")
warm.predict_on_batch(one)
warm.predict_on_batch(sixteen)


def per_call_ms(x, calls=40):
    start = time.perf_counter()
    for _ in range(calls):
        warm.predict_on_batch(x)
    return (time.perf_counter() - start) / calls * 1e3


# five rounds, the two sizes in turns, so that a busy moment hits both; medians of the rounds
rounds = [(per_call_ms(one), per_call_ms(sixteen)) for _ in range(5)]
t1 = float(np.median([a for a, _ in rounds]))
t16 = float(np.median([b for _, b in rounds]))
print(f"1 row: {t1:.3f} ms per call; 16 rows: {t16:.3f} ms per call ({t16 / t1:.2f}x the time, "
      "16x the answers)")
claim("a call with 16 rows took less than twice the time of a call with one", t16 < 2 * t1)

# %% [markdown]
# For a model this size almost all of a call is fixed cost: Python, Keras and launching the
# graph, not arithmetic. The requests waiting behind the lock could share one call. That is
# **micro-batching**: clients put their requests in a queue, one batcher thread takes every
# request waiting, stacks them into one batch, calls the model once and hands each client its
# row. Since only the batcher touches the model, the cold start and the updates need only a
# little care.
#
# ### Outdated advice: "Keras models are not thread-safe: give every thread its own copy"
#
# Keras 2 and TF1 answers tell you to give each thread its own model (or graph and session).
# That is safe, but it pays a copy of the weights per thread, and on Keras 3 it is not
# needed. `capstone.PerThreadService` clones the model for each client thread.
# `capstone.benchmark(..., memory=True)` counts the bytes of Keras variables alive while its
# clients are connected, beyond the model's own weights:

# %%
copies = {}
for n in (1, 4, 16):
    gc.collect()  # free the last run's copies first, so that the count starts from live weights
    m = capstone.benchmark(capstone.PerThreadService, n, requests=5, memory=True)
    copies[n] = m.extra_bytes / capstone.weight_bytes(warm)
    print(f"{n:>2} clients: {m.extra_bytes:6d} extra weight bytes, {copies[n]:.1f} x the model's own")
claim("per-thread copies held one extra copy of the weights per client",
      all(round(copies[n]) == n for n in copies))

# %% [markdown]
# One copy per client: on a real model of 500 MB, sixteen clients would need 8 GB.

# %% [markdown]
# ## Fix it
#
# Write `InferenceService`. Its contract:
#
# - `InferenceService(model, example)`: `model` is a Keras model that **has never been
#   called** (its weights may not exist yet); `example` is one request, a float32 row of the
#   shape every request will have. Start serving here.
# - `predict(x)` is called by many client threads at once with one request `x` and returns
#   the model's output row for it, as a numpy array. A request of the wrong shape raises
#   `ValueError` in its own caller and must not disturb other requests.
# - `update_weights(weights)` is called by a trainer thread with a full weight list, in
#   `set_weights` order. No answer may mix two versions, and once `update_weights` returns,
#   every request sent afterwards is answered with those weights (or newer ones).
# - `stats()` returns `{"requests": ..., "batches": ..., "errors": ...}`: requests accepted
#   (answered or failed), model calls made to answer them, and requests that failed. Exact
#   whenever no request is in flight.
# - `close()` stops taking requests, answers every request already accepted, and returns
#   only when every thread the service started has ended. Afterwards `predict` raises
#   `RuntimeError`.
#
# It must be fast: with sixteen clients at once it must serve at least twice the requests per
# second of `capstone.GlobalLockService` measured in the same run, and it may not keep a
# copy of the model per client. Micro-batching gets you there.
#
# Hints: a `threading.Condition` (or a `queue.Queue`) for the waiting requests; a
# `threading.Event` (or a `concurrent.futures.Future`) per request for its answer; warm the
# model on `example` before the batcher starts; decide which thread may touch the model, and
# when. You may add methods and helper classes in the cell.

# %% nbgrader={"grade": false, "grade_id": "ex_capstone_service", "locked": false, "schema_version": 3, "solution": true, "task": false}
class InferenceService:
    """Serve one shared Keras model to many client threads, with micro-batching."""

    def __init__(self, model, example):
        """Wrap a never-called ``model``; ``example`` is one request row. Start serving."""
        ### BEGIN SOLUTION
        self._model = model
        self._shape = np.shape(example)
        # Warm on this thread, before any other thread can reach the model.
        model.predict_on_batch(np.zeros((1, *self._shape), dtype="float32"))
        self._model_lock = threading.Lock()  # the batcher's call vs. update_weights
        self._cond = threading.Condition()  # guards everything below
        self._pending = []  # requests waiting: [row, done event, answer, error]
        self._closed = False
        self._requests = self._batches = self._errors = 0
        self._batcher = threading.Thread(target=self._serve, name="batcher", daemon=True)
        self._batcher.start()
        ### END SOLUTION

    def predict(self, x):
        """Return the model's output row for the request ``x`` (one row)."""
        ### BEGIN SOLUTION
        request = [np.asarray(x, dtype="float32"), threading.Event(), None, None]
        with self._cond:
            if self._closed:
                raise RuntimeError("InferenceService is closed")
            self._pending.append(request)
            self._cond.notify()
        request[1].wait()
        if request[3] is not None:
            raise request[3]
        return request[2]
        ### END SOLUTION

    def update_weights(self, weights):
        """Serve ``weights`` (a list in ``set_weights`` order) to every later request."""
        ### BEGIN SOLUTION
        with self._model_lock:
            self._model.set_weights(weights)
        ### END SOLUTION

    def stats(self):
        """Return ``{"requests": ..., "batches": ..., "errors": ...}``."""
        ### BEGIN SOLUTION
        with self._cond:
            return {"requests": self._requests, "batches": self._batches,
                    "errors": self._errors}
        ### END SOLUTION

    def close(self):
        """Answer what was accepted, stop the service's threads, refuse later requests."""
        ### BEGIN SOLUTION
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._batcher.join()
        ### END SOLUTION

    def _serve(self):
        """The batcher thread: take the waiting requests, answer them with one model call."""
        ### BEGIN SOLUTION
        while True:
            with self._cond:
                while not self._pending and not self._closed:
                    self._cond.wait()
                if not self._pending:
                    return  # closed, and every accepted request answered
                batch, self._pending = self._pending[:64], self._pending[64:]
            good = [r for r in batch if r[0].shape == self._shape]
            for r in batch:
                if r[0].shape != self._shape:
                    r[3] = ValueError(f"expected a request of shape {self._shape}, "
                                      f"got {r[0].shape}")
            if good:
                with self._model_lock:
                    out = np.asarray(self._model.predict_on_batch(np.stack([r[0] for r in good])))
                for r, row in zip(good, out, strict=True):
                    r[2] = row
            with self._cond:
                self._requests += len(batch)
                self._batches += bool(good)
                self._errors += len(batch) - len(good)
            for r in batch:
                r[1].set()
        ### END SOLUTION


# %% [markdown]
# Try it: a cold model, three requests from this thread, a malformed one, the statistics,
# and `close()`.

# %%
service = InferenceService(capstone.serving_model(), np.zeros(8, "float32"))
rows = np.random.default_rng(0).normal(size=(3, 8)).astype("float32")
print("answers:", np.round(np.array([service.predict(r) for r in rows], dtype=float), 3).tolist())
try:
    service.predict(np.zeros(5, "float32"))
except ValueError as error:
    print("malformed request:", type(error).__name__, error)
print("stats:", service.stats())
service.close()
print("threads named 'batcher' left:", [t.name for t in threading.enumerate() if "batch" in t.name])

# %% [markdown]
# ### Part 1: a cold start with sixteen clients
#
# The grader makes a never-called model, your service, and sixteen clients released together,
# two requests each, over three fresh models. No client may raise, every answer must be
# the model's output for that client's own row, and the model must hold exactly its four
# weights.

# %% nbgrader={"grade": true, "grade_id": "test_capstone_cold_start", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
s = InferenceService(capstone.serving_model(5), np.zeros(8, "float32"))
x = np.ones(8, "float32")
expected = capstone.reference_outputs(5, [x])[0]
assert capstone.same_answer(s.predict(x), expected), "predict(x) must return the model's output row for x"
s.close()
capstone.check_cold_start(InferenceService, trials=1)
quick_test_passed()
### BEGIN HIDDEN TESTS
capstone.check_cold_start(InferenceService)
### END HIDDEN TESTS

# %% [markdown]
# ### Part 2: weight updates while serving
#
# The grader serves lesson 03's version-reporting model to six clients while a trainer calls
# `update_weights` with versions 2, 3, ... 7. No answer may mix versions, a client never
# sees the version go backwards, a request sent after `update_weights` returned gets that
# version or a newer one, and the last requests get the last version. Then it makes a new
# service on a model that has never been called, and a trainer calls `update_weights` before
# any request is sent: the requests that follow must get the new weights. Expect an update at
# any time, even before the first request: a model that has never been called has no weights
# to set, so warm it in `__init__`.
#
# Last, the grader lines up the race itself instead of waiting for real threads to hit it: it
# holds one request's model call after the first four of the eight layers (the model reads
# each layer's weights only when it gets there), calls `update_weights` with version 2 from a
# trainer thread, waits up to half a second for it to return, then lets the call go on. That
# answer must be of one version, and the next request must get version 2. A service that
# writes the weights while a call reads them answers layers `[1, 1, 1, 1, 2, 2, 2, 2]` there,
# every run. Then it holds the first write of an update into the model's weights, by
# `set_weights` or a weight's `assign` (your trainer's, or your batcher's if it applies
# updates itself), before anything is written, and sends a second update,
# version 3: once both have returned, the next request must get version 3. Weights kept aside
# and cleared after they were applied lose the update that came in between.

# %% nbgrader={"grade": true, "grade_id": "test_capstone_weight_updates", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
m = variables.versioned_model()
s = InferenceService(m, variables.probe(m)[0])
assert variables.read_versions(s.predict(variables.probe(m)[0])).tolist() == [0] * variables.LAYERS, "before any update, serve the model as it is"
s.update_weights(variables.version_weights(4, m))
assert variables.read_versions(s.predict(variables.probe(m)[0])).tolist() == [4] * variables.LAYERS, "after update_weights() returns, serve the new weights"
s.close()
capstone.check_weight_updates(InferenceService, trials=1)
quick_test_passed()
### BEGIN HIDDEN TESTS
capstone.check_weight_updates(InferenceService)
### END HIDDEN TESTS

# %% [markdown]
# ### Part 3: exact accounting and a clean close
#
# The grader sends requests from one client, then from sixteen at once with a few malformed
# requests among them, and checks every answer and `stats()` after each phase. Then, on a
# slow model (each call takes 50 ms, as a bigger model would), it calls `close()` while
# requests are waiting in your queue: each of those must be answered (only a request that
# comes after `close()` may be refused with `RuntimeError`), none may hang, and every thread
# your service started must have ended by the time `close()` returns (it is checked at that
# moment: a `close()` that sleeps instead of joining, or joins with a timeout, fails: under
# load any timeout can run out while the thread still runs). A client or `close()` that hangs
# fails within seconds, naming the stuck threads and where they wait.
#
# Last, the grader runs your service under the controlled scheduler of lesson 00, on a
# stand-in model written in NumPy: two clients and your batcher, then one client's `predict`
# racing `close()`, every interleaving with one preemption. There a request is lost every
# time, not once in a million runs, when it is appended between the batcher's read of the
# queue and its write-back, or accepted between a check of "closed" and an append in two
# separate lock regions: its caller waits forever, and the scheduler reports a deadlock. Do
# each check-then-act under one lock: take the batch and shorten the queue in one `with`
# block, and test "closed" and append in one. To see a failing schedule, run
# `capstone.explore_service(InferenceService)` in a cell.

# %% nbgrader={"grade": true, "grade_id": "test_capstone_accounting", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
before = set(threading.enumerate())
s = InferenceService(capstone.serving_model(6), np.zeros(8, "float32"))
for _ in range(3):
    s.predict(np.ones(8, "float32"))
assert s.stats() == {"requests": 3, "batches": 3, "errors": 0}, f"after 3 requests one at a time, stats() was {s.stats()}"
s.close()
left = [t.name for t in threading.enumerate() if t not in before and t.is_alive()]
assert not left, f"threads still running after close(): {left}"
try:
    s.predict(np.ones(8, "float32"))
    raise AssertionError("predict() after close() must raise RuntimeError")
except RuntimeError:
    pass
quick_test_passed()
### BEGIN HIDDEN TESTS
capstone.check_accounting(InferenceService)
### END HIDDEN TESTS

# %% [markdown]
# ### Part 4: throughput and memory
#
# First the grader counts the Keras weight bytes your service creates on top of the model's
# own while sixteen clients are connected: at most two extra copies (one copy per client would
# be sixteen). Then it serves sixteen clients, 4 requests each, alternately with your service
# and with `capstone.GlobalLockService`, three rounds each. Your median requests per second
# must be at least twice the lock's, and over the timed rounds your service must make at most
# one model call for every three requests (the model counts its calls): a lock around each
# call makes one call per request, however fast the machine happens to run it.
#
# The model it uses for the rates, `capstone.busy_model()`, is the served model plus a layer
# that spends 2 ms of every call in a Python loop, whatever the batch size: a fixed per-call
# cost that holds the interpreter, as Keras's own Python around each call does (you timed it
# above). A sleep or a real computation would let a busy machine decide the grade; this cost
# does not depend on the rest of the machine, so the ratio measures your batching.

# %% nbgrader={"grade": true, "grade_id": "test_capstone_throughput", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
quick = capstone.measure_speedup(InferenceService, rounds=1, requests=10)
print(f"quick look: {quick.ratio:.1f}x the global lock's requests/s, "
      f"{quick.extra_bytes} extra weight bytes")
assert quick.extra_bytes <= capstone.MAX_EXTRA_COPIES * quick.copy_bytes, "share the one model: do not copy it per client"
quick_test_passed()
### BEGIN HIDDEN TESTS
capstone.check_throughput(InferenceService)
### END HIDDEN TESTS

# %% [markdown]
# ## Measure it
#
# Put the three designs side by side: one global lock, a model copy per client thread, and
# your micro-batching service. Each serves 1, 4 and 16 clients, 30 requests each, on a fresh
# model; the memory column counts Keras weight bytes alive beyond the model's own while the
# clients are connected.

# %%
designs = {"global lock": capstone.GlobalLockService,
           "per-thread copies": capstone.PerThreadService,
           "micro-batching": InferenceService}
results = capstone.compare_designs(designs, [1, 4, 16], requests=30)
print(capstone.table(results))
capstone.plot_designs(results)

# %%
at16 = {m.design: m for m in results if m.clients == 16}
at1 = {m.design: m for m in results if m.clients == 1}
print(f"16 clients, micro-batching / global lock:       "
      f"{at16['micro-batching'].rate / at16['global lock'].rate:.1f}x requests/s")
print(f"16 clients, micro-batching / per-thread copies: "
      f"{at16['micro-batching'].rate / at16['per-thread copies'].rate:.1f}x requests/s")
print(f"1 client, micro-batching / global lock:         "
      f"{at1['micro-batching'].rate / at1['global lock'].rate:.2f}x requests/s")
for design in designs:
    rows = sorted((m for m in results if m.design == design), key=lambda m: m.clients)
    print(f"{design:18s} 1 -> 16 clients: requests/s x{rows[-1].rate / rows[0].rate:5.2f}, "
          f"p50 x{rows[-1].p50_ms / rows[0].p50_ms:6.1f}, p99 x{rows[-1].p99_ms / rows[0].p99_ms:6.1f}")
batching = InferenceService(capstone.serving_model(), np.zeros(8, "float32"))
capstone.run_clients(batching, capstone.requests_for(0, 16, 10), deadline_s=30)
batching_stats = batching.stats()
batching.close()
print(f"micro-batching, 16 clients: {batching_stats['requests']} requests, "
      f"{batching_stats['batches']} model calls (the global lock: {lock_stats['batches']})")
claim("micro-batching answered sixteen clients' 160 requests with fewer model calls than requests",
      batching_stats["requests"] == 160 and batching_stats["batches"] < 160)
claim("the memory column: no extra weights for the lock and for micro-batching, one copy per "
      "client for per-thread copies",
      all(m.extra_bytes == 0 for m in results if m.design != "per-thread copies")
      and all(m.extra_bytes > 0 for m in results if m.design == "per-thread copies"))

# %% [markdown]
# Read the plots from left to right, with the last lines, which say how each design changed
# from 1 to 16 clients in your run. With one client there is nothing to batch: micro-batching
# hands each request to another thread, which costs something; the "1 client" line says how
# much here. As clients are added, the batcher answers more requests per model call, so its
# rate can grow with the clients, while each request also waits for the batch it rides in.
# The lock serves one request per call however many wait, and how its waiting spreads over
# p50 and p99 is the lock's unfairness, seen above. Per-thread copies call their models at the
# same time, but on two cores the calls compete for the same CPU and the GIL, each new client
# thread first clones and traces its own copy (inside the timed run, as a real server would
# on a new thread), and they pay for one copy of the weights per client. Your numbers will
# vary from run to run on a shared machine: read the ratios, measured side by side.
#
# ## Summary
#
# Share one warm model, let one thread own the calls to it, and batch the requests that are
# waiting: updates are applied between batches, every accepted request is answered before
# `close()` returns, and the model is paid for once.
