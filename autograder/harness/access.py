"""What a paused instruction is about to read or write, and the value, in a few words.

The scheduler records each decision point of a schedule; a step labelled ``read _count=0`` or
``write _count=1`` shows a lost update at a glance, where a line number does not. Values are
read as plain data only (an instance's own ``__dict__``, a dict or list item, the value stack),
so no code of the program under test runs while the scheduler holds the turn.

Each description also names the operation in a form that does not depend on how the answer
spells it (``op``: read, write, acquire, release or call; ``name``: the attribute, or the C
function called): a failing run's steps are compared across answers by it (the failure
signatures of :mod:`autograder.checks.kit.signature`).
"""

from __future__ import annotations

import _thread
import dis
import types
from typing import NamedTuple

from . import frames, primitives

_OP = dis.opmap
_EXTENDED_ARG = _OP["EXTENDED_ARG"]
_PLAIN = (int, float, bool, type(None))
_SHORT_TEXT = 12
#: Callables whose name can be read without running code of the program under test.
_NAMED_CALLABLES = frozenset({types.BuiltinFunctionType, types.MethodDescriptorType,
                              types.WrapperDescriptorType, types.MethodWrapperType,
                              types.FunctionType, types.ClassMethodDescriptorType})
_LOCK_TYPES = frozenset({_thread.LockType, _thread.RLock})
_TAKES = frozenset({"acquire", "acquire_lock", "__enter__"})
_GIVES = frozenset({"release", "release_lock", "__exit__"})


def _argument(code: bytes, offset: int) -> int:
    """The instruction's full argument, including any EXTENDED_ARG prefixes before it."""
    arg, shift, at = code[offset + 1], 8, offset - 2
    while at >= 0 and code[at] == _EXTENDED_ARG:
        arg |= code[at + 1] << shift
        shift, at = shift + 8, at - 2
    return arg


def _plain_text(value: object) -> str | None:
    """``value`` as short text when it is a plain number, bool, None or short string."""
    kind = type(value)
    if kind in _PLAIN:
        return kind.__repr__(value)
    if kind is str and len(value) <= _SHORT_TEXT:
        return str.__repr__(value)
    return None


def _own_attribute(owner: object, name: str) -> object:
    """``owner.name`` from the instance's own ``__dict__``, else :data:`frames.UNKNOWN`."""
    for klass in type(owner).__mro__:
        descriptor = vars(klass).get("__dict__")
        if descriptor is not None:
            if type(descriptor) is not types.GetSetDescriptorType:
                return frames.UNKNOWN
            namespace = descriptor.__get__(owner)
            if type(namespace) is dict:
                return dict.get(namespace, name, frames.UNKNOWN)
            return frames.UNKNOWN
    return frames.UNKNOWN


def _item(container: object, key: object) -> object:
    if type(container) is dict and type(key) in (int, str):
        return dict.get(container, key, frames.UNKNOWN)
    if type(container) is list and type(key) is int and -len(container) <= key < len(container):
        return list.__getitem__(container, key)
    return frames.UNKNOWN


class Access(NamedTuple):
    """One read or write: ``text`` such as ``"write _count=1"``; ``valued`` when it shows the
    value (plain data: the program's state, not an object it walks through on the way).

    ``op`` and ``name`` say what the instruction does whatever the values: ``("read",
    "_count")``, ``("write", "['a']")``, ``("acquire", "")`` and ``("release", "")`` for a
    lock (``with``, ``acquire()``, ``release()``), ``("call", "append")`` for another C
    function; ``("", "")`` for anything else."""

    text: str
    valued: bool
    op: str = ""
    name: str = ""


NOTHING = Access("", False)


def _label(verb: str, name: str, value: object) -> Access:
    text = _plain_text(value) if value is not frames.UNKNOWN else None
    if text is None:
        return Access(f"{verb} {name}", False, verb, name)
    return Access(f"{verb} {name}={text}", True, verb, name)


def _is_lock(value: object) -> bool:
    kind = type(value)
    return kind in _LOCK_TYPES or kind is primitives.OwnedLock


def _call(frame: types.FrameType, count: int) -> Access:
    """What a CALL of ``count`` arguments is about to call: a lock taken or given back, or a
    C function by name (user functions are no decision points: their own steps are)."""
    slot = frames.peek(frame, count + 1)
    if slot is frames.UNKNOWN:
        return NOTHING
    function, receiver = (frames.peek(frame, count), None) if slot is None else \
        (slot, frames.peek(frame, count))
    if type(function) is types.MethodType:
        receiver, function = function.__self__, function.__func__
    elif type(function) in (types.BuiltinFunctionType, types.MethodWrapperType):
        receiver = function.__self__
    if type(function) not in _NAMED_CALLABLES:
        return NOTHING
    name = function.__name__
    if type(name) is not str:
        return NOTHING
    if _is_lock(receiver) and name in _TAKES:
        return Access("", False, "acquire")
    if _is_lock(receiver) and name in _GIVES:
        return Access("", False, "release")
    return Access("", False, "call", name)


def describe(frame: types.FrameType) -> Access:
    """What a frame paused on an opcode is about to read or write (:data:`NOTHING` if neither).

    Attributes, globals, closure variables and dict or list items are named; the value is the
    one about to be read or written, shown when it is plain data. Only valid while ``frame``
    is delivering an ``opcode`` trace event.
    """
    code = frame.f_code
    raw = code.co_code
    offset = frame.f_lasti
    if not 0 <= offset < len(raw) - 1:
        return NOTHING
    opcode = raw[offset]
    if opcode == _OP["LOAD_ATTR"]:
        name = code.co_names[_argument(raw, offset)]
        return _label("read", name, _own_attribute(frames.peek(frame, 0), name))
    if opcode == _OP["STORE_ATTR"]:
        return _label("write", code.co_names[_argument(raw, offset)], frames.peek(frame, 1))
    if opcode == _OP["LOAD_GLOBAL"]:
        name = code.co_names[_argument(raw, offset) >> 1]
        return _label("read", name, dict.get(frame.f_globals, name, frames.UNKNOWN))
    if opcode in (_OP["STORE_GLOBAL"], _OP["STORE_NAME"]):
        return _label("write", code.co_names[_argument(raw, offset)], frames.peek(frame, 0))
    if opcode in (_OP["LOAD_DEREF"], _OP["STORE_DEREF"]):
        name = code._varname_from_oparg(_argument(raw, offset))
        if opcode == _OP["STORE_DEREF"]:
            return _label("write", name, frames.peek(frame, 0))
        return _label("read", name, dict.get(frame.f_locals, name, frames.UNKNOWN))
    if opcode == _OP["BINARY_SUBSCR"]:
        key = frames.peek(frame, 0)
        return _label("read", f"[{_plain_text(key) or '...'}]", _item(frames.peek(frame, 1), key))
    if opcode == _OP["STORE_SUBSCR"]:
        key = frames.peek(frame, 0)
        return _label("write", f"[{_plain_text(key) or '...'}]", frames.peek(frame, 2))
    if opcode == _OP["BEFORE_WITH"]:
        return Access("", False, "acquire") if _is_lock(frames.peek(frame, 0)) else NOTHING
    if opcode == _OP["CALL"]:
        return _call(frame, _argument(raw, offset))
    return NOTHING
