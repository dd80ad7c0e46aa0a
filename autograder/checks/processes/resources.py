"""What runs and what is left: this process's children, ``/dev/shm`` segments, their memory."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from autograder.checks.processes.settings import EXIT_POLL_S, EXIT_POLLS, MB, SHM_DIR


def spawn_context() -> Any:
    """``multiprocessing.get_context("spawn")``."""
    return multiprocessing.get_context("spawn")


def _is_tracker(proc: Any) -> bool:
    try:
        return "resource_tracker" in " ".join(proc.cmdline())
    except Exception:  # noqa: BLE001 - a process that ended or became a zombie
        return False


def child_processes() -> dict[int, Any]:
    """This process's live children, by pid, without multiprocessing's resource tracker."""
    import psutil

    found = {}
    for proc in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if proc.status() != psutil.STATUS_ZOMBIE and not _is_tracker(proc):
                found[proc.pid] = proc
    return found


def segments() -> dict[str, int]:
    """Shared-memory segments in ``/dev/shm`` (name -> bytes), without semaphores."""
    found = {}
    with contextlib.suppress(OSError):
        for entry in os.scandir(SHM_DIR):
            if not entry.name.startswith("sem."):
                with contextlib.suppress(OSError):
                    found[entry.name] = entry.stat().st_size
    return found


@dataclass
class Leftovers:
    """Processes and segments that appeared since a :func:`snapshot` and are still there."""

    processes: list[int] = field(default_factory=list)
    segments: dict[str, int] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.processes or self.segments)

    def describe(self) -> str:
        """The leftovers in words."""
        parts = []
        if self.processes:
            parts.append(f"{len(self.processes)} process{'es' if len(self.processes) > 1 else ''}"
                         " still running")
        if self.segments:
            parts.append(f"{len(self.segments)} shared-memory segment"
                         f"{'s' if len(self.segments) > 1 else ''} still in /dev/shm "
                         f"({sum(self.segments.values()) / MB:.0f} MB)")
        return " and ".join(parts)


@dataclass
class Snapshot:
    """What ran and what was in ``/dev/shm`` at one moment."""

    processes: set[int]
    segments: set[str]

    def since(self) -> Leftovers:
        """What appeared since this snapshot and is still there."""
        now = segments()
        return Leftovers(sorted(set(child_processes()) - self.processes),
                         {n: s for n, s in now.items() if n not in self.segments})


def snapshot() -> Snapshot:
    """Remember this process's children and the segments in ``/dev/shm`` now."""
    return Snapshot(set(child_processes()), set(segments()))


def clean_up(leftovers: Leftovers) -> None:
    """Kill leftover processes (and reap them) and unlink leftover segments."""
    import psutil

    procs = []
    for pid in leftovers.processes:
        with contextlib.suppress(psutil.Error):
            proc = psutil.Process(pid)
            proc.kill()
            procs.append(proc)
    with contextlib.suppress(psutil.Error):
        psutil.wait_procs(procs, timeout=5)
    for name in leftovers.segments:
        _unlink(name)


def _unlink(name: str) -> None:
    """Unlink a segment through SharedMemory, so that the resource tracker forgets it too."""
    from multiprocessing.shared_memory import SharedMemory

    try:
        block = SharedMemory(name=name)
    except (OSError, ValueError):
        with contextlib.suppress(OSError):
            os.unlink(SHM_DIR / name)
        return
    block.close()
    with contextlib.suppress(OSError):
        block.unlink()


def _wait_for_exit(pids: Sequence[int]) -> list[int]:
    """Poll (bounded) until ``pids`` have exited; the ones still running."""
    import psutil

    running = list(pids)
    for _ in range(EXIT_POLLS):
        running = [pid for pid in running if _alive(pid, psutil)]
        if not running:
            return []
        time.sleep(EXIT_POLL_S)
    return running


def _alive(pid: int, psutil: Any) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def uss_mb(pid: int) -> float:
    """Unique set size of a process: memory no other process maps (MB)."""
    import psutil

    return psutil.Process(pid).memory_full_info().uss / MB


def rss_mb(pid: int) -> float:
    """Resident set size of a process: every page it maps that is in RAM, shared or not (MB)."""
    import psutil

    return psutil.Process(pid).memory_info().rss / MB
