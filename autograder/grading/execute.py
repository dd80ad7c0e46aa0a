"""Host side of one run of the grading runner: start it sandboxed, watch it, read its report.

:func:`run_cells` starts :mod:`autograder.kernel.runner` in the sandbox, hands it the plan on
standard input, and reads its signed events as data: lines are capped in length, unsigned lines
are counted and dropped, nothing is read from a file the notebook could write, and every wait
is bounded. A watchdog samples the sandbox's whole process tree and its ``/tmp``; the run is
stopped when a cell passes its time limit, the tree passes the memory cap (resident memory of
every process plus the RAM-backed ``/tmp``) or the process bound, or the whole run passes the
job's time limit. The outcome says which cell was running then, so the job can grade the
notebook again with that cell replaced by an error (never re-run).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from autograder.grading import sandbox
from autograder.grading.cells import for_runner
from autograder.grading.spec import Limits
from autograder.kernel import channel, protocol

STDERR_KEPT = 64 * 1024
"""Bytes of the runner's standard error kept for the grader's log (the tail)."""
MAX_REPORT = 256 * 2**20
"""Bytes of report the host reads from one run before it stops the run."""
_SAMPLE_S = 0.1
_RAM_DISKS = ("/tmp", "/dev/shm")


_DEFAULTS = Limits()


@dataclass(frozen=True)
class RunLimits:
    """What one run may use.

    Attributes:
        cell_timeout_s: Wall time of one cell.
        run_timeout_s: Wall time of the whole run.
        memory_mb: Resident memory of the sandbox's processes plus its ``/tmp``.
        max_processes: Processes (and threads count not) in the sandbox at once.
        tmp_mb: Size of the sandbox's ``/tmp``.
        sandbox: Run inside bubblewrap (``False`` only for trusted notebooks).
    """

    cell_timeout_s: float = _DEFAULTS.cell_timeout_s
    run_timeout_s: float = _DEFAULTS.job_timeout_s
    memory_mb: int = _DEFAULTS.memory_mb
    max_processes: int = _DEFAULTS.max_processes
    tmp_mb: int = 512
    sandbox: bool = True


@dataclass
class Run:
    """What one run of the runner reported.

    Attributes:
        ended: Cell index -> its ``end`` event (outputs, error, verdict fields).
        finished: The runner reported ``done``.
        running: The cell that had started and not ended when the run stopped, if any.
        stopped: Why the host stopped the run (``died``, ``timeout``, ``memory``,
            ``processes``, ``run-timeout``, ``report``, ``grader-error``), or "" when it
            finished.
        reason: The stop in words, for the student.
        noise: Lines on the report channel that the runner did not sign.
        peak_mb: Highest memory the watchdog saw.
        stderr: The tail of the runner's standard error (for the grader's log only).
    """

    ended: dict[int, dict] = field(default_factory=dict)
    finished: bool = False
    running: int | None = None
    stopped: str = ""
    reason: str = ""
    noise: int = 0
    peak_mb: float = 0.0
    stderr: str = ""


@dataclass
class ReadyRunner:
    """A runner started in its sandbox before its plan: the lesson's imports made, no cell yet.

    Validate keeps one ready for the lesson last validated (:mod:`autograder.lab.verdict`),
    so that a press does not wait for TensorFlow's import. It serves one run, never two.

    Attributes:
        process: The sandbox (bubblewrap) or the runner itself.
        preload: The import statements it made.
        limits: The limits it was started with (``tmp_mb`` and ``sandbox`` are fixed then).
    """

    process: subprocess.Popen
    preload: tuple[str, ...]
    limits: RunLimits

    def fits(self, preload: list[str], limits: RunLimits) -> bool:
        """Whether this runner can serve a run with ``preload`` and ``limits``: still waiting
        for its plan, started with the same imports, the same ``/tmp`` and sandbox."""
        return (self.process.poll() is None and self.preload == tuple(preload)
                and (self.limits.tmp_mb, self.limits.sandbox) == (limits.tmp_mb, limits.sandbox))

    def close(self) -> None:
        """Stop the runner and its sandbox (one that served a run is stopped already)."""
        _stop(self.process)


def start_runner(preload: list[str], limits: RunLimits, scratch: Path) -> ReadyRunner:
    """Start the runner in a fresh sandbox; it imports ``preload`` and waits for its plan.

    Args:
        preload: Import statements the runner executes before any student code.
        limits: Its limits (``tmp_mb`` and ``sandbox`` apply now; the rest to its run).
        scratch: A host folder for the sandbox's synthetic ``/etc`` (never writable inside);
            it must last as long as the runner.
    """
    env = sandbox.runner_environment({})
    if limits.sandbox:
        argv = sandbox.runner_argv(env, sandbox.write_etc(scratch / "etc"),
                                   tmp_mb=limits.tmp_mb)
        child_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    else:
        argv = sandbox.direct_argv()
        child_env = {**os.environ, **env}
    process = subprocess.Popen([*argv, *preload], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env,
                               start_new_session=True)
    return ReadyRunner(process, tuple(preload), limits)


def run_cells(cells: list[dict], preload: list[str], limits: RunLimits, scratch: Path,
              ready: ReadyRunner | None = None) -> Run:
    """Run ``cells`` in a fresh sandboxed runner and return what it reported.

    Args:
        cells: Plan cells: ``kind`` (code, answer or test), ``source``, optional ``skip``
            (``died`` or ``timeout``) and ``label``; test cells' ``hidden`` calls. Only
            these keys reach the runner (:func:`~autograder.grading.cells.for_runner`): a
            test's graded source and expected values stay here.
        preload: Import statements the runner executes before any student code.
        limits: Time, memory and process limits.
        scratch: A host folder for the sandbox's synthetic ``/etc`` (never writable inside).
        ready: A runner started earlier for this run (:func:`start_runner`); used only if it
            :meth:`~ReadyRunner.fits`, and stopped either way.
    """
    key = channel.new_key()
    if ready is not None and not ready.fits(preload, limits):
        ready.close()
        ready = None
    process = (ready or start_runner(preload, limits, scratch)).process
    plan = json.dumps({"key": key.hex(), "cells": [for_runner(cell) for cell in cells],
                       "preload": preload}).encode()
    run = Run()
    events: queue.Queue = queue.Queue()
    tail = bytearray()
    feeders = [threading.Thread(target=_feed, args=(process.stdin, plan), daemon=True),
               threading.Thread(target=_read_report, args=(process.stdout, key, events, run),
                                daemon=True),
               threading.Thread(target=_read_tail, args=(process.stderr, tail), daemon=True)]
    for thread in feeders:
        thread.start()
    try:
        _watch(process, events, run, limits, len(cells))
    finally:
        _stop(process)
        for thread in feeders:
            thread.join(5)
        run.stderr = tail.decode("utf-8", "replace")
    return run


def _feed(stream, plan: bytes) -> None:
    with contextlib.suppress(OSError):
        stream.write(plan)
    with contextlib.suppress(OSError):
        stream.close()


def _read_report(stream, key: bytes, events: queue.Queue, run: Run) -> None:
    total = 0
    while True:
        line = stream.readline(channel.MAX_LINE)
        if not line:
            break
        total += len(line)
        if total > MAX_REPORT:
            events.put({protocol.KIND: protocol.FLOOD})
            break
        if not line.endswith(b"\n"):  # longer than a line may be: drop the rest of it
            run.noise += 1
            while line and not line.endswith(b"\n"):
                line = stream.readline(channel.MAX_LINE)
                total += len(line)
            continue
        payload = channel.verify(line, key)
        if payload is None:
            run.noise += 1
        else:
            events.put(payload)
    events.put({protocol.KIND: protocol.EOF})


def _read_tail(stream, tail: bytearray) -> None:
    while True:
        chunk = stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536)
        if not chunk:
            return
        tail.extend(chunk)
        del tail[:-STDERR_KEPT]


def _watch(process: subprocess.Popen, events: queue.Queue, run: Run, limits: RunLimits,
           cells: int) -> None:
    """Follow the run until it ends; ``cells`` is how many cells the plan holds.

    The report must follow the plan: each cell starts after the previous one ended, in plan
    order, and ``done`` comes only after the last. Anything else (a notebook replaying the
    runner's own sender, say) stops the run as ``report``: the notebook is ``tampered``.
    """
    started = time.monotonic()
    cell_started = started
    next_sample = started
    expected = 0
    next_cell = 0
    while True:
        now = time.monotonic()
        if now >= next_sample:
            stop = _sample(process, run, limits)
            if stop:
                run.stopped, run.reason = stop
                return
            next_sample = now + _SAMPLE_S
        if run.running is not None and now - cell_started > limits.cell_timeout_s:
            run.stopped = "timeout"
            run.reason = f"a cell ran over {limits.cell_timeout_s:g} s"
            return
        if now - started > limits.run_timeout_s:
            run.stopped = "run-timeout"
            run.reason = f"grading this notebook took over {limits.run_timeout_s:g} s"
            return
        try:
            event = events.get(timeout=_SAMPLE_S)
        except queue.Empty:
            continue
        kind = event.get(protocol.KIND)
        if event.get("seq") != expected and kind not in protocol.HOST_EVENTS:
            run.stopped, run.reason = "report", "the grader's report arrived out of order"
            return
        expected += 1
        if not _in_plan_order(kind, event.get("cell"), run.running, next_cell, cells):
            run.stopped, run.reason = "report", "the grader's report arrived out of order"
            return
        if kind == protocol.START:
            run.running, cell_started = event.get("cell"), time.monotonic()
        elif kind == protocol.END:
            run.ended[event.get("cell")] = event
            run.running = None
            next_cell += 1
        elif kind == protocol.DONE:
            run.finished = True
            return
        elif kind == protocol.GRADER_ERROR:
            run.stopped = "grader-error"
            run.reason = f"the grader could not make itself safe to run ({event.get('what')})"
            return
        elif kind == protocol.FLOOD:
            run.stopped = "report"
            run.reason = f"the notebook wrote over {MAX_REPORT // 2**20} MB of output"
            return
        elif kind == protocol.EOF:
            process.wait(timeout=10)
            run.stopped = "died"
            run.reason = _death(process.returncode)
            return


def _in_plan_order(kind: str, cell: object, running: int | None, next_cell: int,
                   cells: int) -> bool:
    if kind == protocol.START:
        return running is None and type(cell) is int and cell == next_cell < cells
    if kind == protocol.END:
        return running is not None and type(cell) is int and cell == running
    if kind == protocol.DONE:
        return running is None and next_cell == cells
    return True


def _death(returncode: int | None) -> str:
    """The runner's exit in words: killed by a signal (directly, or as bubblewrap reports it,
    128 + the signal's number) or exited with a status."""
    number = -returncode if returncode is not None and returncode < 0 else (
        returncode - 128 if returncode is not None and returncode > 128 else None)
    if number is not None:
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return f"the process was killed by {name} (a crash)"
    return f"the process exited with status {returncode} (the notebook exited or crashed)"


def _sample(process: subprocess.Popen, run: Run, limits: RunLimits) -> tuple[str, str] | None:
    """Memory and process count of the whole sandbox; a reason to stop, or None."""
    import psutil

    try:
        root = psutil.Process(process.pid)
        tree = [root, *root.children(recursive=True)]
    except psutil.Error:
        return None
    rss = 0
    for proc in tree:
        with contextlib.suppress(psutil.Error):
            rss += proc.memory_info().rss
    total_mb = (rss + _ram_disk_usage(tree)) / 2**20
    run.peak_mb = max(run.peak_mb, total_mb)
    if total_mb > limits.memory_mb:
        return "memory", (f"the notebook used {total_mb:.0f} MB (its processes and files in "
                          f"/tmp and /dev/shm), over the {limits.memory_mb} MB cap")
    if len(tree) > limits.max_processes + 2:  # bubblewrap's own two processes
        return "processes", (f"the notebook started over {limits.max_processes} processes "
                             "at once")
    return None


def _ram_disk_usage(tree: list) -> int:
    """Bytes used in the sandbox's RAM-backed ``/tmp`` and ``/dev/shm`` (seen through its root)."""
    host = {}
    for folder in _RAM_DISKS:
        with contextlib.suppress(OSError):
            host[folder] = os.stat(folder).st_dev
    for proc in reversed(tree):
        used, seen = 0, False
        for folder in _RAM_DISKS:
            path = f"/proc/{proc.pid}/root{folder}"
            try:
                if os.stat(path).st_dev == host.get(folder):
                    continue
                stats = os.statvfs(path)
            except OSError:
                continue
            used += (stats.f_blocks - stats.f_bfree) * stats.f_frsize
            seen = True
        if seen:
            return used
    return 0


def _stop(process: subprocess.Popen) -> None:
    """Kill the runner and everything it started (the sandbox dies with bubblewrap)."""
    import psutil

    with contextlib.suppress(psutil.Error):
        for child in psutil.Process(process.pid).children(recursive=True):
            with contextlib.suppress(psutil.Error):
                child.kill()
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        process.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=10)
    for stream in (process.stdin, process.stdout, process.stderr):
        with contextlib.suppress(OSError):
            stream.close()
