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
# # Warm up a Keras model before threads share it
#
# A server often loads one Keras model and lets many threads call it. The very first calls
# are special: on a model that has never run, the first call creates the predict function,
# traces it and creates the weights, and Keras decides whether to create the predict function
# with a check-then-set that takes no lock. In this lesson you run that race for real on
# TensorFlow 2.21 and Keras 3.
#
# **What you will see break.** Four threads call `predict_on_batch` on a fresh, unbuilt
# `Sequential` model at the same moment, twenty times over: you count how often a thread
# raises, and what it raises. You run the same race through `model.predict`. A built model
# does not raise but traces its predict function inside the threads' first requests, and a
# subclassed model can end up with duplicate weights without a word. You also run
# the advice you may find online (`_make_predict_function`, `make_predict_function`, "call
# `predict` once first") and see what it does on Keras 3.
#
# **What you will build.** Four small pieces of serving code, each graded by running it from
# several threads released together:
#
# 1. `warm_up`: warm exactly the entry point you serve with.
# 2. `SharedPredictor`: a predictor whose very first calls may come from many threads at once.
# 3. `LazyModel`: a model loaded on first use, once, and built before any other thread sees it.
# 4. `warm_up_both`: warm a server that answers with both `predict` and `predict_on_batch`.
#
# **How long it takes.** About 30 minutes. The notebook runs top to bottom in under two
# minutes on two cores; every number it prints is measured while you watch, so yours will
# differ a little from run to run.

# %% [markdown]
# ## Setup
#
# Import everything here. `autograder.checks.warmup` holds the small models used below, the
# runner that starts the threads, and the graders.

# %%
import os

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"

import inspect
import statistics
import threading
import warnings

import keras
import numpy as np
import tensorflow as tf

from autograder.checks import warmup
from autograder.lesson import claim, quick_test_passed

# %matplotlib inline
tf.get_logger().setLevel("ERROR")
print("TensorFlow", tf.__version__)
print("Keras", keras.__version__)

# Trials of each "see it break" experiment. The autograder does not run these experiments (a
# cold model raced from threads can crash TensorFlow itself): it runs only your answers, the
# tests and the cells they need.
TRIALS = 20
PREDICT_TRIALS = 4  # model.predict is slower: fewer trials
SUBCLASS_TRIALS = 40  # duplicate weights are rarer: more trials

# %% [markdown]
# ## See it break
#
# ### Four threads, one cold model
#
# `warmup.tiny_sequential(seed)` makes `Sequential([Dense(16, relu), Dense(4)])` without a
# `keras.Input`, which is how many models are written: Keras creates the weights on the first
# call, when it sees the input shape. Check that nothing exists yet:

# %%
model = warmup.tiny_sequential(0)
print("built:", model.built, "| weights:", len(model.weights),
      "| predict_function:", model.predict_function)

# %% [markdown]
# `warmup.race_trials` repeats one experiment on fresh models. In each trial it makes a new
# model, starts four threads, holds them at a barrier and releases them together with the
# interpreter switching threads as often as it can (`sys.setswitchinterval(1e-6)`). Each
# thread calls `warmup.predict_on_batch(model, batch)`, which is
# `model.predict_on_batch(batch)`, on its own batch of four rows.
#
# A cold model raced from threads can, rarely, crash TensorFlow itself and end its whole
# process. So `race_trials` runs cold trials in child Python processes: a trial that crashes
# its process is counted as failed (the report says so), and your kernel keeps running (warmed
# trials, which build nothing from threads, run here). Run it twenty times:

# %%
serve = warmup.predict_on_batch
print(inspect.getsource(serve))

# %%
cold = warmup.race_trials(warmup.tiny_sequential, serve, trials=TRIALS, threads=4)
print(cold.report())
claim("on a cold model, a thread raised in at least half of the trials",
      cold.failed >= TRIALS / 2)

# %% [markdown]
# The errors come from inside Keras and differ from trial to trial: that is what a race looks
# like. The line after them counts the trials that left the model with extra weights. Now
# make one `predict_on_batch` call on this thread before the four threads start, and run the
# same experiment:

# %%
warmed = warmup.race_trials(warmup.tiny_sequential, serve, trials=TRIALS, threads=4, warm=serve)
print(warmed.report())
claim("warmed, no thread raised and no model got extra weights, in any trial",
      warmed.failed == 0 and warmed.duplicated == 0)

# %% [markdown]
# ### The same race through `model.predict`
#
# `model.predict(x)` is the call most tutorials show. Run it from four threads on cold models,
# then on models warmed by one `predict` call on this thread. This time `race_trials` also
# compares every output with the same call made again on one thread once the threads are done
# (`compare=True`). `predict` builds a `tf.data` pipeline on every call, so it is slower: four
# trials each:

# %%
serve_with_predict = warmup.predict
cold_predict = warmup.race_trials(warmup.tiny_sequential, serve_with_predict,
                                  trials=PREDICT_TRIALS, threads=4, compare=True)
print("cold:  ", cold_predict.report().splitlines()[0])
warm_predict = warmup.race_trials(warmup.tiny_sequential, serve_with_predict,
                                  trials=PREDICT_TRIALS, threads=4, warm=serve_with_predict,
                                  compare=True)
print("warmed:", warm_predict.report().splitlines()[0])
print(f"warmed: outputs different from the one-thread calls in {warm_predict.mismatched} of "
      f"{warm_predict.compared} trials")
claim("model.predict on a cold model raised in at least one trial", cold_predict.failed >= 1)
claim("model.predict on a warmed model never raised and gave the one-thread outputs exactly",
      warm_predict.failed == 0 and warm_predict.mismatched == 0
      and warm_predict.compared == PREDICT_TRIALS)

# %% [markdown]
# The public API races too: the warm-up is what fixes it, not the entry point.
#
# ### A built model does not raise, it traces several times
#
# Give the model a `keras.Input` and its weights exist from the start. Run the same four
# threads on it, cold and then warmed, and count how often the predict function is traced
# while the threads run. Cold first:

# %%
built_model = warmup.built_sequential
print(inspect.getsource(built_model))

# %%
built_cold = warmup.race_trials(built_model, serve, trials=TRIALS, threads=4)
print(built_cold.report())
print("traces while the 4 threads ran, per trial:", sorted(built_cold.traces))
print(f"trials in which more than one thread traced: {sum(n > 1 for n in built_cold.traces)} "
      f"of {built_cold.trials}")
claim("the built model never raised, and was traced while its threads ran in every trial",
      built_cold.failed == 0 and all(n >= 1 for n in built_cold.traces))

# %%
built_warm = warmup.race_trials(built_model, serve, trials=TRIALS, threads=4, warm=serve)
print(built_warm.report())
print("traces while the 4 threads ran, per trial:", sorted(built_warm.traces))
claim("warmed, the built model never raised and traced nothing while its threads ran",
      built_warm.failed == 0 and not any(built_warm.traces))

# %% [markdown]
# The built model does not raise. Cold, the four first requests trace the predict function
# themselves, and in the trials counted on the last line of the cold run several threads each
# traced their own copy of it: wasted work, done while users wait. Warmed, they trace nothing.
# You measure what that costs in "Measure it" below.
#
# ### A subclassed model gets duplicate weights, silently
#
# `warmup.TinyNet` is the same network written as a subclass of `keras.Model`: its layers
# create their weights on their first call. Call it directly, `model(x)` (that is
# `warmup.call_model`), from four threads, forty times (this race shows up less often than
# the others):

# %%
subclassed = warmup.race_trials(warmup.TinyNet, warmup.call_model,
                                trials=SUBCLASS_TRIALS, threads=4)
print(subclassed.report())
claim("the subclassed model ended up with more than four weights in at least one trial",
      subclassed.duplicated >= 1)

# %% [markdown]
# Look at the second line: in the trials where the model holds more than four weights, two
# threads both found a layer unbuilt and both created its kernel. An exception, when one is
# raised, at least tells you that something went wrong; a duplicated weight says nothing by
# itself. Only counting the weights shows it, and the graders below do.

# %% [markdown]
# ## See why
#
# ### The picture of one trial
#
# Here is the first cold trial in which a thread raised. Each lane is a thread, the bar is its
# `predict_on_batch` call, and a red cross marks a call that raised, with the exception type:

# %%
picture = cold.first_failure or cold.last
picture.figure() if picture else print("(no trials ran)")

