"""Which code the scheduler controls, and which of its instructions other threads can see.

Three kinds of code:

* **user** code (notebook cells, the student's and the check's files): every instruction that
  touches shared state is a point where the scheduler may switch threads;
* **plumbing**: the standard library's threading, queue, concurrent.futures and contextlib.
  It is traced only to notice when it is about to block on a lock, and it passes control on to
  the user code it calls (a thread's target, a pool's task);
* **library** code (the rest of the standard library, the virtual environment's installed
  packages, the harness: decided by where its file is, see :func:`kind_of_file`): it runs
  atomically, as one step, including anything it calls back.

Switching only before *visible* instructions (reads and writes of attributes, globals, items,
closures, calls) loses no interleaving: instructions that only touch a thread's own locals and
stack commute with everything other threads do.
"""

from __future__ import annotations

import collections
import concurrent.futures._base
import concurrent.futures.thread
import contextlib
import dis
import os
import queue
import site
import sys
import sysconfig
import threading
import types
from collections.abc import Callable
from typing import NamedTuple

from . import tamper

USER, PLUMBING, LIBRARY = 0, 1, 2

# Instruction categories (entries of CodeInfo.ops); None means invisible to other threads.
VISIBLE, CALL, WITH, GLOBAL, ATTR, OPERANDS, CONTAINER, ITERATOR, LOOP = range(9)

_HARNESS_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_PLUMBING_FILES = frozenset(
    path(module.__file__)
    for module in (threading, queue, concurrent.futures.thread, concurrent.futures._base,
                   contextlib)
    for path in (os.path.abspath, os.path.realpath)
)

_INVISIBLE = frozenset(dis.opmap[name] for name in (
    "CACHE", "NOP", "RESUME", "LOAD_FAST", "STORE_FAST", "DELETE_FAST", "LOAD_CONST",
    "PUSH_NULL", "COPY", "SWAP", "KW_NAMES", "PRECALL", "EXTENDED_ARG", "JUMP_FORWARD",
    "BUILD_TUPLE", "BUILD_LIST", "BUILD_SET",
    "BUILD_MAP", "BUILD_CONST_KEY_MAP", "BUILD_STRING", "BUILD_SLICE", "LIST_APPEND",
    "SET_ADD", "MAP_ADD", "LIST_TO_TUPLE", "LOAD_CLOSURE", "MAKE_CELL", "COPY_FREE_VARS",
    "MAKE_FUNCTION", "LOAD_ASSERTION_ERROR", "LOAD_METHOD", "RETURN_VALUE", "POP_TOP",
    "RETURN_GENERATOR", "PUSH_EXC_INFO", "POP_EXCEPT", "CHECK_EXC_MATCH", "RERAISE",
    "IS_OP", "POP_JUMP_FORWARD_IF_NONE", "POP_JUMP_FORWARD_IF_NOT_NONE",
    "POP_JUMP_BACKWARD_IF_NONE", "POP_JUMP_BACKWARD_IF_NOT_NONE", "LOAD_BUILD_CLASS",
) if name in dis.opmap)

# Instructions that read their operands' contents: invisible when the operands are immutable.
_OPERANDS = {name: count for name, count in (
    ("BINARY_OP", 2), ("COMPARE_OP", 2), ("UNARY_NEGATIVE", 1), ("UNARY_NOT", 1),
    ("UNARY_INVERT", 1), ("UNARY_POSITIVE", 1), ("POP_JUMP_FORWARD_IF_TRUE", 1),
    ("POP_JUMP_FORWARD_IF_FALSE", 1), ("POP_JUMP_BACKWARD_IF_TRUE", 1),
    ("POP_JUMP_BACKWARD_IF_FALSE", 1), ("JUMP_IF_TRUE_OR_POP", 1),
    ("JUMP_IF_FALSE_OR_POP", 1), ("FORMAT_VALUE", 1),
) if name in dis.opmap}
# Instructions that read the container on top of the stack (or under the key).
_CONTAINER = {name: depth for name, depth in (
    ("BINARY_SUBSCR", 1), ("UNPACK_SEQUENCE", 0), ("GET_ITER", 0), ("CONTAINS_OP", 0),
) if name in dis.opmap}


# Plumbing lines that may block: they call one of these (or enter a ``with``).
_BLOCKING_NAMES = frozenset({"acquire", "acquire_lock", "__enter__", "_acquire_restore", "get",
                             "waiter", "lock"})


