"""Graded properties for lesson 06, "tracing": logs and traces that show who touched what, when.

The lesson's log is a list of access records, one dict per access to a shared resource::

    {"thread": "worker-1", "op": "read" | "write", "resource": "best",
     "start": <time.perf_counter_ns()>, "end": <time.perf_counter_ns()>, "lock": None | "name"}

Five exercises, five checks:

- :func:`check_log_access`: the student's ``log_access(log, op, resource, fn, lock=None)``
  runs ``fn`` and appends one record. It runs on real threads under
  :func:`autograder.harness.stress` (workers sleep inside ``fn``, so their accesses overlap);
  every record must name the thread that made the access, bracket the call with
  ``time.perf_counter_ns`` taken before and after it, be written even when ``fn`` raises (the
  exception still reaches the caller), and ``fn``'s value must be returned.
- :func:`check_who_overwrote`: the student's ``who_overwrote(log)`` returns the lost updates
  in a log: ``(overwriter, overwritten, resource)`` for every write by another thread that
  landed between a thread's last read of a resource and its own write. Graded against
  :func:`reference_who_overwrote` on hidden logs this package generates (fixed seeds, racy and
  clean, some with re-reads, several resources and three or four threads).
- :func:`check_find_conflicts`: the student's ``find_conflicts(log)`` returns the index pairs
  ``(i, j)``, ``i < j``, of accesses that overlap in time, touch the same resource from two
  threads, include a write, and are not both under the same lock. Graded the same way against
  :func:`reference_find_conflicts`.
- :func:`check_lockset_races`: the student's ``lockset_races(log)`` returns the resources that
  two threads accessed, one of them writing, with no lock common to every access (the Eraser
  idea). Graded against :func:`reference_lockset_races` on six small logs that each decide one
  part of the definition (none has accesses that overlap in time), then the hidden logs.
- :func:`check_publish_locked`: the student's fixed ``publish_locked(best, lock, name, score,
  access, save)`` runs under the controlled scheduler (:func:`autograder.harness.explore`,
  fixed seed, :data:`SCHEDULES` schedules) with three trainers: the record must end up with
  the best score, every access must be logged with ``lock="best_lock"``, the log must hold no
  conflict, and ``save`` must run (for the winner) with the lock released.

The hidden logs are random (seeded), so no single example output is graded; reading this
package does not give the answers away beyond the definitions the notebook states.

This package is the lesson's face: the notebook and hidden tests use ``tracing.NAME`` and get
the names below, whichever module holds them: ``settings`` (seeds, trials, bounds), ``lab``
(the notebook's timeline and profiler-trace plumbing), ``references`` (the lesson's own
``log_access`` and the three analyses by the notebook's definitions), ``logs`` (the hidden
seeded logs and the small lockset logs), ``recording`` and ``publishing`` (exercises 1 and 5:
their runs on threads) and ``grading`` (the five graders).
"""

from __future__ import annotations

from autograder.checks.tracing.grading import (
    check_find_conflicts,
    check_lockset_races,
    check_log_access,
    check_publish_locked,
    check_who_overwrote,
)
from autograder.checks.tracing.lab import overlap_ms, plot_timeline, read_xplane_threads
from autograder.checks.tracing.logs import hidden_log
from autograder.checks.tracing.publishing import OwnedLock, run_publish_locked
from autograder.checks.tracing.recording import run_log_access, run_log_access_explore
from autograder.checks.tracing.references import (
    reference_find_conflicts,
    reference_lockset_races,
    reference_log_access,
    reference_who_overwrote,
)
from autograder.checks.tracing.settings import (
    HIDDEN_LOGS,
    PUBLISH_SCORES,
    SAMPLES,
    SCHEDULES,
    SEED,
    STRESS_TRIALS,
)

__all__ = [
    # settings
    "HIDDEN_LOGS", "PUBLISH_SCORES", "SAMPLES", "SCHEDULES", "SEED", "STRESS_TRIALS",
    # the notebook's plumbing
    "overlap_ms", "plot_timeline", "read_xplane_threads",
    # the lesson's own answers and the logs they grade
    "reference_find_conflicts", "reference_lockset_races", "reference_log_access",
    "reference_who_overwrote", "hidden_log",
    # exercises 1 and 5: their runs
    "run_log_access", "run_log_access_explore", "OwnedLock", "run_publish_locked",
    # graders
    "check_find_conflicts", "check_lockset_races", "check_log_access", "check_publish_locked",
    "check_who_overwrote",
]
