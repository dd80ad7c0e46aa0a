"""Lesson 06's settings: seeds, trials, the hidden logs' count and the publish run's bounds."""

from __future__ import annotations

SEED = 6
#: Real-thread trials for :func:`check_log_access` (each worker sleeps about 12 ms per trial).
STRESS_TRIALS = 6
#: Exercise 1 under the controlled scheduler: threads that each log one read, the most schedules
#: (every schedule with at most one preemption, then LOG_SAMPLES seeded samples; 13 within the
#: bound for an answer that appends) and the samples.
LOG_EXPLORE_THREADS = 2
LOG_SCHEDULES = 80
LOG_SAMPLES = 20
#: Exercise 1, two real threads logging one read (then one write) of one resource at once:
#: each fn() waits at most this long for the other's to start too. A log_access that holds a
#: lock of its own around fn() runs them one after the other, and the wait runs out.
TOGETHER_WAIT_S = 10.0
#: Hidden logs per analysis check: half from racy runs, half from clean (locked) ones.
HIDDEN_LOGS = 40

#: Schedules per run of :func:`check_publish_locked` (controlled scheduler, fixed seed). Search
#: bound: every schedule with at most one preemption or other departure from round-robin order
#: (142 for the solution), in an order no seed changes, then SAMPLES seeded samples; SCHEDULES
#: only caps an unusually long answer (past it the verdict is a fixed, seed-free sample).
SCHEDULES = 1000
SAMPLES = 30
#: Exercise 5's trainers: two tie (a score equal to the record does not beat it, so of the two
#: only the first to publish may write and save).
PUBLISH_SCORES = {"trainer-0": 0.71, "trainer-1": 0.93, "trainer-2": 0.71}
