"""Inside the grading sandbox: what graded code may not touch, and noticing when it tried.

Student code runs in the same process as the checks that grade it (the checks call it from
their own threads), so the runner (:mod:`autograder.pipeline.runner`) protects the checks in
two ways before the first student cell runs:

- :func:`integrity_check` remembers every name the graders depend on (the ``autograder`` modules,
  their classes and functions' code, the threading primitives, clocks and trace hooks, the
  builtins, ``sys.modules``) and names each one that was replaced since. The runner asks before
  and after every test cell; a replaced name makes that test fail as ``tampered``.
- :func:`make_audit_hook` builds a PEP 578 audit hook (it cannot be removed once added) that
  refuses the introspection escape hatches to code compiled from the notebook: frame objects
  (``sys._getframe``, ``inspect.currentframe``, ``tb_frame``, ``gi_frame``...), object-graph
  walks (``gc.get_objects``/``get_referrers``/``get_referents``), ``ctypes``, trace and profile
  hooks other than the harness's, audit hooks of its own, new code objects, code compiled under
  the grader's file names, writes to the grader's functions, and process memory
  (``/proc/*/mem``). A refused call raises :class:`TamperingError` in the student's code and is
  recorded, so the exercise scores 0 as ``tampered`` even when the student catches the error.
  The hook takes every reference it uses when it is made (default arguments), so rebinding a
  module global or a builtin later does not change its judgement.

:func:`seal_grader_modules` also refuses, as they happen, assignments to the grader's module
names and to the attributes of every class a grader module defines.

What this does not close (stated in the README's threat model): a path to the runner's frames
that no audit event covers, or a library class's attribute (or a grader object's) replaced
while a check runs and restored before the check returns. The OS sandbox, not this module,
keeps other students' grades and files out of reach.
"""

from __future__ import annotations

import _thread
import builtins
import ctypes
import os
import pathlib
import re
import sys
import sysconfig
import types
from collections.abc import Callable, Iterable

from autograder.pipeline.kernel_guard import PROTECTED, TamperingError

_FRAME_EVENTS = frozenset({"sys._getframe", "sys._current_frames"})
_FRAME_ATTRIBUTES = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back"})
_FUNCTION_FIELDS = frozenset({"__code__", "__defaults__", "__kwdefaults__"})
_DEFAULT_FIELDS = frozenset({"__defaults__", "__kwdefaults__"})
_BLOCKED_MODULES = frozenset({"ctypes", "_ctypes", "cffi", "_cffi_backend", "_testcapi",
                              "_testinternalcapi", "_xxsubinterpreters", "_signal"})
_STUDENT_REFUSED = frozenset({"gc.get_objects", "gc.get_referrers", "gc.get_referents",
                              "code.__new__", "sys.addaudithook", "sys.settrace",
                              "sys.setprofile"})
_WATCHED = (_FRAME_EVENTS | _STUDENT_REFUSED
            | frozenset({"open", "import", "object.__setattr__", "compile", "os.symlink",
                         "os.rename", "os.link", "os.chdir"}))
#: Events that name a path (first argument) or two (the first two), judged by
#: :func:`make_audit_hook` against the checks' private folders.
_PATH_EVENTS = frozenset({"open", "os.symlink", "os.rename", "os.link", "os.chdir"})
_TWO_PATH_EVENTS = frozenset({"os.symlink", "os.rename", "os.link"})
#: Library modules (by top-level package) whose own globals are rebound while code runs, by
#: the harness (``threading._trace_hook``) or the interpreter (``sys.stdout``, ``sys.last_*``):
#: their dictionaries' versions say nothing. Every other library module the grader names is
#: watched for a write that left no trace (a function swapped while a check ran, then put
#: back); a write that leaves a new value (a lazy import filling a name) is not one.
_REBOUND_AT_RUN_TIME = frozenset({"sys", "os", "posixpath", "threading", "_thread", "signal",
                                  "_signal", "site", "linecache", "multiprocessing",
                                  "concurrent", "io", "builtins", "ctypes", "subprocess",
                                  "tempfile"})
