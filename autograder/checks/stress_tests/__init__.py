"""Graded properties for lesson 05, "stress tests and benchmarks".

The lesson's exercises are tests and measurements, so the graders run the student's code
against code whose answer is known:

- :func:`check_stress_test`: the student's ``stress_ledger(make_ledger)`` is run against
  hidden ledger implementations, :data:`RACY` (each loses updates or tears a snapshot, every
  one with a GIL-releasing TensorFlow call inside its race window) and :data:`CORRECT`
  (locks, ``tf.Variable.assign_add``, a queue, an immutable tuple, per-thread shards). The
  test must fail (raise) on every racy one and return normally on every correct one. Each run
  happens on a daemon thread with a deadline of :data:`BUDGET_S`: raising anything counts as
  "failed", not returning in time counts as "hung" (also a failure; the thread is left behind
  as a daemon, which the grading kernel's shutdown ends). ``sys.setswitchinterval`` is
  restored after every run.
- :func:`check_measure`: the student's ``measure(serve, threads, calls)`` benchmark is run on
  servers whose physics is known (sleeps that overlap, sleeps serialised by a lock, calls of two
  different lengths); the numbers are checked for sanity, never for exact values.
- :func:`check_explore_ledger`: the student's ``explore_ledger(make_ledger)`` must return a
  harness :class:`~autograder.harness.Result` that is not ok for pure-Python ledgers whose
  race the GIL hides from real threads, and ok for correct ones.

The hidden implementations live in this package (students do not read it while solving; a
test that inspects the implementation's source instead of its behaviour is not a stress test,
and the names are all ``Ledger`` so it cannot read them).

This package is the lesson's face: the notebook and hidden tests use ``stress_tests.NAME``
and get the names below, whichever module holds them: ``settings`` (seed, budgets, the
benchmark workload), ``ledgers`` (the hidden ledgers of exercise 1 and :func:`batch`),
``servers`` (exercise 2's servers and the sanity of a benchmark's numbers), ``gil_hidden``
(the hidden pure-Python ledgers of exercise 3), ``witness`` (the grader's record of what a
student's exploration did to them), ``running`` (a student's code run with a
deadline against each hidden implementation) and ``grading`` (the three graders); the
notebook measures throughput with the student's own ``measure``. The module keeps the name
``stress_tests``: the lesson also imports the harness's ``stress``.
"""

from __future__ import annotations

from autograder.checks.stress_tests.gil_hidden import (
    GIL_HIDDEN_CORRECT,
    GIL_HIDDEN_RACY,
    PlainLedger,
    PlainLocked,
    PlainLockPerCall,
    PlainLostNoTear,
    PlainOrderDeadlock,
    PlainRLock,
    PlainRowsFirst,
    PlainTuple,
    PlainTwoLocks,
    PlainUnlockedReader,
)
from autograder.checks.stress_tests.grading import (
    check_explore_ledger,
    check_measure,
    check_stress_test,
)
from autograder.checks.stress_tests.ledgers import (
    CORRECT,
    RACY,
    AssignLedger,
    HalfAtomicLedger,
    LockedLedger,
    LockPerCallLedger,
    QueueLedger,
    ReadOutsideLedger,
    RowsFirstLedger,
    ShardedLedger,
    SplitUpdateLedger,
    TupleLedger,
    TwoLocksLedger,
    UnlockedReaderLedger,
    VariableLedger,
    batch,
)
from autograder.checks.stress_tests.running import (
    FAILING,
    explore_rows,
    grade_against,
    run_bounded,
    verdict_table,
)
from autograder.checks.stress_tests.servers import alternating, measure_problems, sleeper
from autograder.checks.stress_tests.settings import (
    BUDGET_S,
    CALLS,
    EXPLORE_BUDGET_S,
    FEATURES,
    SEED,
    SLEEP_S,
    THREADS,
)
from autograder.checks.stress_tests.witness import ANOMALIES, witnessed

__all__ = [
    # settings
    "BUDGET_S", "CALLS", "EXPLORE_BUDGET_S", "FEATURES", "SEED", "SLEEP_S", "THREADS",
    # exercise 1: the hidden ledgers (real threads) and the batches they count
    "batch", "RACY", "CORRECT", "AssignLedger", "RowsFirstLedger", "UnlockedReaderLedger",
    "LockPerCallLedger", "TwoLocksLedger", "HalfAtomicLedger", "ReadOutsideLedger",
    "SplitUpdateLedger", "LockedLedger", "VariableLedger", "QueueLedger", "TupleLedger",
    "ShardedLedger",
    # exercise 2: servers of known physics
    "alternating", "measure_problems", "sleeper",
    # exercise 3: the hidden pure-Python ledgers
    "GIL_HIDDEN_RACY", "GIL_HIDDEN_CORRECT", "PlainLedger", "PlainUnlockedReader",
    "PlainLockPerCall", "PlainTwoLocks", "PlainLostNoTear", "PlainOrderDeadlock", "PlainRowsFirst",
    "PlainLocked", "PlainTuple", "PlainRLock",
    # exercise 3: what the grader saw the exploration do to them, and what a Result must say
    "witnessed", "ANOMALIES", "FAILING",
    # running a student's code against them
    "explore_rows", "grade_against", "run_bounded", "verdict_table",
    # graders
    "check_explore_ledger", "check_measure", "check_stress_test",
]