def _library_prefixes() -> tuple[str, ...]:
    """The folders of installed code (the standard library, the virtual environment's packages,
    the harness), each as written and as its real path, with a trailing separator."""
    paths = set(sysconfig.get_paths().values())
    paths.update(site.getsitepackages())
    if site.ENABLE_USER_SITE and site.USER_SITE:
        paths.add(site.USER_SITE)
    for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}:
        version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
        paths.add(os.path.join(prefix, "lib", version))
    stdlib = os.path.dirname(os.path.abspath(os.__file__))
    paths.add(stdlib)
    keep = {p for p in paths if p and os.path.isabs(p) and "include" not in os.path.basename(p)}
    keep.discard(sys.prefix)
    scripts = sysconfig.get_paths().get("scripts")
    keep.discard(scripts)
    data = sysconfig.get_paths().get("data")
    keep.discard(data)
    keep.add(_HARNESS_DIR)
    found = {os.path.join(os.path.normpath(p), "") for p in keep}
    found |= {os.path.join(os.path.realpath(p), "") for p in keep}
    return tuple(sorted(found))


_LIBRARY_PREFIXES = _library_prefixes()


#: Library functions written in Python that change the caller's object with a read, then a
#: separate write, which real threads interleave: a ``Counter``'s ``update``, ``subtract``,
#: ``+=`` and ``-=`` read a count, add and store it, one key at a time (and ``update`` on an
#: empty Counter overwrites with ``dict.update``). Their instructions are decision points, as
#: the user's own are: an answer that counts with them outside a lock loses counts here too.
_INTERLEAVED_LIBRARY = frozenset(id(function.__code__) for function in (
    collections.Counter.update, collections.Counter.subtract, collections.Counter.__iadd__,
    collections.Counter.__isub__))


def library_prefixes() -> tuple[str, ...]:
    """The folders whose code is LIBRARY (see :func:`kind_of_file`), each ending in a separator.

    The grading runner's audit hook refuses graded code any code object that claims a file
    here (compiled, unmarshalled or rebuilt under such a name), so it knows the same list.
    """
    return _LIBRARY_PREFIXES


def kind_of_file(filename: str) -> int:
    """USER, PLUMBING or LIBRARY for a code object's ``co_filename``.

    Decided by where the code came from, never by a word in its name: LIBRARY only for a plain
    absolute path (:func:`~autograder.harness.tamper.is_plain_path`: no ``.`` or ``..``
    component, which a ``sys.path`` entry such as ``/usr/lib/python3.11/../../../tmp/work``
    puts in the name of every module imported through it) inside one of the installed folders
    (:func:`library_prefixes`: the standard library, the virtual environment's packages, the
    harness), and for Python's frozen modules. A file elsewhere is the student's or the check's
    even when a folder on its path is called ``site-packages``: ``/tmp/work/site-packages/x.py``
    is USER. The name is not resolved through links: the folders of installed code are
    read-only, while a link in a writable folder can be pointed elsewhere after the code
    was compiled. (That code under test cannot forge a library file name, by ``compile``,
    ``marshal``, a ``.pyc`` file or ``code.replace``, is the grading runner's audit hook's job.)

    Code that TensorFlow's autograph generates is USER. Autograph writes the converted source
    of a function to a temporary file (``tempfile.NamedTemporaryFile(prefix=
    "__autograph_generated_file", suffix=".py")``, in ``/tmp`` on TF 2.21) and imports it, so
    its code is the student's own function rewritten: were it LIBRARY, an answer could pass
    its racy method through ``tf.autograph.to_graph`` (or name its own file that way) and run
    it atomically in every schedule. The checks that interleave a ``tf.function``
    (``explore(..., callbacks=True)``) run it eagerly, where TensorFlow calls the original
    Python function and autograph generates nothing; elsewhere a converted function runs only
    inside a library call, which is atomic whatever its callbacks' kind.
    """
    if type(filename) is not str:
        return USER
    if filename.startswith("<"):
        return LIBRARY if filename.startswith("<frozen ") else USER
    if not tamper.is_plain_path(filename):
        return USER
    if filename in _PLUMBING_FILES:
        return PLUMBING
    if filename.startswith(_LIBRARY_PREFIXES):
        return LIBRARY
    return USER


