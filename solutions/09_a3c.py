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
# # Asynchronous actor-learners on one shared Keras network (A3C)
#
# A3C (asynchronous advantage actor-critic) trains one network with several actor threads at
# once. Each actor plays its own copy of the environment, calls the shared network to choose
# its actions, computes gradients from what it saw and pushes them into the shared network;
# every actor counts its steps into one global step counter `T` and stops at `T_MAX`. "Is
# Keras thread safe?" is the question people ask when they write it. This lesson answers it
# operation by operation, on TensorFlow 2.21 and Keras 3, with numbers you measure.
#
# **What you will see break.** Four actors make the first calls of a cold shared network at
# once. Threads update the network's weights with `v.assign_sub(...)` and lose updates;
# threads share one optimizer and `optimizer.iterations` loses counts, although plain SGD's
# weights lose nothing. Actors read the network while a learner updates it and get layers of
# two versions. The actor's own bookkeeping, `t = T; model(x); T = t + 1`, loses steps, and
# `while T < T_MAX` runs past `T_MAX`.
#
# **What you will build.**
#
# 1. `make_shared_network`: a network N actors can call at once from their first call.
# 2. `SharedLearner`: gradients pushed by many actors, every one applied exactly once.
# 3. `StepBudget`: the global `T`, its stop condition and the episode returns, exact under
#    every interleaving.
# 4. `VersionedNetwork`: actions computed with one version of the weights, never half an
#    update, and the version they used.
#
# Then you measure what the safe designs cost on two cores.
#
# **How long it takes.** About 60 minutes. The notebook runs top to bottom in about two
# minutes on two cores; every number it prints is measured while you watch, so yours will
# differ from run to run. Lessons 01 (warm-up), 02 (locks) and 03 (variables) come first.

# %% [markdown]
# ## Setup
#
# Import everything here. `autograder.checks.a3c` holds the shared network, the live trials,
# the pictures and the graders; `explore` is the controlled scheduler of lessons 00 and 05.

# %%
import os

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"

import inspect
import queue
import statistics
import threading
import time

import keras
import numpy as np
import tensorflow as tf

from autograder.checks import a3c
from autograder.harness import explore
from autograder.lesson import claim, quick_test_passed

# %matplotlib inline
tf.get_logger().setLevel("ERROR")
print("TensorFlow", tf.__version__)
print("Keras", keras.__version__)

# %% [markdown]
# ## The actors' world
#
# The environment is a corridor of eight cells. An actor starts in cell 3 and moves left (0)
# or right (1); reaching cell 7 pays 1 and ends the episode, and so do 20 steps. The state is
# the actor's cell, one-hot:

# %%
class Corridor:
    """Eight cells in a row: start in cell 3, action 0 goes left, 1 right; cell 7 pays 1."""

    CELLS, START, GOAL, LIMIT = 8, 3, 7, 20

    def __init__(self):
        self.reset()

    def reset(self):
        self.cell, self.steps = self.START, 0
        return self.state()

    def state(self):
        one_hot = np.zeros((1, self.CELLS), dtype="float32")
        one_hot[0, self.cell] = 1.0
        return one_hot

    def step(self, action):
        self.cell = min(self.GOAL, max(0, self.cell + (1 if action == 1 else -1)))
        self.steps += 1
        reward = 1.0 if self.cell == self.GOAL else 0.0
        return self.state(), reward, self.cell == self.GOAL or self.steps == self.LIMIT


# %% [markdown]
# The shared network is `a3c.actor_critic()`: a functional Keras model with `keras.Input`,
# a trunk of 16 ReLU units and two heads, the policy (two logits, one per action) and the
# value of the state. An actor's rollout picks actions from the policy, and its gradients
# are the usual advantage actor-critic loss on what it saw:

# %%
def rollout(net, env, state, rng, steps=5):
    """Play up to ``steps`` steps from ``state``; what an A3C actor does between two pushes."""
    states, actions, rewards, done = [], [], [], False
    for _ in range(steps):
        logits, _ = net.predict_on_batch(state)
        probabilities = np.exp(logits[0] - logits[0].max())
        action = int(rng.choice(2, p=probabilities / probabilities.sum()))
        states.append(state)
        actions.append(action)
        state, reward, done = env.step(action)
        rewards.append(reward)
        if done:
            state = env.reset()
            break
    return np.concatenate(states), np.array(actions), np.array(rewards, "float32"), state, done


def actor_critic_gradients(net, states, actions, rewards, gamma=0.9):
    """Gradients of the advantage actor-critic loss on one rollout, for ``net``'s weights."""
    returns = np.zeros_like(rewards)
    running = 0.0
    for index in range(len(rewards) - 1, -1, -1):
        running = rewards[index] + gamma * running
        returns[index] = running
    with tf.GradientTape() as tape:
        logits, values = net(states)
        advantage = returns - values[:, 0]
        chosen = tf.gather(tf.nn.log_softmax(logits), actions, batch_dims=1)
        loss = (-tf.reduce_mean(chosen * tf.stop_gradient(advantage))
                + 0.5 * tf.reduce_mean(advantage**2))
    return tape.gradient(loss, net.trainable_variables)


# %% [markdown]
# One actor, alone, for one rollout: it acts, computes gradients and applies them.

