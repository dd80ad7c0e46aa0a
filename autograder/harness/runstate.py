"""What one controlled run keeps: its threads' states, the steps it records and how it ended."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from . import access, primitives, tamper

_RUNNABLE, _FINISHED = "runnable", "finished"


class _Abort(BaseException):
    """Raised inside a controlled thread to stop it (deadlock, timeout, error elsewhere)."""


@dataclass
class Step:
    """One recorded decision point: which thread was about to do what, where."""

    step: int
    thread: int
    filename: str
    lineno: int
    function: str
    note: str = ""
    access: access.Access = access.NOTHING


@dataclass
class Outcome:
    """How a run ended.

    Attributes:
        kind: ``"done"``, ``"error"``, ``"deadlock"`` or ``"timeout"``.
        names: Thread names by index.
        switches: ``(step, thread)`` for every decision that changed the running thread.
        gave_up: The steps at which the chosen thread's timed wait gave up (its timeout ran
            out before another thread ended the wait, or when none could).
        steps: Decision points, in order (capped).
        error: The exception for ``"error"``, and ``error_thread`` its thread.
        detail: Extra words (deadlock stacks, what was blocked, divergence).
        blocked: Index -> what it waited for, at a deadlock or timeout.
        tampering: Problems found (tracing switched off by user code and the like).
        last_step: The number of decision points.
    """

    kind: str = "done"
    names: list[str] = field(default_factory=list)
    switches: list[tuple[int, int]] = field(default_factory=list)
    gave_up: set[int] = field(default_factory=set)
    steps: list[Step] = field(default_factory=list)
    error: BaseException | None = None
    error_thread: int | None = None
    detail: str = ""
    blocked: dict[int, str] = field(default_factory=dict)
    tampering: list[str] = field(default_factory=list)
    last_step: int = 0


class _Thread:
    """The scheduler's view of one controlled thread."""

    def __init__(self, index: int, name: str, *, spawned: bool = False,
                 thread: threading.Thread | None = None):
        self.index = index
        self.name = name
        self.spawned = spawned
        self.thread = thread
        self.daemon = bool(thread is not None and thread.daemon)
        self.gate = tamper.allocate_lock()
        self.gate.acquire()
        self.ident: int | None = None
        self.native_id: int | None = None  # the OS thread id, for its scheduling state
        self.status = _RUNNABLE
        self.wait: primitives.Wait | None = None
        self.blocked_on = ""
        self.timed_out = False
        self.given_up = 0  # timed acquires this thread was made to give up as a choice
        self.atomic = False
        self.native = False
        self.expect_native = False
        self.yielding = False  # about to sleep: others that can run take the next step
        self.parked = True
        self.detached = False
        self.starting = 0
        self.global_trace: Callable | None = None
