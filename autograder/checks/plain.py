"""Values that come back from student code, turned into plain data before a check judges them.

A check compares what the student's code returned with what it should be: ``take()`` returned
7, the choice was ``"threads"``, the measured ratio was 2.4. A returned object decides how
``==``, ``<``, ``+``, ``bool()``, ``in`` and ``sorted`` treat it, so an object whose ``__eq__``
always says True (or an ``int`` subclass that does) would pass any comparison without a
correct answer. Every value a check judges therefore goes through :func:`plain` first: it
becomes an exact ``int``, ``float``, ``str``, ``bool``, ``None``, ``tuple``, ``list``, ``dict``
or a base :class:`numpy.ndarray` of numbers, read through the built-in types' own methods
(never the value's own), or the check fails saying what came back.

Identity checks (``value is expected``) need no conversion: no object can fake them.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

#: Elements read from one container (more is not an answer to any exercise here).
MAX_ITEMS = 1_000_000

_NUMBERS = (int, float)
_NUMPY_SCALARS = frozenset(
    np.dtype(code).type for code in ("bool", "int8", "int16", "int32", "int64", "uint8",
                                     "uint16", "uint32", "uint64", "float16", "float32",
                                     "float64", "longlong", "ulonglong", "longdouble"))
_ARRAY_KINDS = frozenset("biuf")


class NotPlainData(AssertionError):
    """A value from student code is not the plain data the exercise asks for."""


def plain(value: Any, what: str, kind: type | tuple[type, ...] | None = None) -> Any:
    """``value`` as plain data, read without running any of its own methods where possible.

    Args:
        value: What the student's code returned.
        what: How the message names it, e.g. ``"take()"`` or ``"SafeCounter.take()"``.
        kind: The type(s) the exercise asks for, checked after conversion: ``int`` accepts
            bool and NumPy integers; ``float`` accepts ints and NumPy numbers (as floats);
            ``np.ndarray`` accepts any array-like of numbers. None: any plain data.

    Returns:
        An exact built-in value (containers converted element by element) or a base ndarray.

    Raises:
        NotPlainData: (an AssertionError) naming ``what`` and the type that came back.
    """
    kinds = kind if isinstance(kind, tuple) else (kind,) if kind is not None else ()
    if np.ndarray in kinds:
        return plain_array(value, what)
    if float in kinds and int not in kinds:
        number = _number(value)
        if number is not None:
            return float(number)
    converted = _convert(value, what, depth=0)
    if kinds and not _is_kind(converted, kinds):
        raise NotPlainData(f"{what} returned {_type_name(value)} {_safe_repr(converted)}; "
                           f"expected {' or '.join(_kind_name(k) for k in kinds)}")
    return converted


def plain_array(value: Any, what: str) -> np.ndarray:
    """``value`` as a base ndarray of booleans or numbers (tensors and lists of numbers too)."""
    try:
        array = np.asarray(value)
    except Exception as error:  # noqa: BLE001 - reported to the student
        raise NotPlainData(f"{what} returned {_type_name(value)}, which is not an array of "
                           f"numbers ({type(error).__name__}: {error})") from None
    if type(array) is not np.ndarray:
        array = np.array(array, subok=False)
    if array.dtype.kind not in _ARRAY_KINDS:
        raise NotPlainData(f"{what} returned {_type_name(value)} holding {array.dtype} "
                           "values; expected numbers")
    return array


def _number(value: Any) -> int | float | None:
    """A number read through the built-in type's own slot, or None when ``value`` is none."""
    if _is(value, int):
        return int.__int__(value)
    if _is(value, float):
        return float.__float__(value)
    if type(value) in _NUMPY_SCALARS:
        return value.item()
    return None


def _convert(value: Any, what: str, depth: int) -> Any:
    if depth > 20:
        raise NotPlainData(f"{what} returned data nested more than 20 levels deep")
    if value is None or type(value) in (bool, int, float, str):
        return value
    number = _number(value)
    if number is not None:
        return bool(number) if type(value) is np.bool_ else number
    if _is(value, str):
        return str.__str__(value)
    if _is(value, bytes):
        return bytes(memoryview(value))
    if _is(value, np.ndarray):
        return plain_array(value, what)
    if _is(value, dict):
        items = itertools.islice(dict.items(value), MAX_ITEMS)
        return {_convert(k, what, depth + 1): _convert(v, what, depth + 1) for k, v in items}
    if _is(value, (list, tuple)):
        items = itertools.islice(list.__iter__(value) if _is(value, list)
                                 else tuple.__iter__(value), MAX_ITEMS)
        converted = [_convert(item, what, depth + 1) for item in items]
        return converted if _is(value, list) else tuple(converted)
    raise NotPlainData(f"{what} returned {_type_name(value)}; expected plain data (a number, "
                       "a string, None, or a list, tuple or dict of them)")


def _is(value: Any, cls: type | tuple[type, ...]) -> bool:
    """``isinstance`` by the value's real type (a faked ``__class__`` does not count)."""
    return issubclass(type(value), cls)


def _is_kind(value: Any, kinds: tuple[type, ...]) -> bool:
    for kind in kinds:
        if kind is None and value is None:
            return True
        if kind is float and type(value) in (int, float):
            return True
        if kind is int and type(value) is int:
            return True
        if kind is not None and type(value) is kind:
            return True
    return False


def _kind_name(kind: Any) -> str:
    return "None" if kind is None else getattr(kind, "__name__", str(kind))


def _type_name(value: Any) -> str:
    return type.__getattribute__(type(value), "__name__")


def _safe_repr(value: Any) -> str:
    text = repr(value)  # plain data only here: its repr runs no student code
    return text if len(text) <= 80 else text[:77] + "..."


def exception_line(error: BaseException) -> str:
    """``"TypeName: first line of its text"`` of an exception student code raised, read as
    plain data: a class name or text that cannot be read (its ``__str__`` raising, a str
    subclass, an empty message) is left out instead of failing the grader."""
    try:
        name = plain(type(error).__name__, "the exception's class", str)
    except BaseException:  # noqa: BLE001 - the student's metaclass; the verdict stands
        name = "an exception"
    try:
        text = plain(str(error), "the exception's text", str).strip().splitlines()
    except BaseException:  # noqa: BLE001 - the student's __str__; the verdict stands
        text = ["(its text could not be read)"]
    return f"{name}: {text[0][:160] if text else ''}"