# %%
solo_net = a3c.actor_critic()
solo_optimizer = keras.optimizers.SGD(learning_rate=0.05)
solo_env = Corridor()
solo_states, solo_actions, solo_rewards, _, _ = rollout(solo_net, solo_env, solo_env.reset(),
                                                        np.random.default_rng(0))
solo_grads = actor_critic_gradients(solo_net, solo_states, solo_actions, solo_rewards)
solo_optimizer.apply_gradients(zip(solo_grads, solo_net.trainable_variables, strict=False))
print("actions:", solo_actions.tolist(), "| rewards:", solo_rewards.tolist())
print("gradient shapes:", [tuple(g.shape) for g in solo_grads],
      "| optimizer.iterations:", int(solo_optimizer.iterations.numpy()))

# %% [markdown]
# A3C runs several of these actors at once, on one shared network. Here is what breaks.
#
# ## See it break
#
# ### A cold network, four actors at once
#
# A network built as a `Sequential` without `keras.Input` has no weights until its first
# call, and in an A3C program the first calls come from the actors. `a3c.cold_start_trials`
# runs four real actor threads released together on a fresh network, each calling
# `predict_on_batch` on its own state, five trials per kind of network, in a child process
# (a cold network raced from threads can crash TensorFlow itself; the child would die, not
# your kernel). Three kinds: the unbuilt `Sequential`; the functional
# network, built by `keras.Input` but never called; and the same after one
# `predict_on_batch` on this thread ("warm").
#
# While the actors run, the trials set the interpreter's switch interval to 1 microsecond
# (`sys.setswitchinterval(1e-6)`; the default is 5 ms), so Python hands the GIL from thread to
# thread as often as it can. That widens no window by itself; it makes every window that
# exists open in almost every trial instead of in some of them.

# %%
cold = a3c.cold_start_trials([("sequential", False), ("functional", False),
                              ("functional", True)], threads=4, trials=5, switch_interval=1e-6)
cold_sequential, cold_functional, warm_functional = cold.values()
print("Sequential, no keras.Input:", cold_sequential)
print("   first errors:", cold_sequential.errors[:2])
print("functional, cold:          ", cold_functional)
print("functional, warm:          ", warm_functional)
claim("the unbuilt Sequential raised in at least 2 of 5 trials; the functional network never "
      "raised, but was traced while the actors ran in every cold trial and never when warm",
      cold_sequential.raised >= 2 and cold_functional.raised == warm_functional.raised == 0
      and min(cold_functional.traces) >= 1 and max(warm_functional.traces) == 0)

# %% [markdown]
# The unbuilt `Sequential` failed outright: its weights were being created by one thread
# while another already ran the graph. The functional network has its weights from
# `keras.Input`, so nothing failed, but the actors' first calls still traced the predict
# function while they were supposed to be acting. Why more than one thread can end up doing
# that is in Keras's own source: `predict_on_batch` calls `make_predict_function`, which
# starts like this and stores the function at its end, with no lock in between:

# %%
source = inspect.getsource(keras.Model.make_predict_function)
lines = source.splitlines()
print("\n".join(lines[:3]), "\n    ...\n" + "\n".join(lines[-3:]))
claim("make_predict_function tests self.predict_function first and sets it at its end, with "
      "no lock",
      "if self.predict_function is not None and not force" in lines[1]
      and any("self.predict_function = predict_function" in line for line in lines[-4:])
      and "Lock" not in source)

# %% [markdown]
# A check-then-act: every actor that arrives before the first one has stored its function
# builds and traces one of its own (in the cold functional trials above, every trace beyond
# one per trial is an actor that got through that window). Lesson 01 owns this race;
# exercise 1 makes the shared network ready before any actor starts.
#
# Older A3C code warms up with `model._make_predict_function()  # have to initialize before
# threading`. Try that advice on Keras 3, and its public cousin `make_predict_function()`:

# %%
folklore_net = a3c.actor_critic()
has_private = hasattr(folklore_net, "_make_predict_function")
folklore_net.make_predict_function()
folklore_traces = a3c.TraceCount(folklore_net)
folklore_net.predict_on_batch(np.zeros((1, a3c.STATE_SIZE), dtype="float32"))
print("Keras 3 models have _make_predict_function:", has_private)
print("traces of the first predict_on_batch after make_predict_function():",
      folklore_traces.traces())
claim("Keras 3 has no _make_predict_function, and make_predict_function() alone traced "
      "nothing: the first predict_on_batch still traced",
      not has_private and folklore_traces.traces() >= 1)

# %% [markdown]
# `make_predict_function()` only creates the `tf.function`; the trace happens on its first
# call. Warm a network by making the very call the actors will make.
#
# ### Lost updates: `assign_sub` and `optimizer.iterations`
#
# Lesson 03 taught that `tf.Variable.assign_add` is atomic. A model's weights look like
# variables, so an actor could update them directly. Compare three ways to apply one
# gradient of ones with learning rate 2^-6 (a power of two: every update subtracts exactly
# `2**-6`, so the final weight says exactly how many updates landed):

# %%
def update_with_assign_sub(net, optimizer, grads):
    for v, g in zip(net.trainable_variables, grads, strict=False):
        v.assign_sub(a3c.LEARNING_RATE * g)  # v is a keras.Variable


