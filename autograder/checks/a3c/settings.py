"""Lesson 09's fixed sizes, seeds, counts and time budgets, shared by its trials and graders."""

from __future__ import annotations

#: The shared actor-critic network: a state of STATE_SIZE numbers, a trunk of HIDDEN units,
#: ACTIONS policy logits and one value.
STATE_SIZE = 8
HIDDEN = 16
ACTIONS = 2
SEED = 9
TIMEOUT_S = 60.0

#: Exact SGD: weights on a grid of WEIGHT_STEP, gradients on a grid of GRADIENT_STEP in
#: [-1, 1], learning rate LEARNING_RATE. Every partial sum of up to a few hundred updates is
#: then a float32 number, so every order of the same updates gives the same weights, bit for bit.
LEARNING_RATE = 2.0**-6
GRADIENT_STEP = 2.0**-12
WEIGHT_STEP = 2.0**-10

# Exercise 1 (make_shared_network): actors calling predict_on_batch on one state each.
NETWORK_THREADS = 4
NETWORK_CALLS = 3
NETWORK_TRIALS = 3

# Exercise 2 (SharedLearner): actor threads pushing gradients at once.
LEARNER_THREADS = 4
LEARNER_PUSHES = 25
LEARNER_TRIALS = 4
#: Then under the controlled scheduler: two actors pushing one gradient each, one closing.
LEARNER_SCHEDULES = 300
LEARNER_SAMPLES = 20
LEARNER_DEVIATIONS = 2
#: Then a backlog, one schedule: two actors push one gradient more than a stress trial between
#: them while the learner's first apply waits (at most this many yields) for the pushes to
#: return: a queue bound any trial could fill is full, the lock around an apply stays held, and
#: a push's timed wait for room or for the lock runs out.
LEARNER_BACKLOG_PUSHES = LEARNER_THREADS * LEARNER_PUSHES + 1
LEARNER_BACKLOG_YIELDS = 200
#: The time each of those yields lets pass on the answer's clocks (``cut_timeouts``): the held
#: first apply takes 10 s by them, longer than any deadline a push plausibly waits for room.
LEARNER_BACKLOG_YIELD_S = 0.05
#: How many of its timed waits a thread may be made to give up in the backlog: every one the
#: actors make while the learner is held runs out, as in a 10-second stall it would.
LEARNER_BACKLOG_GIVE_UPS = 10 * LEARNER_BACKLOG_YIELDS
#: How long close() may take, and how long a thread the answer started may outlive it.
CLOSE_TIMEOUT_S = 20.0
THREAD_EXIT_S = 2.0

# Exercise 3 (StepBudget): actors taking global steps under the controlled scheduler.
BUDGET_T_MAX = 3
BUDGET_ACTORS = 2
BUDGET_SCHEDULES = 400
BUDGET_SAMPLES = 40
BUDGET_DEVIATIONS = 2
#: And on one thread first: every step of a larger budget, episodes with many equal returns.
BUDGET_LONG_T_MAX = 250
BUDGET_LONG_RETURNS = 7

# Exercise 4 (VersionedNetwork): one learner, actors acting while it learns.
VERSIONED_LEARNS = 30
VERSIONED_ACTORS = 2
VERSIONED_TRIALS = 4
#: Pause between two acts of one stress actor (requests arrive, they do not queue).
ACT_GAP_S = 0.0005
VERSIONED_EXPLORE_LEARNS = 1
VERSIONED_SCHEDULES = 300
VERSIONED_SAMPLES = 20
VERSIONED_DEVIATIONS = 2
#: The second explore run of VersionedNetwork: a learn, then VERSIONED_EXPLORE_ACTORS actors
#: act once each at the same time, then a learn (a cache refreshed by whichever actor comes
#: first: found in schedule 13; a count of readers changed outside its lock: 162).
VERSIONED_EXPLORE_ACTORS = 2