class CodeInfo(NamedTuple):
    """What the scheduler needs to know about one code object (immutable: code under test can
    read it through :func:`info`, and must not be able to make its own code invisible).

    Attributes:
        kind: USER, PLUMBING or LIBRARY.
        ops: For each instruction slot (``f_lasti // 2``), None when other threads cannot see
            the instruction, else a tuple whose first item is its category.
        blocking_lines: For plumbing, the lines that may block (a call of ``acquire``, ``get``...).
    """

    kind: int
    ops: tuple[tuple | None, ...]
    blocking_lines: frozenset[int]


def _code_info(code: types.CodeType) -> CodeInfo:
    """Work out a code object's :class:`CodeInfo`."""
    kind = USER if id(code) in _INTERLEAVED_LIBRARY else kind_of_file(code.co_filename)
    if kind == LIBRARY:
        return CodeInfo(kind, (), frozenset())
    ops: list[tuple | None] = [None] * (len(code.co_code) // 2)
    kwnames: tuple = ()
    line_names: dict[int | None, set[str]] = {}
    line = None
    for instruction in dis.get_instructions(code):
        if instruction.starts_line is not None:
            line = instruction.starts_line
        entry = _categorise(instruction, code, kwnames)
        if instruction.opname == "KW_NAMES":
            kwnames = code.co_consts[instruction.arg]
        elif instruction.opname not in ("PRECALL", "EXTENDED_ARG", "CACHE"):
            kwnames = ()
        if instruction.opname in ("LOAD_METHOD", "LOAD_ATTR", "LOAD_GLOBAL", "LOAD_FAST"):
            line_names.setdefault(line, set()).add(instruction.argval)
        elif instruction.opname == "BEFORE_WITH":
            line_names.setdefault(line, set()).add("__enter__")
        if kind == PLUMBING and (entry is None or entry[0] not in (CALL, WITH)):
            continue
        ops[instruction.offset // 2] = entry
    blocking_lines: frozenset[int] = frozenset()
    if kind == PLUMBING:
        blocking_lines = frozenset(
            n for n, names in line_names.items() if n is not None and names & _BLOCKING_NAMES)
    return CodeInfo(kind, tuple(ops), blocking_lines)


def _categorise(instruction: dis.Instruction, code: types.CodeType,
                kwnames: tuple) -> tuple | None:
    opcode, name = instruction.opcode, instruction.opname
    if opcode in _INVISIBLE:
        return None
    if name in ("JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT"):
        return (LOOP,)
    if name == "CALL":
        return (CALL, instruction.arg, kwnames)
    if name == "BEFORE_WITH":
        return (WITH,)
    if name == "LOAD_GLOBAL":
        return (GLOBAL, code.co_names[instruction.arg >> 1])
    if name == "LOAD_ATTR":
        return (ATTR, instruction.argval)
    if name in _OPERANDS:
        return (OPERANDS, _OPERANDS[name])
    if name in _CONTAINER:
        return (CONTAINER, _CONTAINER[name])
    if name == "FOR_ITER":
        return (ITERATOR,)
    return (VISIBLE,)


def _refuse_the_cache() -> None:
    tamper.record_attempt("reaching the race detector's code map (what each code object does)")
    raise PermissionError("the race detector's code map is not available to code under test")


def _lookups() -> tuple[Callable[[types.CodeType], CodeInfo], Callable[[], dict]]:
    """:func:`info`, and the harness's own way to its cache, both :func:`~tamper.opaque`.

    The cache lives only here: code under test that could put its own entries in it (a
    LIBRARY kind, no visible instructions) would take its racy code out of every schedule.
    """
    cache: dict[int, tuple[types.CodeType, CodeInfo]] = {}

    def info(code: types.CodeType) -> CodeInfo:
        """The (cached) :class:`CodeInfo` of a code object."""
        entry = cache.get(id(code))
        if entry is None:
            entry = cache[id(code)] = (code, _code_info(code))
        return entry[1]

    def harness_cache() -> dict[int, tuple[types.CodeType, CodeInfo]]:
        return cache

    return (tamper.opaque(info),
            tamper.for_trusted_callers(harness_cache, (_HARNESS_DIR,), _refuse_the_cache))


info, harness_cache = _lookups()
"""``info(code)``: the cached :class:`CodeInfo` of a code object. ``harness_cache()``: the cache
itself, ``id(code)`` -> ``(code, CodeInfo)``, for the scheduler's inner loop (the harness's
code only). Keyed by identity, not equality: two code objects from different files compare
equal when their bytecode, names and line numbers match, yet one can be user code and the
other library; each entry holds its code object so the id stays unique."""