# %% [markdown]
# The four calls run side by side: each starts before any other has finished. The first call
# on an unbuilt model does three things in turn: it creates the predict function if
# `model.predict_function` is `None`, traces it, and, while tracing, builds the layers
# (creates their weights). The first step is a check-then-set without a lock (you read it
# below), so several threads can each create their own predict function and trace it,
# building the same layers at the same time and seeing each other's half-done work. Some of
# the messages say so directly: "You cannot add new elements of state ... to a layer that is
# already built" is a thread creating weights in a layer that another thread has just
# finished building. The warmed run did all three steps once, on one thread, before the
# others started.
#
# ### `make_predict_function` is a check-then-set without a lock
#
# Read the first lines of the method Keras runs at the start of every `predict_on_batch`:

# %%
source = inspect.getsource(type(model).make_predict_function)
print("\n".join(source.splitlines()[:3]))
print("...")
print("mentions a lock anywhere:", "lock" in source.lower())
claim("make_predict_function takes no lock", "lock" not in source.lower())

# %% [markdown]
# Every thread that reads `None` before the first one stores its function builds its own
# predict function and traces it; the last one stored wins. That is the "traced several
# times" you counted on the built model.
#
# ### Outdated advice, run on Keras 3
#
# Answers written for Keras 2 and TensorFlow 1 say to call `model._make_predict_function()`
# before starting threads. Ask this Keras:

# %%
model = warmup.tiny_sequential(0)
print("has _make_predict_function:", hasattr(model, "_make_predict_function"))
print("has make_predict_function: ", hasattr(model, "make_predict_function"))
try:
    model._make_predict_function()
except AttributeError as error:
    print("AttributeError:", error)

# %% [markdown]
# The public `make_predict_function()` exists, but it only creates the function: it neither
# builds the model nor traces anything. `warmup.TraceLog(model)` counts traces of the predict
# function (Keras runs `predict_step` only while tracing):

# %%
model = warmup.tiny_sequential(0)
log = warmup.TraceLog(model)
model.make_predict_function()
print("predict_function:", type(model.predict_function).__name__,
      "| built:", model.built, "| traces so far:", log.count)
claim("make_predict_function built nothing and traced nothing", not model.built and log.count == 0)

# %% [markdown]
# So calling it before the threads start does not help. Try it (the model is still cold, so
# `in_child=True` runs these trials in child processes too):

# %%
made_only = warmup.race_trials(warmup.tiny_sequential, serve, trials=TRIALS, threads=4,
                               warm=warmup.make_predict_function_only, in_child=True)
print(made_only.report())
claim("after make_predict_function alone, a thread still raised in at least one trial",
      made_only.failed >= 1)

# %% [markdown]
# The usual Keras 3 advice is "call `predict` once first". It does build the model, but
# `predict` and `predict_on_batch` call the predict function with differently shaped inputs,
# so warming one does not warm the other. Count the traces:

# %%
model = built_model(0)
log = warmup.TraceLog(model)
batch = np.ones((4, 8), dtype="float32")
counts = []
model.predict(batch, verbose=0)
counts.append(log.count)
print("traces after predict:                  ", log.count)
model.predict_on_batch(batch)
counts.append(log.count)
print("traces after then predict_on_batch:    ", log.count)
model.predict_on_batch(batch)
counts.append(log.count)
print("traces after a second predict_on_batch:", log.count)
model.predict_on_batch(batch[:1])
counts.append(log.count)
print("traces after a batch of one row:       ", log.count)
print("tf.function tracing count:", model.predict_function.experimental_get_tracing_count())
claim("predict_on_batch traced again after predict, not again for the same shape, "
      "and again for a batch of one row",
      counts[1] > counts[0] and counts[2] == counts[1] and counts[3] > counts[2])

# %% [markdown]
# The batch shape matters too: a batch with a different number of rows traced again. Warm
# exactly the entry point you serve with, with a batch of the shape you serve.
#
# One more trap, for subclassed models: `model.build(shape)` on a subclass without its own
# `build()` marks the model built but creates no weights (Keras warns you). Only a call on data
# creates them:

# %%
net = warmup.TinyNet(0)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    net.build((None, 8))
built_weights = len(net.weights)
print("after build(): built:", net.built, "| weights:", built_weights)
print("warning:", str(caught[0].message)[:110], "...")
net(np.zeros((1, 8), dtype="float32"))
print("after one call on zeros: weights:", len(net.weights))
claim("build() created no weights on the subclass; one call created all four",
      len(net.weights) == warmup.EXPECTED_WEIGHTS and built_weights == 0)

# %% [markdown]
# ## Fix it
#
# Each exercise has an answer cell, a line that runs your answer once, and a test cell.
# The test cell's quick checks run in seconds; the grader also runs your answer from six
# threads released together, over several fresh models, and checks that no thread raises,
# that every output equals the same model run on one thread, that the model holds exactly its
# four weights, and the property the exercise names. If a check fails it shows the trial's
# picture.
#
# ### Exercise 1: warm exactly the entry point you serve with
#
# Your server calls `model.predict_on_batch(batch)` from many threads, always with batches of
# the same shape. Write `warm_up(model, example_batch)`, which the server runs once, on one
# thread, before any serving thread starts. Make every call on that thread: a warm-up that
# starts threads of its own races on the cold model, and one that returns before they end
# races with serving, so the grader fails any warm-up that traces the model on another thread.
# Afterwards, serving must not raise, must not add weights, and must not trace the predict
# function again.

# %% nbgrader={"grade": false, "grade_id": "ex_warmup_entry_point", "locked": false, "schema_version": 3, "solution": true, "task": false}
def warm_up(model, example_batch):
    """Prepare ``model`` so that threads can call ``model.predict_on_batch`` on it at once.

    Runs once, on one thread, before any serving thread starts. Afterwards, concurrent
    ``model.predict_on_batch(batch)`` calls with batches shaped like ``example_batch`` must
    not raise, must not add weights and must not trace the predict function.

    Args:
        model: An unbuilt Keras model (no ``keras.Input``).
        example_batch: A numpy batch with the shape and dtype of the batches you will serve.
    """
    ### BEGIN SOLUTION
    model.predict_on_batch(example_batch)
    ### END SOLUTION


# %%
model = warmup.tiny_sequential(0)
log = warmup.TraceLog(model)
warm_up(model, np.zeros((4, 8), dtype="float32"))
print("after warm_up: weights:", len(model.weights), "| traces:", log.count)
log.reset()
model.predict_on_batch(np.ones((4, 8), dtype="float32"))
print("traces when serving afterwards:", log.count)

# %% nbgrader={"grade": true, "grade_id": "test_warmup_entry_point", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
model = warmup.tiny_sequential(1)
log = warmup.TraceLog(model)
warm_up(model, np.zeros((3, 8), dtype="float32"))
assert len(model.weights) == warmup.EXPECTED_WEIGHTS, (
    f"after warm_up the model has {len(model.weights)} weights; warm_up should create them")
log.reset()
model.predict_on_batch(np.ones((3, 8), dtype="float32"))
assert log.count == 0, (
    f"predict_on_batch traced {log.count} time(s) after warm_up; a warm model traces 0 times")
warmup.check_entry_point(warm_up, trials=1)
quick_test_passed()
### BEGIN HIDDEN TESTS
warmup.check_entry_point(warm_up)
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 2: a shared predictor safe for concurrent first calls
#
# Sometimes you cannot warm up before the threads start: the input shape is only known when
# the first request arrives, or a web framework creates your predictor lazily. Then the very
# first calls may come from many threads at once.
#
# Write `SharedPredictor`. It wraps an unbuilt model, and `predictor(batch)` returns
# `model.predict_on_batch(batch)`. Exactly one thread must make the first call, the one that
# builds and traces; threads arriving meanwhile wait until it has finished. Once the model is
# warm, calls need not wait for each other, so take the lock only while the model is cold
# (this part is not graded).
#
# Keras sets `model.built` early in the first call, long before tracing ends, so a fast path
# that trusts it lets a thread into the middle of the first call: keep a flag of your own. The
# grader also runs your predictor on a stand-in cold model under `explore`, which tries every
# interleaving with up to two thread switches; use the model only through
# `predict_on_batch` (or `predict`, or calling it).

