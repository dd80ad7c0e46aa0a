"""Lesson 08, "threads or processes?": the notebook's toolbox and the graders.

The lesson compares three designs for serving one model to N concurrent requests: N worker
processes that each load their own copy, one process whose N threads share one copy, and N
worker processes attached read-only to one copy in shared memory. Everything that runs in a
worker process lives in :mod:`autograder.checks.process_workers` (a notebook's functions
cannot be ``spawn`` targets); this package starts and measures those workers for the notebook,
and grades the student's parent-side code:

- :func:`check_pool`: a ``SharedWeightsPool`` starts its workers with ``spawn``, puts the
  weights in shared memory once (each worker attaches read-only, no private copy), answers
  every request from several threads at once with its own output while the grader's workers
  answer out of order, and closes without leaving a process or a shared-memory segment; then
  its request-id bookkeeping is explored under the controlled scheduler with the processes
  stubbed (:func:`explore_pool`), where a check-then-act between callers shows every time;
- :func:`check_ledger`: ``run_ledger`` starts the ledger workers on real processes, all with
  ``spawn``, so that no update is lost (one ``multiprocessing`` lock shared by all, or a single
  writer), at a size that fills a queue's pipe, waits for every worker however long it takes
  (they are held before their last update) and returns once they are done;
- :func:`check_choose`: ``choose`` picks threads or processes from measurements the grader
  makes up (fixed seed), by the lesson's rule.

Every check has fixed seeds and counts, waits only with time limits, never retries, and
cleans up after a wrong answer (kills the processes it left, unlinks its segments) so that a
leak costs only its own exercise.

This package is the lesson's face: the notebook and hidden tests use ``processes.NAME`` and
get the names below, whichever module holds them: ``settings`` (the model's shapes, loads,
time limits, ``choose``'s margin), ``resources`` (child processes, ``/dev/shm`` segments,
leftovers and memory), ``model`` (the exercise's weights, requests and reference answers),
``pool``, ``bookkeeping``, ``ledger`` and ``choice`` (exercises 1 to 3: their runs, the pool's
explored bookkeeping and ``choose``'s cases), ``grading``
(the three graders) and ``lab`` (the notebook's designs, the ledger race and the fork
experiment). What runs in the worker processes stays in
:mod:`autograder.checks.process_workers`, outside this package, so that a spawned worker
imports none of it.
"""

from __future__ import annotations

from autograder.checks.processes.bookkeeping import (
    StubContext,
    StubProcess,
    StubQueue,
    closing_run,
    explore_pool,
    stub_output,
    stub_target,
)
from autograder.checks.processes.choice import DesignRun, choice_cases, reference_choice
from autograder.checks.processes.grading import check_choose, check_ledger, check_pool
from autograder.checks.processes.lab import (
    Memory,
    Served,
    Server,
    fork_after_tf,
    memory_of,
    pack,
    paired_median,
    plot_memory,
    rebuild_seconds,
    serve,
    serve_rate,
    start_servers,
    stop_servers,
    tally_race,
)
from autograder.checks.processes.ledger import (
    LedgerRun,
    Waiting,
    run_ledger_once,
    waiting,
    waits_without_limit,
)
from autograder.checks.processes.model import embedding_weights, reference_output, request_tokens
from autograder.checks.processes.pool import PoolRun, run_pool
from autograder.checks.processes.resources import (
    Leftovers,
    Snapshot,
    child_processes,
    clean_up,
    rss_mb,
    segments,
    snapshot,
    spawn_context,
    uss_mb,
)
from autograder.checks.processes.settings import (
    BOOKKEEPING_CLIENTS,
    BOOKKEEPING_PROBE_S,
    BOOKKEEPING_SAMPLES,
    BOOKKEEPING_SCHEDULES,
    BOOKKEEPING_SEED,
    BOOKKEEPING_TIMEOUT_S,
    CLOSE_S,
    DIM,
    EMBEDDING_SHAPES,
    EXEC_POLL_S,
    EXEC_POLLS,
    EXIT_POLL_S,
    EXIT_POLLS,
    IDLE_MARGIN_S,
    IDLE_MAX_S,
    IDLE_PREDICT_S,
    LEDGER_EXTRA,
    LEDGER_HOLD_S,
    LEDGER_KEPT,
    LEDGER_POLL_S,
    LEDGER_S,
    LEDGER_STALL_S,
    LEDGER_UNLIMITED_S,
    LEDGER_UPDATES,
    LEDGER_WORKERS,
    LOAD_S,
    MARGIN,
    MB,
    OUTPUTS,
    POOL_REQUESTS_EACH,
    POOL_THREADS,
    POOL_WORKERS,
    RACE_UPDATES,
    SHM_DIR,
    START_S,
    TOKENS_PER_REQUEST,
    VOCABULARY,
)

__all__ = [
    # settings
    "BOOKKEEPING_CLIENTS", "BOOKKEEPING_PROBE_S", "BOOKKEEPING_SAMPLES", "BOOKKEEPING_SCHEDULES",
    "BOOKKEEPING_SEED", "BOOKKEEPING_TIMEOUT_S", "CLOSE_S", "DIM", "EMBEDDING_SHAPES",
    "EXEC_POLL_S", "EXEC_POLLS", "EXIT_POLL_S", "EXIT_POLLS", "IDLE_MARGIN_S", "IDLE_MAX_S",
    "IDLE_PREDICT_S", "LEDGER_EXTRA", "LEDGER_HOLD_S", "LEDGER_KEPT",
    "LEDGER_POLL_S",
    "LEDGER_S", "LEDGER_STALL_S", "LEDGER_UNLIMITED_S", "LEDGER_UPDATES", "LEDGER_WORKERS",
    "LOAD_S", "MARGIN", "MB",
    "OUTPUTS", "POOL_REQUESTS_EACH", "POOL_THREADS", "POOL_WORKERS", "RACE_UPDATES", "SHM_DIR",
    "START_S", "TOKENS_PER_REQUEST", "VOCABULARY",
    # processes, segments and their memory
    "Leftovers", "Snapshot", "child_processes", "clean_up", "rss_mb", "segments", "snapshot",
    "spawn_context", "uss_mb",
    # the exercise's model
    "embedding_weights", "reference_output", "request_tokens",
    # the three exercises
    "PoolRun", "run_pool",
    "StubContext", "StubProcess", "StubQueue", "closing_run", "explore_pool", "stub_output",
    "stub_target",
    "LedgerRun", "Waiting", "run_ledger_once", "waiting", "waits_without_limit",
    "DesignRun", "choice_cases", "reference_choice",
    # graders
    "check_choose", "check_ledger", "check_pool",
    # the notebook's designs, the ledger race and the fork experiment
    "Memory", "Served", "Server", "fork_after_tf", "memory_of", "pack", "paired_median",
    "plot_memory", "rebuild_seconds", "serve", "serve_rate", "start_servers", "stop_servers",
    "tally_race",
]