#: Class attributes the standard library adds to classes at run time (``copyreg`` when an
#: instance is pickled): not a change a notebook made.
_ADDED_BY_LIBRARIES = frozenset({"__slotnames__"})
#: Grader module globals that fill as checks run (the harness's records of running threads
#: and refused attempts): their contents may change, so only their identity is remembered.
#: Every other dict, list or set in a grader module must keep its contents; the checks keep
#: their caches of reference outputs and models out of reach (``autograder.checks.cache``).
_GRADER_CACHES = frozenset({
    "autograder.harness.scheduler._ACTIVE_THREADS", "autograder.harness.tamper._attempts",
})
#: Where a ``pathlib`` path keeps its text once it has been turned into a file name.
_PATH_TEXT_SLOT = vars(pathlib.PurePath).get("_str")
_MEMORY_FILE = re.compile(r"(^|/)(mem|pagemap)$")

# Library functions that return frames to their caller: a frame event they raise is judged by
# who called them.
_FRAME_RETURNING = (
    ("inspect", "currentframe"), ("inspect", "stack"), ("inspect", "trace"),
    ("inspect", "getouterframes"), ("inspect", "getinnerframes"),
    ("traceback", "walk_stack"), ("traceback", "walk_tb"), ("logging", "currentframe"),
    ("tensorflow.python.util.tf_inspect", "currentframe"),
    ("tensorflow.python.util.tf_inspect", "stack"),
)


def trusted_roots() -> tuple[str, ...]:
    """Folders whose code is the grader's or an installed library's (not the student's)."""
    paths = sysconfig.get_paths()
    roots = {paths["stdlib"], paths["platstdlib"], paths["purelib"], paths["platlib"],
             os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}
    roots.update(p for p in sys.path if p.endswith(("site-packages", "dist-packages")))
    roots |= {os.path.realpath(r) for r in roots}
    return tuple(sorted(os.path.join(r, "") for r in roots))


def integrity_check(modules: dict[str, Iterable[str] | None]) -> Callable[[], list[str]]:
    """Remember the grader's names now; return a function naming each one replaced since.

    The returned function keeps what it remembers in its closure and takes every reference it
    uses as a default argument, so neither a rebound global nor a patched class can change its
    answer. A remembered class that gained an attribute (a method shadowing an inherited one,
    such as ``random.Random.random``) counts as replaced too.

    Args:
        modules: Module name -> the names to remember in it (None: every name, with every
            class the module defines); classes among the names are remembered with their
            attributes. The builtins and the modules' places in ``sys.modules`` are too.
    """
    entries: list[tuple[str, object, str, object]] = []
    functions: list[tuple[str, types.FunctionType, types.CodeType, object, object]] = []
    contents: list[tuple[str, object, object]] = []
    remembered: list[tuple[str, object, type]] = []
    shapes: list[tuple[str, object, frozenset[str]]] = []
    versions: list[list] = []  # [module name, its dict, the dict's version, its keys]
    libraries: list[list] = []  # [module name, its dict, the dict's version, its items]
    seen: set[int] = set()

    def remember(label: str, namespace, keys: Iterable[str] | None, *, classes: bool) -> None:
        if id(namespace) in seen:
            return
        seen.add(id(namespace))
        for key in list(namespace) if keys is None else keys:
            if key not in namespace:
                continue
            value = namespace[key]
            entries.append((f"{label}.{key}", namespace, key, value))
            if isinstance(value, types.FunctionType):
                functions.append((f"{label}.{key}", value, value.__code__, value.__defaults__,
                                  _contents(value.__kwdefaults__)))
            if keys is None and type(value) in (dict, list, set) and not key.startswith("__") \
                    and f"{label}.{key}" not in _GRADER_CACHES:
                contents.append((f"{label}.{key}", value, _contents(value)))
            if classes and isinstance(value, type) and not _defines_no_functions(value):
                remember(f"{label}.{key}", value.__dict__, None, classes=False)
                shapes.append((f"{label}.{key}", value.__dict__, frozenset(value.__dict__)))

    for name, keys in modules.items():
        module = sys.modules.get(name)
        if module is not None:
            remembered.append((name, module, type(module)))
            remember(name, module.__dict__, keys, classes=True)
            version = dict_version(module.__dict__)
            if version is None:
                continue
            if keys is None and name.startswith("autograder"):
                versions.append([name, module.__dict__, version, frozenset(module.__dict__)])
            elif keys is not None and name.partition(".")[0] not in _REBOUND_AT_RUN_TIME:
                libraries.append([name, module.__dict__, version, dict(module.__dict__)])
    remember("builtins", builtins.__dict__, None, classes=False)

    def problems(_missing: object = object(), _modules: dict = sys.modules,
                 _entries=tuple(entries), _functions=tuple(functions),
                 _remembered=tuple(remembered), _shapes=tuple(shapes),
                 _contents_now=_contents, _kept=tuple(contents), _type=type,
                 _added_legitimately=_ADDED_BY_LIBRARIES, _set=set,
                 _versions=tuple(versions), _version=dict_version,
                 _added_in_passing=_added_in_passing, _libraries=tuple(libraries),
                 _dict=dict) -> list[str]:
        found = []
        for watched in _libraries:
            name, namespace, version, items = watched
            now = _version(namespace)
            if now == version:
                continue
            current = _dict(namespace)
            rebound = [key for key, value in current.items()
                       if items.get(key, _missing) is not value]
            watched[2], watched[3] = now, current
            if not rebound and len(current) == len(items):  # a write that left no trace
                found.append(f"a name of {name} was written while graded code ran (and "
                             "perhaps put back)")
        for watched in _versions:
            name, namespace, version, keys = watched
            now = _version(namespace)
            if now == version:
                continue
            added = _set(namespace) - keys
            foreign = sorted(key for key in added
                             if not _added_in_passing(name, key, namespace[key]))
            if foreign:  # a global of its own can shadow a builtin the grader calls
                found.extend(f"{name}.{key} was added" for key in foreign)
                continue
            watched[2], watched[3] = now, keys | added
            if not added:  # reported once, for the cell it happened in
                found.append(f"a name of {name} was written while graded code ran (and "
                             "perhaps put back)")
        for label, namespace, keys in _shapes:
            added = _set(namespace) - keys - _added_legitimately
            found.extend(f"{label}.{key} was added" for key in sorted(added))
        for name, module, kind in _remembered:
            if _modules.get(name) is not module:
                found.append(f"the module {name} was replaced in sys.modules")
            elif _type(module) is not kind:
                found.append(f"the type of the module {name} was replaced")
        for label, namespace, key, original in _entries:
            if namespace.get(key, _missing) is not original:
                found.append(f"{label} was replaced")
        for label, function, code, defaults, kwdefaults in _functions:
            if function.__code__ is not code:
                found.append(f"the code of {label} was replaced")
            if function.__defaults__ is not defaults \
                    or _contents_now(function.__kwdefaults__) != kwdefaults:
                found.append(f"the default arguments of {label} were changed")
        for label, container, snapshot in _kept:
            if _contents_now(container) != snapshot:
                found.append(f"the contents of {label} were changed")
        return found

    return problems


