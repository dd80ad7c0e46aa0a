"""Graded properties for lesson 09, "a3c": asynchronous actor-learners on one shared network.

In A3C, several actor threads share one actor-critic network: each calls it to pick actions,
computes gradients from its own experience and pushes them into it, while the whole run counts
global steps ``T`` up to ``T_MAX``. Each of those shared things breaks in its own way:

- a cold network (not built, not warm) gets built and traced by the actors' first calls, all
  at once (Keras's ``make_predict_function`` is a check-then-act with no lock);
- ``v.assign_sub(...)`` on a model weight is a read and a separate assign (a
  ``keras.Variable``'s ``assign_add``/``assign_sub`` are ``self.assign(self +/- value)``), and
  ``optimizer.iterations`` is counted the same way, so concurrent updates lose some;
- a forward pass or a ``get_weights()`` made while a learner applies an update mixes layers
  of two versions (a graph is not a snapshot);
- ``t = T; <act>; T = t + 1`` loses steps and ``while T < T_MAX`` overshoots.

The grader makes every loss exact: SGD on a power-of-two grid (weights, gradients, learning
rate) gives the same weights, bit for bit, in every order of the same updates
(:mod:`~autograder.checks.a3c.model`), and a network whose weights all equal ``k`` answers
the probe state with one number that names ``k``.

Graded checks (each a property under load, fixed seeds and counts, no retries):

- :func:`check_shared_network`: actor threads released together call ``predict_on_batch``
  on a fresh network from the answer: no error, nothing traced or built while they run,
  the outputs one thread gets (``stress``).
- :func:`check_learner`: actors push grid gradients from real threads; after ``close()`` the
  weights are the exact SGD sum and ``optimizer.iterations`` equals the pushes (``stress``).
- :func:`check_budget`: actors share a ``StepBudget``; steps ``1 .. T_MAX`` are handed out
  once each, ``T`` ends at ``T_MAX``, every episode's return is kept (``explore``).
- :func:`check_versioned`: a learner updates while actors act; every act's outputs are those
  of the version it reports, never a mix (``stress``, then ``explore``).

This package is the lesson's face: the notebook and hidden tests use ``a3c.NAME`` and get the
names below, whichever module holds them: ``settings`` (sizes, seeds, counts, budgets),
``model`` (the network, version stamps and the exact grid), ``lab`` (the notebook's live
trials and pictures), ``network``, ``learner``, ``budget`` and ``versioned`` (exercises 1 to
4: their runs) and ``grading`` (the four graders); ``run_threads`` is the kit's.
"""

from __future__ import annotations

from autograder.checks.a3c.budget import BudgetRun, run_budget
from autograder.checks.a3c.grading import (
    check_budget,
    check_learner,
    check_shared_network,
    check_versioned,
)
from autograder.checks.a3c.lab import (
    VARIABLES,
    ColdOutcome,
    ColdStats,
    Crashed,
    LostRun,
    TornRun,
    cold_start_trials,
    lost_updates,
    plot_lost_updates,
    plot_torn_read,
    torn_reads,
    unbuilt_sequential,
)
from autograder.checks.a3c.learner import (
    LearnerTrial,
    run_learner,
    run_learner_backlog,
    run_learner_explore,
)
from autograder.checks.a3c.model import (
    actor_critic,
    expected_after,
    expected_output,
    flat_outputs,
    grid_gradients,
    grid_weights,
    probe,
    set_version,
    states,
    version_of,
    version_step,
    version_weights,
    weight_versions,
)
from autograder.checks.a3c.network import TraceCount, not_ready, run_shared_network
from autograder.checks.a3c.settings import (
    ACT_GAP_S,
    ACTIONS,
    BUDGET_ACTORS,
    BUDGET_DEVIATIONS,
    BUDGET_SAMPLES,
    BUDGET_SCHEDULES,
    BUDGET_T_MAX,
    CLOSE_TIMEOUT_S,
    GRADIENT_STEP,
    HIDDEN,
    LEARNER_BACKLOG_PUSHES,
    LEARNER_PUSHES,
    LEARNER_THREADS,
    LEARNER_TRIALS,
    LEARNING_RATE,
    NETWORK_CALLS,
    NETWORK_THREADS,
    NETWORK_TRIALS,
    SEED,
    STATE_SIZE,
    THREAD_EXIT_S,
    TIMEOUT_S,
    VERSIONED_ACTORS,
    VERSIONED_DEVIATIONS,
    VERSIONED_EXPLORE_ACTORS,
    VERSIONED_EXPLORE_LEARNS,
    VERSIONED_LEARNS,
    VERSIONED_SAMPLES,
    VERSIONED_SCHEDULES,
    VERSIONED_TRIALS,
    WEIGHT_STEP,
)
from autograder.checks.a3c.versioned import (
    FIRST_WEIGHT,
    VersionedTrial,
    run_versioned_explore,
    run_versioned_stress,
)
from autograder.checks.kit import run_threads

__all__ = [
    # settings
    "ACT_GAP_S", "ACTIONS", "BUDGET_ACTORS", "BUDGET_DEVIATIONS", "BUDGET_SAMPLES",
    "BUDGET_SCHEDULES", "BUDGET_T_MAX", "CLOSE_TIMEOUT_S", "GRADIENT_STEP", "HIDDEN",
    "LEARNER_BACKLOG_PUSHES", "LEARNER_PUSHES", "LEARNER_THREADS", "LEARNER_TRIALS",
    "LEARNING_RATE", "NETWORK_CALLS",
    "NETWORK_THREADS", "NETWORK_TRIALS", "SEED", "STATE_SIZE", "THREAD_EXIT_S", "TIMEOUT_S",
    "VERSIONED_ACTORS", "VERSIONED_DEVIATIONS", "VERSIONED_EXPLORE_ACTORS",
    "VERSIONED_EXPLORE_LEARNS", "VERSIONED_LEARNS",
    "VERSIONED_SAMPLES", "VERSIONED_SCHEDULES", "VERSIONED_TRIALS", "WEIGHT_STEP",
    # the network, version stamps and the exact grid
    "actor_critic", "expected_after", "expected_output", "flat_outputs", "grid_gradients",
    "grid_weights", "probe", "set_version", "states", "version_of", "version_step",
    "version_weights", "weight_versions",
    # the notebook's live trials and pictures
    "VARIABLES", "ColdOutcome", "ColdStats", "Crashed", "LostRun", "TornRun",
    "cold_start_trials", "lost_updates", "plot_lost_updates", "plot_torn_read", "run_threads",
    "torn_reads", "unbuilt_sequential",
    # the four exercises
    "TraceCount", "not_ready", "run_shared_network", "LearnerTrial", "run_learner",
    "run_learner_backlog", "run_learner_explore", "BudgetRun", "run_budget", "FIRST_WEIGHT",
    "VersionedTrial",
    "run_versioned_explore", "run_versioned_stress",
    # graders
    "check_budget", "check_learner", "check_shared_network", "check_versioned",
]
