"""Lesson 08's settings: the exercise's model, graded loads, time limits and ``choose``'s rule."""

from __future__ import annotations

from pathlib import Path

SHM_DIR = Path("/dev/shm")
MB = 2**20
#: The exercise's model: an embedding table (vocabulary x 64) and a Dense head (64 -> 4).
VOCABULARY, DIM, OUTPUTS = 98_304, 64, 4
EMBEDDING_SHAPES = ((VOCABULARY, DIM), (DIM, OUTPUTS), (OUTPUTS,))
TOKENS_PER_REQUEST = 16
#: Graded load: threads calling ``predict`` at once, requests each, pool workers.
POOL_THREADS, POOL_REQUESTS_EACH, POOL_WORKERS = 4, 6, 2
#: Time limits of the graded steps (seconds): a pool that hangs fails, it never hangs the grader.
START_S, LOAD_S, CLOSE_S, EXIT_POLLS, EXIT_POLL_S = 20.0, 20.0, 10.0, 10, 0.05
#: After the load, the pool is left idle as long as the longest time limit one of its threads
#: is seen waiting with (up to IDLE_MAX_S), plus IDLE_MARGIN_S, then asked once more, for at
#: most IDLE_PREDICT_S: a thread that collects answers and gives up once idle (``get(timeout=
#: 5)``, then return) leaves that predict() waiting forever (issue #32, round 5).
IDLE_MARGIN_S, IDLE_MAX_S, IDLE_PREDICT_S = 1.0, 15.0, 10.0
#: How long the pool's own threads are watched, at most, until each one is seen blocked (or
#: ended) before it is left idle: one look can catch a reader between two waits (a manager
#: queue's get(timeout=2) is a request and a reply), and then saw no limit.
IDLE_SEEN_S = 2.0
#: Looks at a worker that still shows this process's command line (forked, or spawned and
#: not yet exec'd on a loaded machine): up to 40 x 0.05 s.
EXEC_POLLS, EXEC_POLL_S = 40, 0.05
#: Graded ledger: 3 workers x 3,000 updates, enough to fill a queue's pipe (about 64 KB) with
#: the updates of a single-writer design, so that joining the workers before reading them
#: hangs. LEDGER_S bounds the whole call. Every worker is held before its last update; once
#: all are and the answer is seen in a wait, every worker but LEDGER_KEPT goes on. That one is
#: held until the answer is seen waiting for it (or for something that is not another
#: worker: a queue, a pool's result) without a time limit or with one of LEDGER_UNLIMITED_S
#: or more, or waiting again on something it already waited on (a loop of short waits), or,
#: after LEDGER_HOLD_S, polling in its own code. An answer that waits once per worker with a
#: shorter timeout and then terminates them stops the kept worker every run, after one
#: timeout, not one per worker: ``join(timeout=44)`` ends within LEDGER_S and the 120 s a cell
#: may run (issue #32: 10 s passed when a limit of 10 s counted as none, then 30 s when 21 s
#: did and every worker was held through each join). Once every worker made all its updates
#: the answer has LEDGER_STALL_S to return (a worker's exit takes milliseconds). The state is
#: looked at every LEDGER_POLL_S.
LEDGER_WORKERS, LEDGER_UPDATES, LEDGER_S, LEDGER_KEPT = 3, 3000, 75.0, 0
LEDGER_HOLD_S, LEDGER_UNLIMITED_S, LEDGER_STALL_S, LEDGER_POLL_S = 10.0, 45.0, 3.0, 0.01
#: While graded, each ledger worker's last update adds an amount the grader draws for it from
#: this range, unknown to the answer (``process_workers.extra_amount``): totals computed with
#: ``expected_totals`` instead of read from the ledger are wrong, every run.
LEDGER_EXTRA = (1_000, 1_000_000)
#: Updates per worker in the notebook's race demonstration (not graded).
RACE_UPDATES = 400
#: ``choose``'s rule: processes must fit the memory budget and serve at least this much more.
MARGIN = 1.2
#: Exercise 1's bookkeeping under the controlled scheduler (processes stubbed, see
#: ``bookkeeping``): two clients, every schedule with at most one preemption, then seeded
#: samples; a wall-clock budget far above a correct pool's run.
BOOKKEEPING_CLIENTS, BOOKKEEPING_SEED = 2, 8
BOOKKEEPING_SCHEDULES, BOOKKEEPING_SAMPLES, BOOKKEEPING_TIMEOUT_S = 3000, 20, 60.0
#: How long the stubbed pool may take to be made, asked twice and closed on one thread.
BOOKKEEPING_PROBE_S = 5.0
#: close() of the stubbed pool (``bookkeeping.closing_run``): how long after it began a held
#: thread goes on anyway (for a close() that waits some other way than ``join()``), and how
#: long a thread it started may still run after it returned.
CLOSE_QUIET_S, JOIN_GRACE_S = 1.0, 2.0