def _added_in_passing(module: str, key: str, value: object,
                      _namespace=types.ModuleType.__dict__["__dict__"]) -> bool:
    """A name Python itself adds to a module while it runs: the warnings registry, or a
    submodule imported for the first time (its name read from its own dictionary, so no code
    of the value's runs)."""
    if key == "__warningregistry__":
        return True
    if not issubclass(type(value), types.ModuleType):
        return False
    names = _namespace.__get__(value)
    return type(names) is dict and dict.get(names, "__name__") == f"{module}.{key}"


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


def _contents(container: object, _type=type, _id=id) -> object:
    """A container's contents by identity (what a later comparison cannot be fooled about)."""
    if container is None:
        return None
    if _type(container) is dict:
        return tuple((_id(k), _id(v)) for k, v in dict.items(container))
    if _type(container) is list:
        return tuple(_id(v) for v in list.__iter__(container))
    return frozenset(_id(v) for v in set.__iter__(container))


def make_audit_hook(roots: tuple[str, ...], trusted_files: Iterable[str],
                    attempts: list[str]) -> Callable[[str, tuple], None]:
    """The audit hook that refuses the escape hatches to graded code.

    Args:
        roots: Folders of trusted code (see :func:`trusted_roots`).
        trusted_files: Code file names of the grader's own cells (the test cells).
        attempts: Where each refused attempt is described.

    Returns:
        A function for ``sys.addaudithook``.
    """
    from autograder.harness.tamper import OPAQUE_CODE, SCRATCH_PREFIX

    pass_through = frozenset(_frame_returning_codes())
    grader_root = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "")
    library = os.path.dirname(os.__file__)
    relays = tuple(os.path.join(library, name, "") for name in ("ctypes", "importlib"))
    trusted_files = frozenset(trusted_files)
    busy: set[int] = set()
    import threading

    thread_globals = vars(threading)

    def trusted(filename: str, _roots=roots, _files=trusted_files) -> bool:
        return (filename.startswith(_roots) or filename in _files
                or filename.startswith("<frozen "))

    def asker(frame, _relays=relays, _pass=pass_through):
        """The frame that asked: library functions that only relay the request are skipped."""
        while frame is not None and (frame.f_code in _pass
                                     or frame.f_code.co_filename.startswith(_relays)
                                     or frame.f_code.co_filename.startswith("<frozen importlib")):
            frame = frame.f_back
        return frame

    def origin(frame, _grader=grader_root, _files=trusted_files):
        """The nearest frame that is the grader's or the student's: library frames (``inspect``,
        ``copy``...) only relay what that frame asked for."""
        while frame is not None and trusted(frame.f_code.co_filename) \
                and not frame.f_code.co_filename.startswith(_grader) \
                and frame.f_code.co_filename not in _files:
            frame = frame.f_back
        return frame

    def code_of(function, _type=type, _function=types.FunctionType, _method=types.MethodType):
        """A Python function's (or bound method's) code, read without running its code."""
        if _type(function) is _method:
            function = function.__func__
        return function.__code__ if _type(function) is _function else None

    def text(value, _type=type, _str=str, _bytes=bytes):
        """``value`` as plain text when it is a string or bytes, else None; runs no code of
        ``value``'s own (no ``__str__``, ``__fspath__`` or ``__class__`` is consulted)."""
        if _type(value) is _str:
            return value
        try:
            return _str.__str__(value)
        except TypeError:
            pass
        try:
            return _bytes.decode(value, "utf-8", "replace")
        except TypeError:
            return None

    def path_text(value, _type=type, _paths=(pathlib.PosixPath, pathlib.PurePosixPath),
                  _cached=_PATH_TEXT_SLOT, _entry=os.DirEntry):
        """Like :func:`text`, and the text of an ``os.DirEntry`` or a ``pathlib`` path too: the
        text the path cached when the call that raised the event turned it into a file name
        (read from its slot, so no method of the path's runs)."""
        found = text(value)
        if found is not None:
            return found
        if _type(value) is _entry:
            return text(value.path)
        if _type(value) not in _paths or _type(_cached) is not types.MemberDescriptorType:
            return None
        try:
            return text(_cached.__get__(value))
        except AttributeError:
            return None

    # The hook runs no code of the objects it is handed: exact type checks and C methods only,
    # so a student's object cannot run while the hook is busy (and so not watching).
    def judge(event: str, args: tuple, frame, _type=type, _int=int,
              _function=types.FunctionType, _thread_globals=thread_globals,
              _gettrace=sys.gettrace, _getprofile=sys.getprofile,
              _memory=_MEMORY_FILE, _opaque=OPAQUE_CODE,
              _scratch=SCRATCH_PREFIX) -> str | None:
        caller_trusted = trusted(frame.f_code.co_filename)
        if event in _PATH_EVENTS:
            for named in args[:2] if event in _TWO_PATH_EVENTS else args[:1]:
                path = path_text(named)
                unnamed = path is None and _type(named) is not _int and event != "open"
                if unnamed or (path is not None and _scratch in path):
                    who = origin(frame)
                    if who is not None and not trusted(who.f_code.co_filename):
                        if path is None:
                            return "naming a file through an object that is not a path string"
                        return f"touching the grader's own records ({path})"
            if event not in ("open", "os.symlink"):
                return None
            path = text(args[0])
            if path is None:
                who = asker(frame)
                if _type(args[0]) is _int or (who is not None
                                               and trusted(who.f_code.co_filename)):
                    return None
                return "opening a file through an object that is not a path string"
            if _memory.search(path) or (event == "os.symlink" and "/proc" in path):
                return f"opening {path}" if event == "open" else f"a link to {path}"
            return None
        if event == "object.__getattr__" and args[1] in _DEFAULT_FIELDS:
            target = args[0]
            if _type(target) is _function and target.__code__ is _opaque:
                who = origin(frame)
                if who is not None and not trusted(who.f_code.co_filename):
                    return f"reading the grader's hidden references (.{args[1]} of a hook)"
            return None
        if event in _FRAME_EVENTS or event == "object.__getattr__" \
                or event.startswith("ctypes.") or event == "import":
            if event == "import" and args[0] not in _BLOCKED_MODULES:
                return None
            who = asker(frame)
            if who is None or trusted(who.f_code.co_filename):
                return None
            if event == "object.__getattr__":
                return f"reading .{args[1]}"
            return f"import {args[0]}" if event == "import" else event
        if event == "object.__setattr__":
            target, name = args[0], args[1]
            if (not caller_trusted and name in _FUNCTION_FIELDS
                    and _type(target) is _function
                    and trusted(target.__code__.co_filename)):
                return f"changing {target.__qualname__}.{name}"
            return None
        if event == "compile":
            filename = text(args[1]) or ""
            if not caller_trusted and trusted(filename):
                return f"compiling code under the grader's file name {filename}"
            return None
        if event in ("sys.settrace", "sys.setprofile"):
            if not caller_trusted:
                # CPython itself clears a trace function that raised, with the traced frame
                # innermost: allowed only while the function being cleared is the harness's.
                code = code_of(_gettrace() if event == "sys.settrace" else _getprofile())
                if code is None or not trusted(code.co_filename):
                    return event
            for name in ("_trace_hook", "_profile_hook"):
                hook = _thread_globals.get(name)
                code = code_of(hook)
                if hook is not None and (code is None or not trusted(code.co_filename)):
                    return f"a thread {name.strip('_').replace('_', ' ')} of graded code"
            return None
        if not caller_trusted:  # object walks, new code objects, audit hooks of its own
            return event
        return None

    def hook(event: str, args: tuple, _watched=_WATCHED,
             _frame_attributes=_FRAME_ATTRIBUTES | _DEFAULT_FIELDS,
             _ident=_thread.get_ident, _getframe=sys._getframe, _attempts=attempts,
             _error=TamperingError) -> None:
        if event not in _watched and not event.startswith("ctypes."):
            if event != "object.__getattr__" or args[1] not in _frame_attributes:
                return
        me = _ident()
        if me in busy:
            return
        busy.add(me)
        try:
            refusal = judge(event, args, _getframe(1))
        finally:
            busy.discard(me)
        if refusal:
            _attempts.append(refusal)
            raise _error(f"{refusal} is not allowed in graded code: it can reach or change "
                         "the grader")

    return hook


