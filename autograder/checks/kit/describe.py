"""Exceptions and threads in a student's terms: one informative line, where a thread is stuck."""

from __future__ import annotations

import re
import threading
import traceback
from collections.abc import Sequence

from autograder.checks.plain import plain
from autograder.harness import tamper

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
#: Where a TensorFlow op error happened, around what it says: ``{{function_node ...}}`` before
#: the text, `` [Op:IteratorGetNext]`` after it.
_OP_PLACE = re.compile(r"^\{\{function_node [^}]*\}\}\s*|\s*\[Op:[^\]]*\]$")
#: Lines of Keras and TensorFlow error texts that say where, not what.
_NOISE = ("Graph execution error", "Detected at node", "File ", "Exception encountered when",
          "Arguments received", "[[", "•")
_LONGEST = 160


def describe_error(error: BaseException) -> str:
    """``"TypeName: the informative line"`` of an exception an answer raised.

    Read as plain data: a class name or text that cannot be read (its ``__str__`` raising, a
    ``str`` subclass) is left out instead of failing the grader. Keras and TensorFlow put the
    informative line deep in long texts (a graph execution error names the node first): that
    line is the one kept, without the op's place (``{{function_node ...}}``, ``[Op:...]``).
    """
    try:
        name = plain(type(error).__name__, "the exception's class", str)
    except BaseException:  # noqa: BLE001 - the student's metaclass; the verdict stands
        name = "an exception"
    try:
        text = plain(str(error), "the exception's text", str)
    except BaseException:  # noqa: BLE001 - the student's __str__; the verdict stands
        return f"{name}: (its text could not be read)"
    lines = [_OP_PLACE.sub("", line.strip()) for line in _ANSI.sub("", text).splitlines()]
    lines = [line for line in lines if line]
    informative = [line for line in lines if not line.startswith(_NOISE)]
    if lines and lines[0].startswith("Graph execution error") and informative:
        line = informative[-1]
    else:
        line = informative[0] if informative else (lines[0] if lines else "")
    return f"{name}: {line[:_LONGEST]}"


def _stack_lines(thread: threading.Thread, depth: int = 4) -> list[str]:
    frame = tamper.current_frames().get(thread.ident or -1)
    if frame is None:
        return []
    frames = traceback.extract_stack(frame)[-depth:]
    return [f"{f.name} ({f.filename.rsplit('/', 1)[-1]}:{f.lineno}) {(f.line or '').strip()}"
            for f in frames]


def describe_threads(threads: Sequence[threading.Thread]) -> str:
    """Each thread's name and where it is now (its innermost frames), one block per thread."""
    blocks = []
    for thread in threads:
        lines = _stack_lines(thread)
        where = "\n".join(f"      {line}" for line in lines) or "      (no stack)"
        blocks.append(f"  thread {thread.name!r}:\n{where}")
    return "\n".join(blocks)
