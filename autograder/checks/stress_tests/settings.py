"""Lesson 05's fixed seed, batch width, time budgets and benchmark workload."""

#: Seconds one run of a student's stress test may take against one implementation.
BUDGET_S = 20.0
#: Seconds a student's ``explore_ledger`` may take against one implementation.
EXPLORE_BUDGET_S = 12.0
SEED = 5
FEATURES = 2

# Exercise 2 (measure): the servers' sleep, threads and calls.
SLEEP_S = 0.004
THREADS = 4
CALLS = 6
#: Seconds the held reader waits with no ``record()`` before it goes on anyway, for a test that
#: waits for it some other way than ``join()`` (an Event, a Future, polling ``is_alive()``).
JOIN_QUIET_S = 2.0