# %% nbgrader={"grade": false, "grade_id": "ex_warmup_shared_predictor", "locked": false, "schema_version": 3, "solution": true, "task": false}
class SharedPredictor:
    """Serve ``model.predict_on_batch`` to many threads, including the very first calls."""

    def __init__(self, model):
        """Wrap an unbuilt Keras ``model``. Do not call it here: the input shape is unknown."""
        ### BEGIN SOLUTION
        self._model = model
        self._lock = threading.Lock()
        self._warm = False
        ### END SOLUTION

    def __call__(self, batch):
        """Return ``model.predict_on_batch(batch)``; safe to call from many threads at once."""
        ### BEGIN SOLUTION
        if not self._warm:
            with self._lock:
                if not self._warm:
                    result = self._model.predict_on_batch(batch)
                    self._warm = True
                    return result
        return self._model.predict_on_batch(batch)
        ### END SOLUTION


# %%
predictor = SharedPredictor(warmup.tiny_sequential(0))
print(predictor(np.ones((4, 8), dtype="float32")))

# %% nbgrader={"grade": true, "grade_id": "test_warmup_shared_predictor", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
model = warmup.tiny_sequential(2)
predictor = SharedPredictor(model)
batch = np.ones((3, 8), dtype="float32")
first, second = predictor(batch), predictor(batch)
assert np.allclose(first, model.predict_on_batch(batch)), (
    "predictor(batch) should return model.predict_on_batch(batch)")
assert np.allclose(second, first), "a second call should return the same output"
warmup.check_shared_predictor(SharedPredictor, trials=1)
quick_test_passed()
### BEGIN HIDDEN TESTS
warmup.check_shared_predictor(SharedPredictor)
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 3: a lazily built model behind a lock
#
# Loading a model takes time, so a server often loads it on the first request, from whichever
# thread gets there first. Write `LazyModel(factory, input_shape)`:
#
# - `factory()` returns a new, unbuilt subclassed model (like `warmup.TinyNet`); it must run
#   once, on the first `get()`, never in `__init__`;
# - `get()` returns the one shared model, the same object to every thread;
# - the model `get()` returns is built: its weights exist before any thread other than the
#   builder can see it. Threads call it directly, `model(batch)`, at once.
#
# Remember the trap from "See why": `model.build(shape)` does not create a subclass's weights.

# %% nbgrader={"grade": false, "grade_id": "ex_warmup_lazy_model", "locked": false, "schema_version": 3, "solution": true, "task": false}
class LazyModel:
    """Create a model on first use, once, and share it only once it is built."""

    def __init__(self, factory, input_shape):
        """Remember how to make the model; do not call ``factory`` yet.

        Args:
            factory: Returns a new, unbuilt Keras model.
            input_shape: Shape of one input row, e.g. ``(8,)``.
        """
        ### BEGIN SOLUTION
        self._factory = factory
        self._input_shape = tuple(input_shape)
        self._model = None
        self._lock = threading.Lock()
        ### END SOLUTION

    def get(self):
        """Return the shared, built model, creating it on the first call from any thread."""
        ### BEGIN SOLUTION
        model = self._model
        if model is None:
            with self._lock:
                if self._model is None:
                    fresh = self._factory()
                    fresh(np.zeros((1, *self._input_shape), dtype="float32"))
                    self._model = fresh
                model = self._model
        return model
        ### END SOLUTION


# %%
lazy = LazyModel(lambda: warmup.TinyNet(0), (8,))
shared = lazy.get()
print("same model twice:", shared is lazy.get(), "| weights:", len(shared.weights))

# %% nbgrader={"grade": true, "grade_id": "test_warmup_lazy_model", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
made = []


def factory():
    made.append(warmup.TinyNet(3))
    return made[-1]


lazy = LazyModel(factory, (8,))
assert not made, "LazyModel must not call the factory before the first get()"
shared = lazy.get()
assert made == [shared] and lazy.get() is shared, (
    "get() should run the factory once and return its model every time")
assert len(shared.weights) == warmup.EXPECTED_WEIGHTS, (
    f"get() returned a model with {len(shared.weights)} weights; build it before sharing it")
