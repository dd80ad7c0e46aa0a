"""The notebook's live trials: the three designs served and measured, the ledger raced, fork."""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from autograder.checks import process_workers
from autograder.checks.processes.resources import rss_mb, spawn_context, uss_mb
from autograder.checks.processes.settings import LEDGER_S, LEDGER_WORKERS, MB, RACE_UPDATES

# --------------------------------------------------------------------------- see it: the designs


@dataclass
class Server:
    """One worker process of the "See it" designs and the end of its pipe."""

    process: Any
    conn: Any
    pid: int


def start_servers(count: int, kind: str, *, segment: Any = None, timeout_s: float = 180.0
                  ) -> list[Server]:
    """Start ``count`` worker processes with ``spawn`` and wait until each has its model.

    Args:
        count: Processes.
        kind: ``"tf"`` (TensorFlow, each its own copy of the model) or ``"numpy"`` (attached
            read-only to ``segment``, a SharedMemory holding :func:`pack`'s layout).
        segment: The shared block, for ``"numpy"``.
        timeout_s: How long to wait for all of them to be ready.
    """
    ctx = spawn_context()
    servers = []
    for _ in range(count):
        parent, child = ctx.Pipe()
        if kind == "tf":
            process = ctx.Process(target=process_workers.tf_server, args=(child,), daemon=True)
        else:
            shapes = process_workers.mlp_shapes()
            process = ctx.Process(target=process_workers.numpy_server,
                                  args=(child, segment.name, shapes), daemon=True)
        process.start()
        servers.append(Server(process, parent, 0))
    deadline = time.monotonic() + timeout_s
    for server in servers:
        if not server.conn.poll(max(0.0, deadline - time.monotonic())):
            stop_servers(servers)
            raise RuntimeError(f"a {kind} worker was not ready within {timeout_s:g} s")
        _, server.pid = server.conn.recv()
    return servers


def stop_servers(servers: Sequence[Server]) -> None:
    """Ask every server to stop, join it (bounded), kill it if it does not."""
    for server in servers:
        with contextlib.suppress(OSError, ValueError):
            server.conn.send(("stop",))
    for server in servers:
        server.process.join(10)
        if server.process.is_alive():
            server.process.kill()
            server.process.join(5)
        server.conn.close()


def pack(weights: Sequence[np.ndarray]) -> Any:
    """A new SharedMemory block holding ``weights`` back to back as float32 (C order)."""
    from multiprocessing.shared_memory import SharedMemory

    total = sum(int(w.nbytes) for w in weights)
    block = SharedMemory(create=True, size=total)
    offset = 0
    for w in weights:
        flat = np.ascontiguousarray(w, dtype=np.float32).reshape(-1)
        block.buf[offset:offset + flat.nbytes] = flat.view(np.uint8)
        offset += flat.nbytes
    return block


def _ask(servers: Sequence[Server], commands: Sequence[tuple]) -> list[tuple[float, float]]:
    for server, command in zip(servers, commands, strict=True):
        server.conn.send(command)
    seconds = []
    for server in servers:
        status, value = server.conn.recv()
        if status != "ok":
            raise RuntimeError(f"worker {server.pid}: {value}")
        seconds.append(value)
    return seconds


@dataclass(frozen=True)
class Served:
    """One measured run: requests per second, and CPU seconds used per wall second (cores)."""

    per_second: float
    cores: float


def serve(servers: Sequence[Server], workload: str, request_ids: Sequence[int], *,
          threads: int = 1) -> Served:
    """Serve ``request_ids`` shared among ``servers`` (each with ``threads`` threads)."""
    share = [list(request_ids[k::len(servers)]) for k in range(len(servers))]
    start = time.perf_counter()
    replies = _ask(servers, [("run", workload, ids, threads) for ids in share])
    wall = time.perf_counter() - start
    return Served(len(request_ids) / wall, sum(cpu for _, cpu in replies) / wall)


def serve_rate(servers: Sequence[Server], workload: str, request_ids: Sequence[int], *,
               threads: int = 1) -> float:
    """Requests per second of ``servers`` sharing ``request_ids`` (each with ``threads``)."""
    return serve(servers, workload, request_ids, threads=threads).per_second


def rebuild_seconds(server: Server, workload: str, request_ids: Sequence[int]) -> float:
    """Seconds ``server`` takes when it builds the model anew for every request."""
    return _ask([server], [("rebuild", workload, list(request_ids))])[0][0]


@dataclass
class Memory:
    """Memory of one design: the sum of its processes' USS, plus shared blocks counted once.

    ``rss_mb`` is what adding up RSS would say (it counts shared pages in every process).
    """

    label: str
    processes: int
    uss_mb: float
    shared_mb: float
    rss_mb: float

    @property
    def total_mb(self) -> float:
        """USS of every process plus the shared blocks once."""
        return self.uss_mb + self.shared_mb


def memory_of(label: str, pids: Sequence[int], shared_bytes: int = 0) -> Memory:
    """:class:`Memory` of the processes ``pids`` and ``shared_bytes`` of shared blocks."""
    return Memory(label, len(pids), sum(uss_mb(p) for p in pids), shared_bytes / MB,
                  sum(rss_mb(p) for p in pids))


def paired_median(top: Sequence[float], bottom: Sequence[float]) -> float:
    """Median over rounds of ``top[i] / bottom[i]``."""
    return statistics.median(t / b for t, b in zip(top, bottom, strict=True))