def _frame_returning_codes() -> list[types.CodeType]:
    codes = []
    for module_name, name in _FRAME_RETURNING:
        module = sys.modules.get(module_name)
        code = getattr(getattr(module, name, None), "__code__", None)
        if code is not None:
            codes.append(code)
    return codes


def _defines_no_functions(cls: type) -> bool:
    return cls.__module__ == "builtins" or not any(
        isinstance(v, types.FunctionType) for v in vars(cls).values())


def _grader_module_names() -> list[str]:
    return [name for name in sys.modules
            if name.startswith(("autograder.harness", "autograder.checks", "autograder.pipeline"))
            or name in ("autograder", "autograder.lesson")]


def seal_grader_modules() -> None:
    """Refuse, from now on, ``module.name = value`` on every name of the grader's modules.

    :func:`integrity_check` finds a replaced name only after the test cell; an answer that
    swapped a check's helper while the check ran and swapped it back before the check
    returned would slip past it. Assignments through the module are refused as they happen
    (and recorded: see :func:`autograder.harness.tamper.record_attempt`). Writes straight
    into a module's dictionary raise no audit event and are still checked only afterwards.
    Every class a grader module defines is frozen (:func:`freeze_class`): a swapped method
    or property is refused as it is tried.
    """
    from autograder.harness import tamper

    for name in _grader_module_names():
        module = sys.modules[name]
        if isinstance(module, types.ModuleType):
            tamper.seal(module, list(vars(module)))
            for value in list(vars(module).values()):
                if isinstance(value, type) and value.__module__ == name:
                    freeze_class(value)


