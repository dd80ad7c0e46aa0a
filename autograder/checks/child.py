"""Run a live experiment's trials in child Python processes, so a crash ends only a child.

TensorFlow can crash the whole process (a segmentation fault) when several threads build one
cold Keras model at once. It is rare, but a "see it break" cell that ran the race in the
student's kernel would then end the kernel and lose every variable in it. The lessons' cold
model demonstrations run through :func:`run_in_children` instead: each trial is one call of a
module-level function in a child process; a call that kills its child becomes an outcome of
the experiment (:class:`Crashed`), and the trials after it go on in a new child. Nothing is
retried: every trial gets exactly one outcome.

The function and its arguments cross to the child with :mod:`pickle`, so the function must be
importable by name (defined in a module, not in the notebook); its return values come back
the same way.
"""

from __future__ import annotations

import base64
import functools
import os
import pickle
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

_CHILD = """
import base64, os, pickle, sys, warnings
warnings.simplefilter("ignore")
function, calls = pickle.loads(base64.b64decode(sys.stdin.buffer.read()))
for args in calls:
    outcome = pickle.dumps(function(*args))
    sys.stdout.write(base64.b64encode(outcome).decode() + "\\n")
    sys.stdout.flush()
os._exit(0)  # every outcome is out: a thread a trial left blocked must not keep the child
"""
#: Seconds a child may take to start (import TensorFlow) before its first trial.
STARTUP_S = 90.0


@dataclass(frozen=True)
class Crashed:
    """A trial whose child process died or hung before returning.

    Attributes:
        how: What happened, for instance ``"crashed (SIGSEGV)"``.
    """

    how: str

    def __str__(self) -> str:
        return f"the process {self.how}"


def run_in_children(function: Callable[..., Any], calls: Sequence[tuple[Any, ...]], *,
                    trial_timeout_s: float, startup_s: float = STARTUP_S,
                    path: Sequence[str] = ()) -> list[Any]:
    """Call ``function(*args)`` for each ``args`` in ``calls``, in child processes.

    Args:
        function: A function defined in a module (importable by name in a new process).
        calls: The arguments of each trial, in order.
        trial_timeout_s: Seconds one trial may take; a trial still running after that is
            stopped (its child killed) and recorded as ``Crashed("hung and was stopped")``.
        startup_s: Seconds a child may take to start before its first trial.
        path: Folders the child imports from first (where ``function``'s module is, when
            it is not on the child's ``sys.path`` otherwise).

    Returns:
        One outcome per call, in order: what ``function`` returned, or a :class:`Crashed`.

    Raises:
        TypeError: ``function`` is not importable by name (defined in the notebook).
        RuntimeError: A child stopped with an error of its own (its last lines are included).
    """
    _require_importable(function)
    for args in calls:
        for arg in args:
            if callable(arg):
                _require_importable(arg)
    outcomes: list[Any] = []
    while len(outcomes) < len(calls):
        pending = list(calls[len(outcomes):])
        returned, how = _run_child(function, pending, startup_s, trial_timeout_s, path)
        outcomes += returned
        if len(returned) < len(pending):
            outcomes.append(Crashed(how))
    return outcomes


def _require_importable(function: Any) -> None:
    """Raise a one-line TypeError unless a new process can import ``function`` by name."""
    if isinstance(function, functools.partial):
        _require_importable(function.func)
        return
    module = getattr(function, "__module__", None)
    qualname = getattr(function, "__qualname__", "<")
    if module in (None, "__main__") or "<" in qualname:
        raise TypeError(f"{getattr(function, '__name__', function)!r} must be defined in a "
                        "module to run in a child process, not in the notebook (for example "
                        "warmup.predict_on_batch, or functools.partial of one)")


def _run_child(function: Callable[..., Any], calls: list[tuple[Any, ...]], startup_s: float,
               trial_timeout_s: float, path: Sequence[str] = ()) -> tuple[list[Any], str]:
    """One child for ``calls``: what it returned, and how it ended when it stopped early.

    Each outcome is read as the child writes it; the first may take ``startup_s`` plus
    ``trial_timeout_s``, each later one ``trial_timeout_s`` from the one before, or the child
    is killed as hung.
    """
    payload = base64.b64encode(pickle.dumps((function, calls)))
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONWARNINGS": "ignore"}
    if path:
        env["PYTHONPATH"] = os.pathsep.join([*path, *filter(None, [env.get("PYTHONPATH")])])
    with tempfile.TemporaryFile() as errors, subprocess.Popen(
            [sys.executable, "-c", _CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=errors, env=env) as child:
        returned, hung = _read_outcomes(child, payload, len(calls), startup_s, trial_timeout_s)
        if not hung:
            try:
                child.wait(timeout=trial_timeout_s)
            except subprocess.TimeoutExpired:
                hung = len(returned) < len(calls)
        child.kill()
        code = child.wait()
        if hung:
            return returned, "hung and was stopped"
        if code > 0 or code == 0 and len(returned) < len(calls):
            errors.seek(0)
            tail = errors.read().decode(errors="replace").strip().splitlines()[-8:]
            raise RuntimeError(f"the child process stopped with exit code {code}:\n"
                               + "\n".join(tail))
        return returned, _signal_name(-code) if code < 0 else ""


def _read_outcomes(child: subprocess.Popen, payload: bytes, count: int, startup_s: float,
                   trial_timeout_s: float) -> tuple[list[Any], bool]:
    """Send the payload, then read up to ``count`` outcomes: (outcomes, whether one hung)."""
    try:
        child.stdin.write(payload)
        child.stdin.close()
    except BrokenPipeError:
        return [], False
    returned: list[Any] = []
    pending = b""
    deadline = time.monotonic() + startup_s + trial_timeout_s
    with selectors.DefaultSelector() as selector:
        selector.register(child.stdout, selectors.EVENT_READ)
        while len(returned) < count:
            left = deadline - time.monotonic()
            if left <= 0:
                return returned, True
            if not selector.select(left):
                continue
            chunk = os.read(child.stdout.fileno(), 1 << 16)
            if not chunk:
                return returned, False
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in filter(None, lines):
                returned.append(pickle.loads(base64.b64decode(line)))
                deadline = time.monotonic() + trial_timeout_s
    return returned, False


def _signal_name(number: int) -> str:
    try:
        return f"crashed ({signal.Signals(number).name})"
    except ValueError:
        return f"crashed (signal {number})"
