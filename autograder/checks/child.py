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
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

_CHILD = """
import base64, pickle, sys, warnings
warnings.simplefilter("ignore")
function, calls = pickle.loads(base64.b64decode(sys.stdin.buffer.read()))
for args in calls:
    outcome = pickle.dumps(function(*args))
    sys.stdout.write(base64.b64encode(outcome).decode() + "\\n")
    sys.stdout.flush()
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
            stopped and recorded as ``Crashed("hung ...")``.
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
        returned, how = _run_child(function, pending, startup_s + trial_timeout_s * len(pending),
                                   path)
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


def _run_child(function: Callable[..., Any], calls: list[tuple[Any, ...]],
               timeout: float, path: Sequence[str] = ()) -> tuple[list[Any], str]:
    """One child for ``calls``: what it returned, and how it ended when it stopped early."""
    payload = base64.b64encode(pickle.dumps((function, calls)))
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONWARNINGS": "ignore"}
    if path:
        env["PYTHONPATH"] = os.pathsep.join([*path, *filter(None, [env.get("PYTHONPATH")])])
    try:
        child = subprocess.run([sys.executable, "-c", _CHILD], input=payload,
                               capture_output=True, env=env, timeout=timeout)
        stdout, code = child.stdout, child.returncode
        how = _signal_name(-code) if code < 0 else ""
    except subprocess.TimeoutExpired as stopped:
        stdout, code = stopped.stdout or b"", None
        how = "hung and was stopped"
    returned = [pickle.loads(base64.b64decode(line)) for line in stdout.splitlines() if line]
    if code is not None and (code > 0 or code == 0 and len(returned) < len(calls)):
        tail = child.stderr.decode(errors="replace").strip().splitlines()[-8:]
        raise RuntimeError(f"the child process stopped with exit code {code}:\n"
                           + "\n".join(tail))
    return returned, how


def _signal_name(number: int) -> str:
    try:
        return f"crashed ({signal.Signals(number).name})"
    except ValueError:
        return f"crashed (signal {number})"