def seal_library_names(protected: dict[str, tuple[str, ...] | None]) -> None:
    """Refuse, from now on, ``module.name = value`` on the library names the grader calls.

    ``numpy.allclose = lambda *a, **k: True`` while a check runs, put back before the test
    cell ends, would leave nothing for :func:`integrity_check` to find. Each plain library
    module in ``protected`` (as :func:`protected_modules` gives it) refuses and records an
    assignment to, or deletion of, its remembered names, as the grader's own modules do.
    Modules whose globals are rebound at run time (:data:`_REBOUND_AT_RUN_TIME`), or that
    already have a class of their own (the kernel guard's, a lazy loader), are left alone; a
    write straight into a module's dictionary is found afterwards by the dictionary's version.
    """
    from autograder.harness import tamper

    for name, keys in protected.items():
        module = sys.modules.get(name)
        if keys is None or type(module) is not types.ModuleType \
                or name.partition(".")[0] in _REBOUND_AT_RUN_TIME:
            continue
        tamper.seal(module, [key for key in keys if key in vars(module)])


def protected_modules() -> dict[str, tuple[str, ...] | None]:
    """What :func:`integrity_check` remembers: every name of the grader's modules; the
    primitives, clocks and trace hooks of the standard library that the harness relies on; and
    every function, class and module of a library (NumPy, TensorFlow, ``random``,
    ``statistics``...) that the grader's code names, so that ``numpy.allclose = ...`` in a
    notebook cannot change what a check concludes."""
    grader: dict[str, tuple[str, ...] | None] = {name: None for name in _grader_module_names()}
    protected = {name: set(names) for name, names in _library_names(grader).items()}
    for name, names in PROTECTED.items():
        protected.setdefault(name, set()).update(names)
    protected.setdefault("concurrent.futures", set()).add("ThreadPoolExecutor")
    return {**grader, **{name: tuple(sorted(names)) for name, names in protected.items()}}