def plot_memory(rows: Sequence[Memory]) -> Any:
    """Bars of each design's memory (USS + shared once) next to its summed RSS."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(8, 0.6 + 0.55 * len(rows)), layout="constrained")
    axes = figure.add_subplot()
    y = np.arange(len(rows))
    axes.barh(y - 0.2, [r.total_mb for r in rows], 0.4, color="#4C72B0",
              label="sum of USS + shared blocks once")
    axes.barh(y + 0.2, [r.rss_mb for r in rows], 0.4, color="#BBBBBB", label="sum of RSS")
    for k, row in enumerate(rows):
        axes.text(row.total_mb, k - 0.2, f" {row.total_mb:,.0f} MB", va="center", fontsize=8)
    axes.set_yticks(y, [r.label for r in rows])
    axes.invert_yaxis()
    axes.set_xlabel("MB")
    axes.legend(loc="lower right", fontsize=8)
    return figure


# --------------------------------------------------------------------------- see it break: ledger


def tally_race(lock: str, *, trials: int, workers: int = LEDGER_WORKERS,
               updates: int = RACE_UPDATES) -> list[int]:
    """Lost updates per trial of the ledger workers on real processes, without a proper lock.

    Args:
        lock: ``"none"`` (no lock), ``"per worker"`` (each worker gets its own new Lock),
            ``"array"`` (a ``multiprocessing.Array``, whose own lock guards each read and each
            write separately, and no lock around the update).
        trials: Runs.
    """
    return [_tally_once(lock, workers, updates) for _ in range(trials)]


def _tally_once(lock: str, workers: int, updates: int) -> int:
    from multiprocessing.shared_memory import SharedMemory

    ctx = spawn_context()
    block = array = None
    if lock == "array":
        array = ctx.Array("q", process_workers.LEDGER_SLOTS)
        ledger: Any = array
    else:
        block = SharedMemory(create=True, size=8 * process_workers.LEDGER_SLOTS)
        block.buf[:] = bytes(block.size)
        ledger = block.name
    locks = [ctx.Lock() if lock == "per worker" else None for _ in range(workers)]
    procs = [ctx.Process(target=process_workers.tally,
                         args=(ledger, locks[k], k, workers, updates)) for k in range(workers)]
    try:
        for proc in procs:
            proc.start()
        for proc in procs:
            proc.join(LEDGER_S)
        if array is not None:
            counted = sum(array[:process_workers.ACCOUNTS])
        else:
            view = block.buf.cast("q")
            counted = sum(view[:process_workers.ACCOUNTS])
            view.release()
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.kill()
                proc.join(5)
        if block is not None:
            block.close()
            block.unlink()
    return sum(process_workers.expected_totals(workers, updates)) - counted


# --------------------------------------------------------------------------- see it break: fork


_FORK_SCRIPT = """
import json, multiprocessing as mp, os, sys, time
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
import tensorflow as tf
from autograder.checks import process_workers
forks, fork_wait, spawn_wait, size = json.loads(sys.argv[1])
x = tf.random.normal((size, size), seed=0)
float(tf.reduce_sum(tf.matmul(x, x)))
children = [("fork", mp.get_context("fork").Process(target=process_workers.tf_matmul,
                                                   args=(size,))) for _ in range(forks)]
children.append(("spawn", mp.get_context("spawn").Process(target=process_workers.tf_matmul,
                                                          args=(size,))))
started = time.monotonic()
for _, child in children:
    child.start()
report = []
for method, child in children:
    limit = fork_wait if method == "fork" else spawn_wait
    child.join(max(0.0, started + limit - time.monotonic()))
    if child.exitcode is None:
        child.kill()
        child.join(5)
        outcome = "hung"
    elif child.exitcode == 0:
        outcome = "finished"
    elif child.exitcode < 0:
        outcome = f"crashed (signal {-child.exitcode})"
    else:
        outcome = f"failed (exit {child.exitcode})"
    report.append([method, outcome, round(time.monotonic() - started, 1)])
print("REPORT " + json.dumps(report), flush=True)
os._exit(0)
"""


def fork_after_tf(*, forks: int = 3, fork_wait_s: float = 5.0, spawn_wait_s: float = 90.0,
                  size: int = 512) -> list[tuple[str, str, float]]:
    """Start TensorFlow in a child Python, then fork and spawn from it; each child's outcome.

    The child Python imports TensorFlow and runs a ``size`` x ``size`` matmul (its thread pool
    starts). Then it forks ``forks`` processes and spawns one, all running the same matmul,
    waits up to ``fork_wait_s`` for the forked ones and ``spawn_wait_s`` for the spawned one
    (it imports TensorFlow itself), and kills those still running.

    Returns:
        ``(start method, outcome, seconds)`` per child: outcome ``"finished"``, ``"hung"``,
        ``"crashed (signal N)"`` or ``"failed (exit N)"``.
    """
    package = str(Path(process_workers.__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [package, *filter(None, [os.environ.get("PYTHONPATH")])])}
    args = json.dumps([forks, fork_wait_s, spawn_wait_s, size])
    done = subprocess.run([sys.executable, "-c", _FORK_SCRIPT, args], capture_output=True,
                          text=True, env=env, timeout=spawn_wait_s + 120, check=False)
    for line in done.stdout.splitlines():
        if line.startswith("REPORT "):
            return [tuple(item) for item in json.loads(line[len("REPORT "):])]
    raise RuntimeError(f"the fork experiment did not report (exit {done.returncode}): "
                       f"{done.stderr[-2000:]}")