def update_with_tf_variable(net, optimizer, grads):
    for v, g in zip(net.trainable_variables, grads, strict=False):
        v.value.assign_sub(a3c.LEARNING_RATE * g)  # v.value is the tf.Variable inside it


def update_with_apply_gradients(net, optimizer, grads):
    optimizer.apply_gradients(zip(grads, net.trainable_variables, strict=False))  # one shared SGD


# %% [markdown]
# `a3c.lost_updates` releases N real threads together; between them they make 960 updates
# on a network whose weights start at 0, and it counts what landed, in the weights and in
# the optimizer's `iterations` (one trial per thread count; a lost update needs a thread
# switch to fall between a read and its write, so each trial makes enough updates for that
# to happen even on one busy core):

# %%
lost_table = {}
for name, update in (("keras.Variable.assign_sub", update_with_assign_sub),
                     ("tf.Variable.assign_sub", update_with_tf_variable),
                     ("apply_gradients", update_with_apply_gradients)):
    lost_table[name] = {n: a3c.lost_updates(update, threads=n, calls=960, trials=1)
                        for n in (1, 2, 4, 8)}
    for n, run in lost_table[name].items():
        print(f"{name:26s} {n} thread(s): {run}")
assign_sub_runs, tf_variable_runs, apply_runs = lost_table.values()
claim("keras.Variable.assign_sub lost weight updates with 2, 4 and 8 threads; "
      "the tf.Variable inside lost none",
      all(lost > 0 for n in (2, 4, 8) for lost in assign_sub_runs[n].lost_weights)
      and all(lost == 0 for run in tf_variable_runs.values() for lost in run.lost_weights))
claim("shared apply_gradients lost no weight update, but optimizer.iterations missed counts "
      "with 4 and 8 threads",
      all(lost == 0 for run in apply_runs.values() for lost in run.lost_weights)
      and all(lost > 0 for n in (4, 8) for lost in apply_runs[n].lost_iterations))

# %%
a3c.plot_lost_updates({"keras.Variable.assign_sub": assign_sub_runs,
                       "tf.Variable.assign_sub": tf_variable_runs,
                       "apply_gradients: weights": apply_runs,
                       "apply_gradients: iterations [iterations]": apply_runs})

# %% [markdown]
# Read the two lines behind it. A `keras.Variable`'s `assign_sub` is a read and a separate
# assign, so it loses updates exactly as `v.assign(v - x)` did in lesson 03; the optimizer
# counts its steps with `assign_add` on such a variable; plain SGD's weight update, though,
# goes to the `tf.Variable` inside, whose `assign_sub` is one atomic op:

# %%
keras_assign_sub = inspect.getsource(keras.Variable.assign_sub)
apply_source = inspect.getsource(keras.optimizers.Optimizer.apply)
sgd_assign_sub = inspect.getsource(type(keras.optimizers.SGD()).assign_sub)
print(keras_assign_sub)
print("... BaseOptimizer.apply ends with:", apply_source.strip().splitlines()[-1].strip())
print("... the TensorFlow optimizer's assign_sub:", sgd_assign_sub.splitlines()[2].strip())
claim("keras.Variable.assign_sub is self.assign(self - value); apply() counts with "
      "self._iterations.assign_add(1); SGD's assign_sub unwraps variable.value",
      "return self.assign(self - value)" in keras_assign_sub
      and apply_source.strip().splitlines()[-1].strip() == "self._iterations.assign_add(1)"
      and "variable = variable.value" in sgd_assign_sub)

# %% [markdown]
# So Hogwild (everyone applies, no lock) keeps plain SGD's weights exact here, by the
# accident of one atomic op per variable, while the step count that schedules and
# checkpoints read drifts. An optimizer with state is worse off. Read Adam's update of its
# first moment `m`:

# %%
adam_source = inspect.getsource(keras.optimizers.Adam.update_step)
print("\n".join(line for line in adam_source.splitlines()
                if "iterations" in line or "subtract(gradient, m)" in line
                or "self.assign_add(" in line))
claim("Adam reads iterations and m in ops of their own, apart from the assign_add that "
      "updates m",
      "self.iterations + 1" in adam_source and "ops.subtract(gradient, m)" in adam_source)

# %% [markdown]
# `gradient - m` reads `m` in one op; `assign_add` adds to it in another. Two threads that
# both read `m` before either adds compute their updates from the same old `m`, and the
# bias correction reads `iterations`, which loses counts as you saw: no order of the same
# updates run one at a time gives that result. Hogwild-exactness is a property of plain SGD
# on these ops, not of sharing an optimizer.
#
# ### Torn models: reading while a learner updates
#
# Now one learner applies updates while two actors read the network. `a3c.torn_reads` starts
# from every weight equal to 1 and lets the learner apply 60 SGD steps that raise every
# weight by exactly 1 (version 1, 2, 3...). A forward pass on a state of ones whose layers
# all had version `k` gives `144 k^2 + k` in every output, so a pass that mixed versions
# shows; a weight copy (`get_weights()`, what an actor does to sync its local network) shows
# each variable's version. Two trials each, then the same with one lock held by the learner
# around each update and by the readers around each read:

# %%
def read_by_predict(net, x):
    return net.predict_on_batch(x)


def read_weight_copy(net, x):
    return net.get_weights()


torn_table = {}
for name, read in (("predict_on_batch", read_by_predict), ("get_weights", read_weight_copy)):
    for locked in (False, True):
        runs = [a3c.torn_reads(read, updates=60, readers=2,
                               lock=threading.Lock() if locked else None) for _ in range(2)]
        torn_table[name, locked] = runs
        print(f"{name:16s} {'with a lock' if locked else 'no lock    '}: "
              f"{sum(r.torn for r in runs):4d} of {sum(r.reads for r in runs):4d} reads torn")
claim("reads made while the learner updated were torn in every unlocked trial, both forward "
      "passes and weight copies; none with the lock",
      all(r.torn > 0 for (name, locked), runs in torn_table.items() if not locked for r in runs)
      and all(r.torn == 0 for (name, locked), runs in torn_table.items() if locked
              for r in runs))

# %%
a3c.plot_torn_read(next(r for r in torn_table["get_weights", False] if r.example))

# %% [markdown]
# One copy, several versions: the variables were read one after the other while the
# learner's update assigned them one after the other. `predict_on_batch` runs the whole
# forward pass as one graph, and it tears as well: a graph reads each variable when its op
# runs, it does not take a snapshot of the network.
#
# ### The actor's bookkeeping: `T`
#
# Every A3C actor counts its steps into the global `T`. Written the way the loop reads,
# the actor takes `T`, acts, and writes `T + 1`:

# %%
shared_state = np.zeros((1, a3c.STATE_SIZE), dtype="float32")
bookkeeping_net = a3c.actor_critic()
bookkeeping_net(shared_state)
T = 0


def actor_read_act_write(steps):
    global T
    for _ in range(steps):
        t = T
        bookkeeping_net(shared_state)  # choose an action: TensorFlow lets go of the GIL
        T = t + 1


def count_steps(trials=3, threads=4, steps=250):
    global T
    finals = []
    for _ in range(trials):
        T = 0
        a3c.run_threads(lambda index: actor_read_act_write(steps), threads)
        finals.append(T)
    return finals


read_act_write = count_steps()
print("T after 4 actors x 250 steps:", read_act_write, "| expected:", 4 * 250)
claim("t = T; model(x); T = t + 1 lost steps in every trial", max(read_act_write) < 1000)

# %% [markdown]
# Most steps vanished: while one actor was inside the network, the others read the same `T`
# and wrote the same `T + 1`. Now the stop condition, `while T < T_MAX`, with the increment
# right after the action:

# %%
T_MAX = 200


def actor_until_budget():
    global T
    while T < T_MAX:
        bookkeeping_net(shared_state)
        T += 1


def run_to_budget(trials=3, threads=4):
    global T
    finals = []
    for _ in range(trials):
        T = 0
        a3c.run_threads(lambda index: actor_until_budget(), threads)
        finals.append(T)
    return finals


overshoot = run_to_budget()
print("T at the end:", overshoot, "| T_MAX:", T_MAX)
claim("while T < T_MAX overshot T_MAX in every trial", min(overshoot) > T_MAX)

# %% [markdown]
# Each actor passed the test `T < T_MAX` and then spent a forward pass before counting; the
# others passed the same test meanwhile. The test and the count must be one step.
#
# What about a bare `T += 1`, with nothing between the read and the write? Count it with
# real threads:

# %%
def bare_increments(steps):
    global T
    for _ in range(steps):
        T += 1


T = 0
a3c.run_threads(lambda index: bare_increments(100_000), 4)
bare_lost = 400_000 - T
print(f"bare T += 1, 4 threads x 100,000: lost {bare_lost} of 400,000"
      + (" (no thread switch fell between a read and its write)" if bare_lost == 0 else ""))

# %% [markdown]
# However many it lost in your run, a count that is right only because of where the
# interpreter happens to switch threads is not safe: the controlled scheduler switches
# between the read and the write, and finds the lost step at once:

# %%
class Steps:
    def __init__(self):
        self.T = 0


def two_steps(steps):
    steps.T += 1
    steps.T += 1


def four_counted(steps):
    assert steps.T == 4, f"expected T == 4 after four steps, saw {steps.T}"


bare = explore(Steps, [two_steps, two_steps], four_counted, seed=0)
print(bare.verdict, "after", bare.schedules_run, "schedules:", bare.message.splitlines()[1])
claim("the scheduler found a schedule that loses a bare T += 1", bare.verdict == "race")

# %%
bare.figure()

# %% [markdown]
# ## Fix it
#
# Each exercise has an answer cell, a line that runs your answer once, and a test cell. The
# test cell's quick checks take a few seconds; the grader then runs your answer under load
# with fixed seeds: real threads released together (`stress`) where the race is inside
# TensorFlow, the controlled scheduler (`explore`) where it is in Python. A failing check
# says what it saw, shows the interleaving and gives the line that runs it again.
#
# ### Exercise 1: a network the actors can share from their first call
#
# Write `make_shared_network()`, which returns the shared actor-critic network, ready for
# `a3c.NETWORK_THREADS` actor threads to call `model.predict_on_batch(state)` at once, each
# with a float32 state of shape `(1, a3c.STATE_SIZE)` (what `Corridor().state()` returns):
#
# - a Keras model from states `(batch, a3c.STATE_SIZE)` to two outputs, the policy logits
#   `(batch, a3c.ACTIONS)` and the value `(batch, 1)`;
# - built before it is returned (its weights exist), and warm for exactly the call the
#   actors make, so that nothing is built or traced while they act.
#
# The grader calls your function for a fresh network per trial, releases the actors
# together, and counts the traces of the predict function while they run (it must be 0).