def _library_names(grader: Iterable[str], depth: int = 3) -> dict[str, set[str]]:
    """Library module name -> the names in it that the grader's code looks up and that hold a
    function, class or module (data such as ``sys.stdout`` changes legitimately).

    The names come from every code object the grader's modules compiled from; libraries are
    the modules the grader's modules hold, and the modules those names lead to (``np.random``).
    Lazily loaded attributes (module subclasses) are left out: they replace themselves.
    """
    names: set[str] = set()
    libraries: list[types.ModuleType] = []
    for module_name in grader:
        module = sys.modules[module_name]
        spec = getattr(module, "__spec__", None)
        try:
            stack = [spec.loader.get_code(module_name)]
            if stack[0] is None:
                raise LookupError(module_name)
        except Exception:  # noqa: BLE001 - no loader: the code of the functions it holds
            stack = [v.__code__ for v in vars(module).values()
                     if isinstance(v, types.FunctionType)]
        while stack:
            current = stack.pop()
            names.update(current.co_names)
            stack.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
        libraries.extend(v for v in vars(module).values()
                         if type(v) is types.ModuleType and not v.__name__.startswith("autograder"))
    found: dict[str, set[str]] = {}
    for _ in range(depth):
        following: list[types.ModuleType] = []
        for library in libraries:
            if sys.modules.get(library.__name__) is not library or library.__name__ in found:
                continue
            namespace = vars(library)
            kept = {name for name in names if name in namespace
                    and (type(namespace[name]) is types.ModuleType
                         or (callable(namespace[name])
                             and not isinstance(namespace[name], types.ModuleType)))}
            found[library.__name__] = kept
            following.extend(namespace[name] for name in kept
                             if type(namespace[name]) is types.ModuleType)
        libraries = following
    found.pop("builtins", None)
    return found


def hide_signal_handlers() -> None:
    """Refuse new Python signal handlers: a handler is called with the interrupted frame."""
    import _signal
    import signal

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise TamperingError("installing a signal handler is not allowed in graded code")

    safe = types.ModuleType("_signal")
    for key, value in vars(_signal).items():
        if key not in ("signal", "set_wakeup_fd"):
            setattr(safe, key, value)
    safe.signal = safe.set_wakeup_fd = refuse
    sys.modules["_signal"] = safe
    vars(signal)["_signal"] = safe
    vars(signal)["signal"] = refuse
    vars(signal)["set_wakeup_fd"] = refuse


def hide_trace_function(attempts: list[str]) -> None:
    """Hand the race detector's trace function to trusted code only.

    While the harness explores, each worker thread's trace function is a closure over the
    running schedule: code under test that got it through ``sys.gettrace()`` could mark its own
    thread atomic and pass a racy answer. From now on ``sys.gettrace`` (and the harness's copy
    of it) answers the grader and libraries as before; code under test that asks while a trace
    function is set gets :class:`TamperingError`, and the attempt is recorded. The guard is an
    opaque hook (:func:`autograder.harness.tamper.opaque`), so its own references are out of
    reach too.

    Args:
        attempts: Where the refused attempt is described (the audit hook's list).
    """
    from autograder.harness import tamper

    def refuse(_attempts: list[str] = attempts, _error: type = TamperingError) -> None:
        _attempts.append("sys.gettrace() while the race detector traced the thread")
        raise _error("sys.gettrace() is not allowed in graded code while the race detector "
                     "runs: its trace function leads to the grader")

    guard = tamper.for_trusted_callers(sys.gettrace, trusted_roots(), refuse)
    tamper.adopt(sys, "gettrace", guard)


def make_undumpable() -> None:
    """Forbid other processes of the sandbox to read this one's memory (``PR_SET_DUMPABLE``)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_dumpable = 4
    libc.prctl(pr_set_dumpable, 0, 0, 0, 0)
