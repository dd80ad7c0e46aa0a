"""CPython's own object headers, read through ctypes: dictionary versions and frozen classes.

Python raises no audit event when a module's dictionary is written straight into, or when a
class attribute is set. :func:`dict_version` reads the version CPython bumps on every write to a
dictionary, so a write put back before anyone looked is still seen; :func:`freeze_class` sets
``Py_TPFLAGS_IMMUTABLETYPE`` on a grader class, so an attribute write is refused as it is tried.
Each works only after a self-test on this interpreter; where it fails, the caller falls back to
comparing values after the cell.
"""

from __future__ import annotations

import ctypes
import sys


class _DictHeader(ctypes.Structure):
    # CPython 3.11's PyDictObject: PyObject_HEAD, ma_used, ma_version_tag (PEP 509).
    _fields_ = [("ob_refcnt", ctypes.c_ssize_t), ("ob_type", ctypes.c_void_p),
                ("ma_used", ctypes.c_ssize_t), ("ma_version_tag", ctypes.c_uint64)]


def _dict_versions_work() -> bool:
    if sys.version_info[:2] != (3, 11):
        return False
    probe = {"name": 1}
    first = _DictHeader.from_address(id(probe)).ma_version_tag
    probe["name"] = 2
    probe["name"] = 1
    second = _DictHeader.from_address(id(probe)).ma_version_tag
    _ = probe["name"]
    return second != first and _DictHeader.from_address(id(probe)).ma_version_tag == second


_DICT_VERSIONS = _dict_versions_work()


def dict_version(namespace: dict) -> int | None:
    """The dictionary's PEP 509 version: it changes on every write, even one that puts the
    same value back, and never on a read. None where this Python's layout is not known.

    Python raises no audit event for a write into a module's dictionary (``vars(module)``,
    ``types.ModuleType.__setattr__``, a function's ``__globals__``); comparing versions
    after each test cell finds one that was undone before the cell ended.
    """
    if not _DICT_VERSIONS or type(namespace) is not dict:
        return None
    return _DictHeader.from_address(id(namespace)).ma_version_tag


#: CPython's Py_TPFLAGS_IMMUTABLETYPE (3.10+) and Py_TPFLAGS_HEAPTYPE.
_IMMUTABLE_TYPE = 1 << 8
_HEAP_TYPE = 1 << 9


class _TypeHeader(ctypes.Structure):
    # PyTypeObject up to tp_flags: the same layout from CPython 3.8 to 3.13.
    _fields_ = [("ob_refcnt", ctypes.c_ssize_t), ("ob_type", ctypes.c_void_p),
                ("ob_size", ctypes.c_ssize_t), ("tp_name", ctypes.c_void_p),
                ("tp_basicsize", ctypes.c_ssize_t), ("tp_itemsize", ctypes.c_ssize_t),
                ("tp_dealloc", ctypes.c_void_p), ("tp_vectorcall_offset", ctypes.c_ssize_t),
                ("tp_getattr", ctypes.c_void_p), ("tp_setattr", ctypes.c_void_p),
                ("tp_as_async", ctypes.c_void_p), ("tp_repr", ctypes.c_void_p),
                ("tp_as_number", ctypes.c_void_p), ("tp_as_sequence", ctypes.c_void_p),
                ("tp_as_mapping", ctypes.c_void_p), ("tp_hash", ctypes.c_void_p),
                ("tp_call", ctypes.c_void_p), ("tp_str", ctypes.c_void_p),
                ("tp_getattro", ctypes.c_void_p), ("tp_setattro", ctypes.c_void_p),
                ("tp_as_buffer", ctypes.c_void_p), ("tp_flags", ctypes.c_ulong)]


def _mark_immutable(cls: type) -> bool:
    header = _TypeHeader.from_address(id(cls))
    if header.tp_flags != cls.__flags__ or not cls.__flags__ & _HEAP_TYPE:
        return False
    header.tp_flags |= _IMMUTABLE_TYPE
    return cls.__flags__ & _IMMUTABLE_TYPE != 0


def _freezing_works() -> bool:
    if not (3, 10) <= sys.version_info[:2] <= (3, 13):
        return False
    probe = type("Probe", (), {"name": 1})
    if not _mark_immutable(probe):
        return False
    try:
        probe.name = 2
    except TypeError:
        return probe.name == 1 and type("Child", (probe,), {}).__flags__ & _IMMUTABLE_TYPE == 0
    return False


_FREEZING = _freezing_works()


def freeze_class(cls: type) -> bool:
    """Make ``cls`` refuse every later attribute assignment and deletion, as built-in types do.

    Python raises no audit event for ``Class.attr = value`` (nor for ``type.__setattr__``),
    so an answer could swap a grader class's method or property while a check runs and put
    it back before the check returns: nothing would be left to find. Marked immutable (the
    flag CPython gives its static types), the class refuses the write itself with a
    ``TypeError``, by whatever route it comes. Subclasses stay mutable (the flag is not
    inherited), and only ``ctypes``, which the audit hook refuses to notebooks, could clear it.

    Returns:
        Whether the class is frozen (False for a built-in type, or where this Python's layout
        is not known: then only :func:`integrity_check` watches it, after each test cell).
    """
    return _FREEZING and _mark_immutable(cls)