# %% nbgrader={"grade": false, "grade_id": "ex_a3c_network", "locked": false, "schema_version": 3, "solution": true, "task": false}
def make_shared_network():
    """Return the actor-critic network, built and warm for the actors' predict_on_batch."""
    ### BEGIN SOLUTION
    state = keras.Input(shape=(a3c.STATE_SIZE,), name="state")
    trunk = keras.layers.Dense(a3c.HIDDEN, activation="relu")(state)
    logits = keras.layers.Dense(a3c.ACTIONS, name="policy")(trunk)
    value = keras.layers.Dense(1, name="value")(trunk)
    model = keras.Model(state, [logits, value])
    model.predict_on_batch(np.zeros((1, a3c.STATE_SIZE), dtype="float32"))
    return model
    ### END SOLUTION


# %%
shared_net = make_shared_network()
print([tuple(o.shape) for o in shared_net.predict_on_batch(Corridor().state())])

# %% nbgrader={"grade": true, "grade_id": "test_a3c_network", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
net = make_shared_network()
assert isinstance(net, keras.Model) and net.built, "return a built keras.Model"
logits, value = net.predict_on_batch(np.ones((1, a3c.STATE_SIZE), dtype="float32"))
assert logits.shape == (1, a3c.ACTIONS) and value.shape == (1, 1), \
    f"expected outputs of shapes (1, {a3c.ACTIONS}) and (1, 1), got {logits.shape}, {value.shape}"
a3c.check_shared_network(make_shared_network, trials=1)
quick_test_passed()
### BEGIN HIDDEN TESTS
a3c.check_shared_network(make_shared_network)
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 2: gradients that all land
#
# Write `SharedLearner`, through which every actor applies its gradients to the shared
# network:
#
# - `SharedLearner(model, optimizer)` wraps the shared network and its optimizer (built and
#   warm; plain SGD in the tests);
# - `push(grads)` is called by many actor threads at once, each with a gradient list in
#   `model.trainable_variables` order; every gradient must be applied exactly once, with
#   `optimizer.apply_gradients`, so that `optimizer.iterations` counts it;
# - `close()` is called once, after every `push` has returned; when it returns, every pushed
#   gradient has been applied and no thread you started is still running.
#
# Two designs work: one lock around `apply_gradients`, or one learner thread that applies
# what the actors put on a queue (`close()` then waits until the queue is empty and the
# thread has stopped). "Measure it" compares them. The grader uses gradients and weights on a
# power-of-two grid, so every order of the same SGD updates gives the same weights, bit for
# bit: it compares yours with `w0 - lr * (sum of every gradient)` exactly, and
# `optimizer.iterations` with the number of pushes. It runs real actor threads, then two
# actors under the controlled scheduler, so a lock or a thread made on the first `push` (two
# first pushes at once can each make one) fails too. There, a `join` with a timeout runs out
# before the thread ends, as it can on a loaded machine: `close()` must wait for the thread
# itself, not for a while. Last, two actors push 101 gradients while the learner is held on
# its first apply, as a learner falls behind on a loaded machine: a bounded queue fills, the
# lock stays held, every wait with a timeout gives up, the clock runs 10 seconds meanwhile (a
# loop that retries until a deadline runs out too), and `push` must not lose the gradient
# (block until there is room or the lock is free, or keep the queue unbounded).

# %% nbgrader={"grade": false, "grade_id": "ex_a3c_learner", "locked": false, "schema_version": 3, "solution": true, "task": false}
class SharedLearner:
    """Applies the gradients many actor threads push, each exactly once."""

    def __init__(self, model, optimizer):
        ### BEGIN SOLUTION
        self.model = model
        self.optimizer = optimizer
        self._lock = threading.Lock()
        ### END SOLUTION

    def push(self, grads):
        """Apply ``grads`` (``model.trainable_variables`` order); safe from many threads."""
        ### BEGIN SOLUTION
        with self._lock:
            self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables, strict=False))
        ### END SOLUTION

    def close(self):
        """Return once every pushed gradient is applied and no thread of yours runs."""
        ### BEGIN SOLUTION
        with self._lock:
            pass
        ### END SOLUTION


# %%
learner_net = a3c.actor_critic()
learner_optimizer = keras.optimizers.SGD(learning_rate=a3c.LEARNING_RATE)
learner_optimizer.build(learner_net.trainable_variables)
learner = SharedLearner(learner_net, learner_optimizer)
for grads in a3c.grid_gradients(learner_net, seed=0, count=3):
    learner.push(grads)
learner.close()
print("optimizer.iterations after 3 pushes:", int(learner_optimizer.iterations.numpy()))