warmup.check_lazy_model(LazyModel, trials=1)
quick_test_passed()
### BEGIN HIDDEN TESTS
warmup.check_lazy_model(LazyModel)
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 4: a server with two entry points
#
# Many servers answer with `model.predict(batch, verbose=0)`, the call most tutorials show, in
# some handlers and with `model.predict_on_batch(batch)` in others, from many threads at once,
# always with batches shaped like `example_batch`. Write `warm_up_both(model, example_batch)`,
# which the server runs once, on one thread, before any serving thread starts. As in Exercise
# 1, make every call on that thread, one entry point after the other. Afterwards neither entry
# point may raise, add weights or trace the predict function again. Remember what
# you counted in "Outdated advice": warming one entry point does not warm the other. The
# grader serves half the threads with each.

# %% nbgrader={"grade": false, "grade_id": "ex_warmup_both_entry_points", "locked": false, "schema_version": 3, "solution": true, "task": false}
def warm_up_both(model, example_batch):
    """Prepare ``model`` for concurrent ``predict`` and ``predict_on_batch`` calls.

    Runs once, on one thread, before any serving thread starts.

    Args:
        model: An unbuilt Keras model (no ``keras.Input``).
        example_batch: A numpy batch with the shape and dtype of the batches you will serve.
    """
    ### BEGIN SOLUTION
    model.predict(example_batch, verbose=0)
    model.predict_on_batch(example_batch)
    ### END SOLUTION


# %%
model = warmup.tiny_sequential(0)
log = warmup.TraceLog(model)
warm_up_both(model, np.zeros((4, 8), dtype="float32"))
print("after warm_up_both: weights:", len(model.weights), "| traces:", log.count)
log.reset()
model.predict(np.ones((4, 8), dtype="float32"), verbose=0)
model.predict_on_batch(np.ones((4, 8), dtype="float32"))
print("traces when serving both afterwards:", log.count)

# %% nbgrader={"grade": true, "grade_id": "test_warmup_both_entry_points", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
model = warmup.tiny_sequential(4)
log = warmup.TraceLog(model)
warm_up_both(model, np.zeros((3, 8), dtype="float32"))
assert len(model.weights) == warmup.EXPECTED_WEIGHTS, (
    f"after warm_up_both the model has {len(model.weights)} weights; warm_up_both should "
    "create them")
for serve in (warmup.predict, warmup.predict_on_batch):
    log.reset()
    serve(model, np.ones((3, 8), dtype="float32"))
    assert log.count == 0, (
        f"{serve.__name__} traced {log.count} time(s) after warm_up_both; a warm model traces "
        "0 times")
warmup.check_both_entry_points(warm_up_both, trials=1)
quick_test_passed()
### BEGIN HIDDEN TESTS
warmup.check_both_entry_points(warm_up_both)
### END HIDDEN TESTS

# %% [markdown]
# ## Measure it
#
# On the built model, compare the four concurrent first requests when cold with the same four
# requests after one warm-up call. Each figure is the median of the twenty trials you ran in
# "See it break" (time from the first call's start to the last call's end):

# %%
if built_cold.trials and built_warm.trials:
    cold_ms = statistics.median(built_cold.span_ms)
    warm_up_ms = statistics.median(built_warm.warm_ms)
    warm_ms = statistics.median(built_warm.span_ms)
    print(f"4 first requests, cold:        {cold_ms:7.1f} ms, "
          f"{statistics.median(built_cold.traces):g} traces (median)")
    print(f"one warm-up call, one thread:  {warm_up_ms:7.1f} ms")
    print(f"4 requests after the warm-up:  {warm_ms:7.1f} ms, "
          f"{statistics.median(built_warm.traces):g} traces")
    print(f"cold requests / warm requests:             {cold_ms / warm_ms:5.1f}x")
    print(f"cold requests / (warm-up + warm requests): {cold_ms / (warm_up_ms + warm_ms):5.1f}x")
else:
    print("(no trials ran)")

# %% [markdown]
# The warm-up pays for one trace, once, before any user waits. The cold start pays for at
# least one trace, and one more for every other thread that found the function missing (you
# counted them per trial above), inside the first users' requests.

# %% [markdown]
# ## Summary
#
# Before threads share a Keras model, build it and trace it on one thread, through the entry
# point and with the batch shape you will serve. When the first call cannot be made up front,
# let exactly one thread make it under a lock, and hand the model out only once it is built.
