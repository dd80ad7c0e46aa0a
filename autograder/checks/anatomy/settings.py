"""Lesson 00's fixed seed, schedule budgets, time limits and the bank's amounts."""

from __future__ import annotations

SEED = 0
#: Schedules per graded check. Every wrong answer in ``tests/checks/answers_anatomy.py`` is
#: found well inside these budgets and every correct one passes them (the tests prove both).
#: Engine ``explore`` only. Search bound: every schedule with at most one preemption or other
#: departure from round-robin order (29 for the counter's solution, 85 for the cache's), in an
#: order no seed changes, then seeded PCT/random samples up to these counts.
SCHEDULES_COUNTER = 300
SCHEDULES_CACHE = 300
TIMEOUT_S = 60.0
#: How long the one-thread contract check may run before it is called hung.
ONE_THREAD_TIMEOUT_S = 10.0
OPENING_BALANCE = 100
WITHDRAWAL = 60
