"""Plain-language pieces shared by the engines' messages."""

from __future__ import annotations

import os
import traceback
import types

from . import tamper

_HARNESS_DIR = os.path.dirname(os.path.abspath(__file__))


def exception_line(error: BaseException) -> str:
    """``TypeName: message`` on one line."""
    text = str(error).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(error).__name__}: {first}" if first else type(error).__name__


def check_failure(outcome: object) -> str:
    """What a failing check said, e.g. the AssertionError text (expected vs seen)."""
    if isinstance(outcome, BaseException):
        text = str(outcome).strip()
        return text or "the check's assertion failed (it gave no message)"
    return "the check returned False"


def place_name(filename: str) -> str:
    """How the student knows a file: ``In [7]`` for a notebook cell, else the file's name.

    IPython compiles each cell into a temporary file (``/tmp/ipykernel_1/3628728566.py``); its
    compiler remembers which execution count each of those files holds.
    """
    try:
        from IPython import get_ipython
    except ImportError:
        get_ipython = None
    shell = get_ipython() if get_ipython else None
    numbers = getattr(getattr(shell, "compile", None), "_filename_map", None) or {}
    number = numbers.get(filename)
    return f"In [{number}]" if number is not None else os.path.basename(filename)


def _user_frames(frame: types.FrameType | None) -> list[traceback.FrameSummary]:
    entries = traceback.extract_stack(frame)
    return [traceback.FrameSummary(place_name(e.filename), e.lineno, e.name, line=e.line)
            for e in entries if not e.filename.startswith(_HARNESS_DIR)]


def stack_text(frame: types.FrameType | None, limit: int = 8) -> str:
    """A thread's stack without the harness's own frames, innermost last."""
    entries = _user_frames(frame)[-limit:]
    if not entries:
        return "      (no Python frames)"
    return "".join("      " + line for line in traceback.format_list(entries)).rstrip()


def error_location(error: BaseException) -> str:
    """Where an exception was raised, outside the harness: ``file, line N, in f``."""
    entries = [e for e in traceback.extract_tb(error.__traceback__)
               if not e.filename.startswith(_HARNESS_DIR)]
    if not entries:
        return ""
    last = entries[-1]
    return f'{place_name(last.filename)}, line {last.lineno}, in {last.name}'


def stacks_of(idents: dict[int, str]) -> str:
    """The current stacks of the named threads (ident -> name)."""
    frames = tamper.current_frames()
    blocks = []
    for ident, name in idents.items():
        frame = frames.get(ident)
        blocks.append(f"    {name}:\n{stack_text(frame)}")
    return "\n".join(blocks)


def plural(count: int, word: str) -> str:
    """``1 trial``, ``2 trials``."""
    return f"{count} {word}{'' if count == 1 else 's'}"