# %% nbgrader={"grade": true, "grade_id": "test_a3c_learner", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
net = a3c.actor_critic()
optimizer = keras.optimizers.SGD(learning_rate=a3c.LEARNING_RATE)
optimizer.build(net.trainable_variables)
start = [w.copy() for w in net.get_weights()]
grads = a3c.grid_gradients(net, seed=1, count=4)
shared = SharedLearner(net, optimizer)
a3c.run_threads(lambda index: shared.push(grads[index]), 4)
shared.close()
assert int(optimizer.iterations.numpy()) == 4, "four pushes must be four apply_gradients calls"
assert all(np.allclose(w, e) for w, e in zip(net.get_weights(), a3c.expected_after(start, grads), strict=False)), \
    "the weights must be w0 - lr * (sum of the pushed gradients)"
a3c.check_learner(SharedLearner, trials=1)
quick_test_passed()
### BEGIN HIDDEN TESTS
a3c.check_learner(SharedLearner)
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 3: a step budget that neither loses a step nor overshoots
#
# Write `StepBudget`, the global bookkeeping every actor shares:
#
# - `StepBudget(t_max)` starts with no step taken;
# - `take()` reserves the next global step and returns its number (1 for the first step,
#   then 2, ...), or `None` once all `t_max` steps are taken (and on every call after that),
#   and only then: an actor told `None` stops, so a `take()` that gives up waiting for a lock
#   must not answer `None`;
# - `T` is the number of steps taken so far;
# - `finish_episode(episode_return)` records a finished episode's return, and `returns` is
#   the list of every return recorded (all of them, however many, equal returns included).
#
# `T` and `returns` are properties in the cell below; plain attributes are fine too, if you
# keep them right.
#
# However the actors' calls interleave, together they get each of `1 .. t_max` exactly once,
# `T` ends at `t_max` (never past it, not even for a moment while another actor is inside
# `take()`), and no return is lost. The grader runs two actors under the controlled
# scheduler, and a third thread that reads `T` as soon as one actor is told `None`: up to 400
# schedules, those with the fewest thread switches first.

# %% nbgrader={"grade": false, "grade_id": "ex_a3c_budget", "locked": false, "schema_version": 3, "solution": true, "task": false}
class StepBudget:
    """The global step counter T, its stop condition and the episode returns."""

    def __init__(self, t_max):
        ### BEGIN SOLUTION
        self.t_max = t_max
        self._lock = threading.Lock()
        self._taken = 0
        self._returns = []
        ### END SOLUTION

    def take(self):
        """Reserve the next step: its number, or None once all t_max steps are taken."""
        ### BEGIN SOLUTION
        with self._lock:
            if self._taken >= self.t_max:
                return None
            self._taken += 1
            return self._taken
        ### END SOLUTION

    def finish_episode(self, episode_return):
        """Record one finished episode's return."""
        ### BEGIN SOLUTION
        with self._lock:
            self._returns.append(episode_return)
        ### END SOLUTION

    @property
    def T(self):
        """The number of steps taken so far."""
        ### BEGIN SOLUTION
        with self._lock:
            return self._taken
        ### END SOLUTION

    @property
    def returns(self):
        """Every episode return recorded so far, as a list."""
        ### BEGIN SOLUTION
        with self._lock:
            return list(self._returns)
        ### END SOLUTION


# %%
budget = StepBudget(3)
print([budget.take() for _ in range(4)], "| T:", budget.T)

# %% nbgrader={"grade": true, "grade_id": "test_a3c_budget", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
b = StepBudget(2)
assert [b.take(), b.take(), b.take()] == [1, 2, None], "take() hands out 1, 2, then None"
assert b.T == 2, f"T must be 2 after two steps, saw {b.T}"
b.finish_episode(0.5)
assert list(b.returns) == [0.5], "returns must hold the recorded return"
shared_budget = StepBudget(1000)
a3c.run_threads(lambda index: [shared_budget.take() for _ in range(300)], 4)
assert shared_budget.T == 1000, f"four threads taking 1,200 steps of 1,000 left T at {shared_budget.T}"
a3c.check_budget(StepBudget, schedules=60)
quick_test_passed()
### BEGIN HIDDEN TESTS
a3c.check_budget(StepBudget)
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 4: act on one version of the network
#
# A learner updates the shared network while actors keep acting. Write `VersionedNetwork`:
#
# - `VersionedNetwork(model, optimizer)` wraps the network (built and warm) and its
#   optimizer; the weights as given are version 0 (the optimizer may already have applied a
#   warm-up update, so `optimizer.iterations` is not the version: count your learns);
# - `learn(grads)` applies one update with `optimizer.apply_gradients` and returns the new
#   version (1 after the first `learn`, 2 after the second, ...);
# - `act(states)` returns `(outputs, version)`: the network's outputs for `states` (what
#   `predict_on_batch` returns), computed with the weights of exactly `version`.
#
# No act may mix layers of two versions, the version an act reports must be the one its
# outputs came from, versions never go backwards for one actor, and an act that starts after
# `learn` returned version `v` uses `v` or later. One lock held around the update and around
# the forward pass is enough; a readers-writer lock or a snapshot are others. The grader's
# network answers a state of ones with `144 k^2 + k` when every weight is `k`: it checks each
# act's outputs against the version it reports, with real threads and with the controlled
# scheduler: once with one actor acting during a learn, and once with two actors acting at
# the same time between two learns, so that state the actors share (a cached copy of the
# weights, a count of readers) is checked too.

