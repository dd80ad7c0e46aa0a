"""Refuse, inside the grading runner, to replace the tools the race detector relies on.

The grading runner (:mod:`autograder.kernel.runner`) installs this before any student code
runs. It turns the modules whose functions the graders use (``threading``, ``_thread``,
``queue``, ``sys``, ``time``) into guarded modules: assigning or deleting a protected name raises
:class:`TamperingError` in the student's cell and is recorded (so a cell that catches the error
is still reported), the runner keeps working, and the grader reports the notebook as
``tampered``. A write that goes around the guard (through the module's
``__dict__``) is still caught by the runner's integrity check and the harness's tamper check.
"""

from __future__ import annotations

import sys
import types

from autograder.harness.tamper import note_refusal as record_attempt

PROTECTED = {
    "threading": ("Lock", "RLock", "Condition", "Semaphore", "BoundedSemaphore", "Event",
                  "Barrier", "Thread", "Timer", "settrace", "setprofile", "get_ident",
                  "current_thread", "local", "_allocate_lock"),
    "_thread": ("allocate_lock", "LockType", "RLock", "start_new_thread", "get_ident"),
    "queue": ("Queue", "SimpleQueue", "LifoQueue", "PriorityQueue"),
    "sys": ("settrace", "gettrace", "setprofile", "setswitchinterval", "getswitchinterval",
            "_current_frames", "modules"),
    "time": ("sleep", "monotonic", "perf_counter", "perf_counter_ns", "time"),
}


class TamperingError(PermissionError):
    """Graded code tried to replace a threading primitive, trace hook or clock."""


class _GuardedModule(types.ModuleType):
    _protected: frozenset[str] = frozenset()

    def __setattr__(self, name: str, value: object, _record=record_attempt) -> None:
        if name in type(self)._protected:
            _record(f"replacing {self.__name__}.{name}")
            raise TamperingError(
                f"replacing {self.__name__}.{name} is not allowed in graded code: the race "
                "detector relies on it, and a replaced lock or clock can make racy code look "
                "correct")
        super().__setattr__(name, value)

    def __delattr__(self, name: str, _record=record_attempt) -> None:
        if name in type(self)._protected:
            _record(f"deleting {self.__name__}.{name}")
            raise TamperingError(f"deleting {self.__name__}.{name} is not allowed in graded code")
        super().__delattr__(name)


def install() -> None:
    """Guard the protected names of every module in :data:`PROTECTED` (idempotent)."""
    import queue  # noqa: F401 - imported so that it can be guarded
    import threading  # noqa: F401

    for module_name, names in PROTECTED.items():
        module = sys.modules[module_name]
        if isinstance(module, _GuardedModule):
            continue
        guarded = type(f"Guarded_{module_name}", (_GuardedModule,),
                       {"_protected": frozenset(names)})
        module.__class__ = guarded
