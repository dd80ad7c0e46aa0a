"""Read a paused frame's value stack, to see which object an instruction is about to use.

Python has no API for this, so it is read through ``ctypes`` from CPython's frame layout. The
layout is version-specific: it is enabled only for versions whose layout is known and only
after a self-test at import succeeds. Without it the scheduler still works; it just cannot see
which lock a ``with`` statement enters (it then falls back to noticing a stuck thread).
"""

from __future__ import annotations

import ctypes
import sys
import types

_POINTER = ctypes.c_void_p
_INT = ctypes.c_int
_WORD = ctypes.sizeof(_POINTER)

# CPython 3.11: PyFrameObject.f_frame, then _PyInterpreterFrame.f_code / stacktop / localsplus.
_LAYOUTS = {
    (3, 11): {"f_frame": 3 * _WORD, "f_code": 4 * _WORD, "stacktop": 8 * _WORD,
              "localsplus": 9 * _WORD},
}
_layout = _LAYOUTS.get(sys.version_info[:2])


def _interpreter_frame(frame: types.FrameType) -> int | None:
    # Only a real frame has this layout. Anything else handed to peek or poke (an object of
    # the caller's with an ``f_code`` property and pointers of its choosing at the same
    # offsets) would make them read or write whatever address that object names: an object
    # made out of any memory, which no audit event would see (the ctypes calls are ours).
    if type(frame) is not types.FrameType:
        return None
    address = _POINTER.from_address(id(frame) + _layout["f_frame"]).value
    if not address:
        return None
    if _POINTER.from_address(address + _layout["f_code"]).value != id(frame.f_code):
        return None
    return address


def depth(frame: types.FrameType) -> int:
    """How many slots (locals plus value stack) the paused frame holds; -1 when unknown."""
    if _layout is None:
        return -1
    address = _interpreter_frame(frame)
    if address is None:
        return -1
    return _INT.from_address(address + _layout["stacktop"]).value


def peek(frame: types.FrameType, below_top: int) -> object:
    """The value ``below_top`` slots under the top of a paused frame's stack.

    Only valid while the frame is paused in a trace event (its stack pointer is saved then).

    Args:
        frame: A frame currently delivering an ``opcode`` trace event.
        below_top: 0 for the top of the stack, 1 for the one under it, and so on.

    Returns:
        The object, ``None`` for an empty (NULL) slot, or :data:`UNKNOWN` when it cannot be read.
    """
    cell = _stack_slot(frame, below_top)
    if cell is None:
        return UNKNOWN
    item = cell.value
    if not item:
        return None
    return ctypes.cast(item, ctypes.py_object).value


def poke(frame: types.FrameType, below_top: int, value: object) -> bool:
    """Replace the value ``below_top`` slots under the top of a paused frame's stack.

    Used to make a paused call take another argument (a timed ``acquire`` that the schedule
    says gives up gets ``timeout=0``). Same conditions as :func:`peek`.

    Returns:
        True when the slot held an object and now holds ``value``.
    """
    cell = _stack_slot(frame, below_top)
    if cell is None:
        return False
    old = cell.value
    if not old:
        return False
    _INCREF(value)
    cell.value = id(value)
    _DECREF(old)
    return True


def _stack_slot(frame: types.FrameType, below_top: int):
    """The pointer cell of a paused frame's value-stack slot, or None when it cannot be read."""
    if _layout is None:
        return None
    address = _interpreter_frame(frame)
    if address is None:
        return None
    stacktop = _INT.from_address(address + _layout["stacktop"]).value
    code = frame.f_code
    limit = (len(code.co_varnames) + len(code.co_cellvars) + len(code.co_freevars)
             + code.co_stacksize)
    slot = stacktop - 1 - below_top
    if stacktop <= 0 or stacktop > limit or slot < 0:
        return None
    return _POINTER.from_address(address + _layout["localsplus"] + slot * _WORD)


_INCREF = ctypes.PYFUNCTYPE(None, ctypes.py_object)(("Py_IncRef", ctypes.pythonapi))
_DECREF = ctypes.PYFUNCTYPE(None, ctypes.c_void_p)(("Py_DecRef", ctypes.pythonapi))


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = _Unknown()


def _self_test() -> bool:
    if _layout is None:
        return False
    seen: list[object] = []
    marker = object()

    def probe(frame: types.FrameType, event: str, arg: object):
        if frame.f_code is target.__code__:
            frame.f_trace_opcodes = True
            frame.f_trace_lines = False
            return local
        return None

    def local(frame: types.FrameType, event: str, arg: object):
        if event == "opcode" and frame.f_code.co_code[frame.f_lasti] == _BEFORE_WITH:
            seen.append(peek(frame, 0))
        return local

    class Manager:
        def __enter__(self):
            return self

        def __exit__(self, *exc: object) -> None:
            return None

    manager = Manager()

    def target() -> object:
        with manager:
            return marker

    previous = sys.gettrace()
    sys.settrace(probe)
    try:
        target()
    finally:
        sys.settrace(previous)
    return seen == [manager]


_BEFORE_WITH = __import__("dis").opmap.get("BEFORE_WITH", -1)

try:
    AVAILABLE = _self_test()
except Exception:  # any surprise means the layout is not the one we know
    AVAILABLE = False
if not AVAILABLE:
    _layout = None