# %% nbgrader={"grade": false, "grade_id": "ex_a3c_versioned", "locked": false, "schema_version": 3, "solution": true, "task": false}
class VersionedNetwork:
    """Acts on one version of the network while a learner updates it."""

    def __init__(self, model, optimizer):
        ### BEGIN SOLUTION
        self.model = model
        self.optimizer = optimizer
        self._lock = threading.Lock()
        self._version = 0
        ### END SOLUTION

    def learn(self, grads):
        """Apply one update; return the new version number."""
        ### BEGIN SOLUTION
        with self._lock:
            self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables, strict=False))
            self._version += 1
            return self._version
        ### END SOLUTION

    def act(self, states):
        """Return ``(outputs, version)``, the outputs computed with exactly that version."""
        ### BEGIN SOLUTION
        with self._lock:
            return self.model.predict_on_batch(states), self._version
        ### END SOLUTION


# %%
versioned_net = a3c.set_version(a3c.actor_critic(), 1.0)
versioned_optimizer = keras.optimizers.SGD(learning_rate=1.0)
versioned_net.predict_on_batch(a3c.probe())
versioned = VersionedNetwork(versioned_net, versioned_optimizer)
print("before:", versioned.act(a3c.probe()))
versioned.learn(a3c.version_step(versioned_net))
print("after one learn:", versioned.act(a3c.probe()))

# %% nbgrader={"grade": true, "grade_id": "test_a3c_versioned", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
vnet = a3c.set_version(a3c.actor_critic(), 1.0)
vnet.predict_on_batch(a3c.probe())
v = VersionedNetwork(vnet, keras.optimizers.SGD(learning_rate=1.0))
outputs, version = v.act(a3c.probe())
assert version == 0 and a3c.version_of(outputs) == 1, "before any learn: version 0, weights all 1"
assert v.learn(a3c.version_step(vnet)) == 1, "the first learn() returns version 1"
outputs, version = v.act(a3c.probe())
assert version == 1 and a3c.version_of(outputs) == 2, "after one learn: version 1, weights all 2"
a3c.check_versioned(VersionedNetwork, trials=1, schedules=40)
quick_test_passed()
### BEGIN HIDDEN TESTS
a3c.check_versioned(VersionedNetwork)
### END HIDDEN TESTS

# %% [markdown]
# ## Measure it
#
# What does safety cost on two cores? Four actors play the corridor, each making 8 rollouts
# of 5 steps and pushing one gradient per rollout into one shared network, in four
# arrangements:
#
# - **Hogwild** (unsafe): every actor calls `apply_gradients` itself, no lock;
# - **lock**: one lock around `apply_gradients` (exercise 2's first design);
# - **learner thread**: actors put gradients on a queue, one learner thread applies them;
# - **local copies**: each actor acts and computes gradients on its own copy of the network,
#   pushes under a lock and then copies the shared weights back, under the same lock (no
#   actor reads the shared network while it changes).
#
# Each arrangement records how many updates were applied between the moment an actor read
# the weights for its gradient and the moment that gradient was applied (its staleness), and
# how long actors spent inside `push`.

# %%
class Hogwild:
    def __init__(self, net, optimizer):
        self.net, self.optimizer, self.stale = net, optimizer, []

    def model_for(self, actor):
        return self.net

    def push(self, grads, seen):
        self.stale.append(int(self.optimizer.iterations.numpy()) - seen)
        self.optimizer.apply_gradients(zip(grads, self.net.trainable_variables, strict=False))

    def sync(self, actor):
        pass

    def close(self):
        pass


class Locked(Hogwild):
    def __init__(self, net, optimizer):
        super().__init__(net, optimizer)
        self.lock = threading.Lock()

    def push(self, grads, seen):
        with self.lock:
            super().push(grads, seen)


class LearnerThread(Hogwild):
    def __init__(self, net, optimizer):
        super().__init__(net, optimizer)
        self.queue = queue.Queue()
        self.thread = threading.Thread(target=self._learn)
        self.thread.start()

    def _learn(self):
        while (item := self.queue.get()) is not None:
            Hogwild.push(self, *item)

    def push(self, grads, seen):
        self.queue.put((grads, seen))

    def close(self):
        self.queue.put(None)
        self.thread.join()


class LocalCopies(Locked):
    def __init__(self, net, optimizer):
        super().__init__(net, optimizer)
        self.copies = {}

    def model_for(self, actor):
        copy = keras.models.clone_model(self.net)
        copy.set_weights(self.net.get_weights())
        copy.predict_on_batch(np.zeros((1, a3c.STATE_SIZE), "float32"))
        self.copies[actor] = copy
        return copy

    def sync(self, actor):
        with self.lock:
            weights = self.net.get_weights()
        self.copies[actor].set_weights(weights)


arrangements = {"Hogwild (unsafe)": Hogwild, "lock": Locked, "learner thread": LearnerThread,
                "local copies": LocalCopies}


