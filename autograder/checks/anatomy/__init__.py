"""Graded properties for lesson 00, "anatomy of a race": shared state, switches, schedules.

Everything in this lesson is pure-Python shared state, so every check uses the controlled
scheduler (:mod:`autograder.harness`): one thread at a time, switching before each instruction
other threads can see, with a fixed seed and a fixed number of schedules. The same answer gets
the same verdict in every grading run, and nothing is retried.

- :func:`check_schedules` replays the student's two schedule tokens against the lesson's bank
  account (:func:`withdraw`, :func:`alice`, :func:`bob`): one must leave the account
  overdrawn, the other must pay out more money than the account ever held.
- :func:`check_counter` explores a shared :class:`SafeCounter`-like class: every increment must
  be handed out by exactly one ``take()``, in every interleaving.
- :func:`check_cache` explores a shared check-then-act cache: each key is loaded exactly once
  under concurrent misses, and every caller of a key gets the same object.

The bank code (``bank``) is the code the notebook shows; ``tests/checks/test_anatomy.py`` proves the
notebook's copy is identical, so a schedule a student works out in the notebook replays the same
way here. The worker functions in this package must be *user code* for the scheduler (it switches
only inside code outside site-packages and the standard library); :func:`_require_visible` proves
that before every check and fails closed, with an explanation, when it is not.

Plumbing the notebook uses (real-thread trials, throughput) lives here too.

This package is the lesson's face: the notebook and hidden tests use ``anatomy.NAME`` and get
the names below, whichever module holds them: ``settings`` (seed, schedule budgets, time
limits), ``bank`` (the notebook's bank and its rules), ``schedules`` (exercise 1: tokens read,
explained and replayed), ``one_thread`` (an answer's first run, alone under the scheduler),
``counter`` and ``once_cache`` (exercises 2 and 3: their runs), ``grading`` (the three graders
and the fail-closed canary) and ``lab`` (the notebook's real-thread trials; ``run_threads`` is
the kit's).
"""

from __future__ import annotations

from autograder.checks.anatomy.bank import (
    Account,
    alice,
    bob,
    money_conserved,
    never_overdrawn,
    open_account,
    withdraw,
)
from autograder.checks.anatomy.counter import COUNTER_TOTAL, counter_on_one_thread, run_counter
from autograder.checks.anatomy.grading import check_cache, check_counter, check_schedules
from autograder.checks.anatomy.lab import cache_trials, count_trials, describe_losses, throughput
from autograder.checks.anatomy.once_cache import cache_on_one_thread, run_cache
from autograder.checks.anatomy.schedules import explain_schedule, parse_schedule, replay_bank
from autograder.checks.anatomy.settings import (
    ONE_THREAD_TIMEOUT_S,
    OPENING_BALANCE,
    SCHEDULES_CACHE,
    SCHEDULES_COUNTER,
    SEED,
    TIMEOUT_S,
    WITHDRAWAL,
)
from autograder.checks.kit import run_threads

__all__ = [
    # settings
    "ONE_THREAD_TIMEOUT_S", "OPENING_BALANCE", "SCHEDULES_CACHE", "SCHEDULES_COUNTER", "SEED",
    "TIMEOUT_S", "WITHDRAWAL",
    # the notebook's bank and its rules
    "Account", "alice", "bob", "money_conserved", "never_overdrawn", "open_account", "withdraw",
    # the three exercises
    "explain_schedule", "parse_schedule", "replay_bank",
    "COUNTER_TOTAL", "counter_on_one_thread", "run_counter",
    "cache_on_one_thread", "run_cache",
    # graders
    "check_cache", "check_counter", "check_schedules",
    # the notebook's real-thread trials
    "cache_trials", "count_trials", "describe_losses", "run_threads", "throughput",
]
