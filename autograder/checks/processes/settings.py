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
#: Looks at a worker that still shows this process's command line (forked, or spawned and
#: not yet exec'd on a loaded machine): up to 40 x 0.05 s.
EXEC_POLLS, EXEC_POLL_S = 40, 0.05
LEDGER_WORKERS, LEDGER_UPDATES, LEDGER_S = 3, 400, 30.0
#: ``choose``'s rule: processes must fit the memory budget and serve at least this much more.
MARGIN = 1.2