def measure(arrangement, net, optimizer, actors=4, rollouts=8):
    """Run ``actors`` actor threads for ``rollouts`` rollouts each; steps/s and what it cost."""
    shared = arrangement(net, optimizer)
    models = [shared.model_for(index) for index in range(actors)]
    steps, push_seconds = [0] * actors, [0.0] * actors
    before = int(optimizer.iterations.numpy())

    def actor(index):
        env, rng, mine = Corridor(), np.random.default_rng(index), models[index]
        state = env.reset()
        for _ in range(rollouts):
            seen = int(optimizer.iterations.numpy())
            states, actions, rewards, state, _ = rollout(mine, env, state, rng)
            grads = actor_critic_gradients(mine, states, actions, rewards)
            started = time.perf_counter()
            shared.push(grads, seen)
            push_seconds[index] += time.perf_counter() - started
            shared.sync(index)
            steps[index] += len(actions)

    seconds = a3c.run_threads(actor, actors)
    shared.close()
    applied = int(optimizer.iterations.numpy()) - before
    return {"steps_per_s": sum(steps) / seconds,
            "push_share": sum(push_seconds) / (actors * seconds),
            "stale": statistics.mean(shared.stale), "lost_counts": actors * rollouts - applied}


# %% [markdown]
# Run three interleaved rounds (every arrangement once per round, so a busy moment of the
# machine falls on all of them) and keep each figure's median:

# %%
measure_net = a3c.actor_critic()
measure_net.predict_on_batch(np.zeros((1, a3c.STATE_SIZE), "float32"))
measure_optimizer = keras.optimizers.SGD(learning_rate=0.05)
measure_optimizer.build(measure_net.trainable_variables)
rounds = [{name: measure(arrangement, measure_net, measure_optimizer)
           for name, arrangement in arrangements.items()} for _ in range(3)]
measured = {name: {key: statistics.median(r[name][key] for r in rounds)
                   for key in rounds[0][name]} for name in arrangements}
base = measured["Hogwild (unsafe)"]["steps_per_s"]
print(f"{'median of 3 rounds':18s} {'steps/s':>8s} {'x Hogwild':>10s} {'in push':>8s} "
      f"{'staleness':>10s} {'counts lost':>12s}")
for name, row in measured.items():
    print(f"{name:18s} {row['steps_per_s']:8.0f} {row['steps_per_s'] / base:10.2f} "
          f"{row['push_share']:8.0%} {row['stale']:10.2f} {row['lost_counts']:12.0f}")
safe = {name: row for name, row in measured.items() if name != "Hogwild (unsafe)"}
fastest = max(safe, key=lambda name: safe[name]["steps_per_s"])
print(f"\nfastest safe arrangement in this run: {fastest}, "
      f"{safe[fastest]['steps_per_s'] / base:.2f}x Hogwild's steps per second")
slowest = min(safe, key=lambda name: safe[name]["steps_per_s"])
print(f"slowest safe arrangement: {slowest}, "
      f"{safe[slowest]['steps_per_s'] / base:.2f}x Hogwild's steps per second")
print(f"least time in push: {min(measured, key=lambda n: measured[n]['push_share'])}; "
      f"stalest gradients: {max(measured, key=lambda n: measured[n]['stale'])}")
locked, queued = measured["lock"], measured["learner thread"]
print(f"the trade-off, lock vs learner thread: actors spent {locked['push_share']:.0%} vs "
      f"{queued['push_share']:.0%} of their time in push, and their gradients were "
      f"{locked['stale']:.2f} vs {queued['stale']:.2f} updates stale when applied")
claim("no safe arrangement lost a count of optimizer.iterations in any round",
      all(r[name]["lost_counts"] == 0 for r in rounds for name in safe))

# %% [markdown]
# Read the table against the designs; the lines under it say what came out in your run. On
# two cores under the GIL, a forward pass and a gradient of this small network are mostly
# Python and short TensorFlow ops, so the ratios move from run to run: rerun the cell
# before you trust a difference of a few tenths. What the designs decide, every time:
#
# - **Hogwild** lets every actor apply at once: its step count can drift (the "counts lost"
#   column), and an optimizer with state would drift in its weights too.
# - **lock**: an actor that pushes while another applies waits ("in push"), and its
#   gradient is applied as soon as it gets the lock.
# - **learner thread**: `push` only puts the gradient on a queue, so actors hardly wait; a
#   gradient may wait in the queue behind others, and is then applied to weights that moved
#   since the actor read them ("staleness"); `close()` must drain the queue.
# - **local copies**: no actor reads the shared network while it changes (no torn acts,
#   without exercise 4's lock around every act), for one copy of the weights per actor and
#   a copy back after every push.
#
# Threads buy real overlap only where TensorFlow runs long ops without the GIL: bigger
# networks, compiled steps, environments that wait for I/O. Measure before you choose.

# %% [markdown]
# ## Summary
#
# A warm shared network serves concurrent forward passes, but almost everything around it is
# a read and a separate write: the first call, `keras.Variable.assign_sub`, the optimizer's
# step count, a forward pass during an update, `T`. Build and warm before the actors start,
# apply gradients one at a time (a lock or one learner thread), make every test-and-count of
# `T` one locked step, and let an actor act on one version, whose number it can tell you.
