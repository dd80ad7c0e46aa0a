"""Tamper guard: the harness's own references, and a check that nobody replaced them.

Student code runs in the same kernel as the grader. A notebook that does
``threading.Lock = NoopLock`` or replaces ``autograder.harness.explore`` must not get a pass.
This module takes the harness's references to the threading primitives, the trace hooks and
``sys.setswitchinterval`` once, at import, checks that each one really comes from the standard
library (so a replacement made before the harness was imported is caught too), and reports every
name that code under test has replaced since.
"""

from __future__ import annotations

import _thread
import concurrent.futures
import dis
import gc
import inspect
import math
import os
import queue
import sys
import threading
import time
import types
from collections.abc import Callable, Iterable
from typing import Any

# The harness uses these names, never the module attributes, so a replacement cannot reach it.
allocate_lock = _thread.allocate_lock
start_new_thread = _thread.start_new_thread
get_ident = _thread.get_ident
LockType = _thread.LockType
RLockType = _thread.RLock
Thread = threading.Thread
Barrier = threading.Barrier
BrokenBarrierError = threading.BrokenBarrierError
threading_settrace = threading.settrace
threading_gettrace = threading.gettrace
settrace = sys.settrace
gettrace = sys.gettrace
setswitchinterval = sys.setswitchinterval
getswitchinterval = sys.getswitchinterval
_sys_current_frames = sys._current_frames
_gc_disable = gc.disable
_gc_enable = gc.enable
_gc_isenabled = gc.isenabled
perf_counter = time.perf_counter
monotonic = time.monotonic
_getframe = sys._getframe

#: The grader's own package folder (``autograder/``), with a trailing separator.
GRADER_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "")


def is_plain_path(filename: object, _type=type, _str=str, _split=str.split,
                  _odd=("", ".", "..")) -> bool:
    """An absolute file name as the interpreter writes an installed file's: a string with no
    ``.`` or ``..`` component and no empty one (a doubled or trailing separator).

    Code imported through a ``sys.path`` entry like ``/work/main/autograder/../../tmp/work``
    has a file name that starts with the grader's folder while its file is the student's:
    a file name that is not plain is never taken for the grader's (or a library's). Every
    reference it uses is a default argument, taken at import, so rebinding a module global
    or a builtin does not change its answer.
    """
    if _type(filename) is not _str or not _str.startswith(filename, "/"):
        return False
    for part in _split(filename, "/")[1:]:
        if part in _odd:
            return False
    return True


def in_folders(filename: object, folders: tuple[str, ...], _plain=is_plain_path,
               _startswith=str.startswith) -> bool:
    """``filename`` is a plain path (:func:`is_plain_path`) inside one of ``folders`` (each
    ending in a separator)."""
    return _plain(filename) and _startswith(filename, folders)


_CALL_OPS = frozenset(dis.opmap[name] for name in ("CALL", "CALL_FUNCTION_EX", "PRECALL")
                      if name in dis.opmap)
_CACHE_OP = dis.opmap.get("CACHE", -1)


def is_calling(frame: types.FrameType, _calls=_CALL_OPS, _cache=_CACHE_OP, _len=len) -> bool:
    """Is ``frame`` at a call instruction (past the call's inline cache, where a frame that
    called Python code stands)?

    A trusted function that asks for something itself calls it. One that is reading an
    attribute, comparing, testing ``in`` or iterating over an object of graded code's runs
    whatever that object's class says, and a property built of C (``functools.partial``,
    ``map``, ``iter``) runs in that function's frame: the grader's frame, not asking.
    """
    raw, lasti = frame.f_code.co_code, frame.f_lasti
    if lasti < 0 or lasti >= _len(raw):
        return False
    while lasti >= 2 and raw[lasti] == _cache:
        lasti -= 2
    return raw[lasti] in _calls


def names_any(code: types.CodeType, needles: tuple[str, ...]) -> bool:
    """Does ``code`` name (as a global, attribute, local or free variable) something that
    contains one of ``needles``? A function that asks for frames itself says so in its code
    (``sys._getframe``, ``tamper.current_frames``, ``tb.tb_frame``); one that only calls what
    it was handed (a thread's target, a pool's task, a cached property's function, an opaque
    hook given ``_function=``) does not.
    """
    for group in (code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars):
        for name in group:
            for needle in needles:
                if needle in name:
                    return True
    return False


def _is_builtin(obj: object, module: types.ModuleType, name: str) -> bool:
    return (
        isinstance(obj, types.BuiltinFunctionType)
        and obj.__self__ is module
        and obj.__name__ == name
    )


def _is_c_type(obj: object, module_name: str) -> bool:
    """A type implemented in C: its methods are method descriptors, which Python cannot make."""
    if not isinstance(obj, type) or obj.__module__ != module_name:
        return False
    methods = [v for v in vars(obj).values() if callable(v)]
    return bool(methods) and all(
        isinstance(v, (types.MethodDescriptorType, types.WrapperDescriptorType,
                       types.BuiltinFunctionType, types.ClassMethodDescriptorType,
                       staticmethod, classmethod))
        for v in methods
    )


def _from_file(obj: object, module: types.ModuleType) -> bool:
    """A function or class whose code lives in ``module``'s own source file."""
    filename = getattr(module, "__file__", None)
    if filename is None:
        return False
    if isinstance(obj, types.FunctionType):
        return obj.__code__.co_filename == filename and obj.__module__ == module.__name__
    if isinstance(obj, type):
        functions = [v for v in vars(obj).values() if isinstance(v, types.FunctionType)]
        return (
            obj.__module__ == module.__name__
            and bool(functions)
            and all(f.__code__.co_filename == filename for f in functions)
        )
    return False


def _sys_builtin(name: str) -> Callable[[object], bool]:
    return lambda obj: _is_builtin(obj, sys, name)


def _thread_builtin(name: str) -> Callable[[object], bool]:
    return lambda obj: _is_builtin(obj, _thread, name)


def _python_in(module: types.ModuleType) -> Callable[[object], bool]:
    return lambda obj: _from_file(obj, module)


class _Watched:
    """One name the harness depends on: where it lives, its value at import, how to vet it."""

    def __init__(self, module: types.ModuleType, name: str, genuine: Callable[[object], bool]):
        self.module = module
        self.name = name
        self.genuine = genuine
        self.original = getattr(module, name)

    @property
    def label(self) -> str:
        return f"{self.module.__name__}.{self.name}"

    def problem(self) -> str | None:
        current = getattr(self.module, self.name, None)
        if current is not self.original:
            return f"{self.label} was replaced (it is now {describe(current)})"
        if not self.genuine(current):
            return f"{self.label} is not the standard library's (it is {describe(current)})"
        return None


_WATCHED: list[_Watched] = [
    _Watched(_thread, "allocate_lock", _thread_builtin("allocate_lock")),
    _Watched(_thread, "start_new_thread", _thread_builtin("start_new_thread")),
    _Watched(_thread, "get_ident", _thread_builtin("get_ident")),
    _Watched(_thread, "LockType", lambda obj: _is_c_type(obj, "_thread")),
    _Watched(_thread, "RLock", lambda obj: _is_c_type(obj, "_thread")),
    _Watched(threading, "Lock", lambda obj: obj is _thread.allocate_lock),
    _Watched(threading, "RLock", _python_in(threading)),
    _Watched(threading, "Condition", _python_in(threading)),
    _Watched(threading, "Semaphore", _python_in(threading)),
    _Watched(threading, "BoundedSemaphore", _python_in(threading)),
    _Watched(threading, "Event", _python_in(threading)),
    _Watched(threading, "Barrier", _python_in(threading)),
    _Watched(threading, "Thread", _python_in(threading)),
    _Watched(threading, "settrace", _python_in(threading)),
    _Watched(threading, "gettrace", _python_in(threading)),
    _Watched(threading, "current_thread", _python_in(threading)),
    _Watched(threading, "enumerate", _python_in(threading)),
    _Watched(queue, "Queue", _python_in(queue)),
    _Watched(queue, "SimpleQueue", lambda obj: _is_c_type(obj, "_queue")),
    _Watched(concurrent.futures, "ThreadPoolExecutor",
             lambda obj: isinstance(obj, type) and obj.__module__ == "concurrent.futures.thread"),
    _Watched(sys, "settrace", _sys_builtin("settrace")),
    _Watched(sys, "gettrace", _sys_builtin("gettrace")),
    _Watched(sys, "setprofile", _sys_builtin("setprofile")),
    _Watched(sys, "setswitchinterval", _sys_builtin("setswitchinterval")),
    _Watched(sys, "getswitchinterval", _sys_builtin("getswitchinterval")),
    _Watched(sys, "_current_frames", _sys_builtin("_current_frames")),
    _Watched(time, "perf_counter", lambda obj: _is_builtin(obj, time, "perf_counter")),
    _Watched(time, "monotonic", lambda obj: _is_builtin(obj, time, "monotonic")),
]

# The harness's own references must be the genuine ones too (they were taken at import).
_OWN: dict[str, tuple[object, Callable[[object], bool]]] = {
    "_thread.allocate_lock": (allocate_lock, _thread_builtin("allocate_lock")),
    "_thread.start_new_thread": (start_new_thread, _thread_builtin("start_new_thread")),
    "_thread.get_ident": (get_ident, _thread_builtin("get_ident")),
    "threading.Thread": (Thread, _python_in(threading)),
    "threading.Barrier": (Barrier, _python_in(threading)),
    "threading.settrace": (threading_settrace, _python_in(threading)),
    "sys.settrace": (settrace, _sys_builtin("settrace")),
    "sys.setswitchinterval": (setswitchinterval, _sys_builtin("setswitchinterval")),
    "sys._current_frames": (_sys_current_frames, _sys_builtin("_current_frames")),
    "gc.disable": (_gc_disable, lambda obj: _is_builtin(obj, gc, "disable")),
    "gc.enable": (_gc_enable, lambda obj: _is_builtin(obj, gc, "enable")),
    "gc.isenabled": (_gc_isenabled, lambda obj: _is_builtin(obj, gc, "isenabled")),
}

_harness_snapshot: list[tuple[str, object, str, object]] = []
#: A harness class's members inherited from harness base classes: a name added to the class
#: itself would shadow the inherited one (``scheduler.Run._pause = ...`` with ``_pause`` defined
#: by ``turns.Turns``).
_harness_inherited: list[tuple[str, type, str]] = []
_harness_modules: dict[str, types.ModuleType] = {}
_attempts: list[str] = []


def opaque(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` behind a plain function that holds it only as a keyword-only default.

    Code under test can read the hooks the scheduler installs (``threading._trace_hook``,
    ``threading.excepthook``) and the functions a check hands it (a logging ``access``, a
    ``read``): a bound method, a closure or a ``functools.partial`` there would hand it the
    scheduler or the check's own records (``__self__``, ``__closure__``, ``.args``). A default
    is read through ``__kwdefaults__``, which raises an audit event, and the grading runner's
    audit hook refuses that read to code under test (:data:`OPAQUE_CODE`). The hook takes the
    name, docstring and signature of ``function``, for ``help()``.
    """

    def hook(*args: Any, _function: Callable[..., Any] = function, **kwargs: Any) -> Any:
        return _function(*args, **kwargs)

    for attribute in ("__name__", "__qualname__", "__doc__"):
        setattr(hook, attribute, getattr(function, attribute, None) or getattr(hook, attribute))
    try:
        hook.__signature__ = inspect.signature(function)  # what help() shows a student
    except (TypeError, ValueError):
        pass
    return hook


#: The code of every :func:`opaque` hook, for the audit hook that guards their defaults.
OPAQUE_CODE = opaque(print).__code__


def for_trusted_callers(getter: Callable[[], Any], trusted: tuple[str, ...],
                        refuse: Callable[[], Any], name: str | None = None) -> Callable[[], Any]:
    """An :func:`opaque` stand-in for ``getter`` (``sys.gettrace``) that answers only trusted code.

    A caller whose code file is a plain path (:func:`is_plain_path`) inside one of ``trusted``,
    whose code names the getter (``name``, by default ``getter.__name__``: a call such as
    ``tamper.gettrace()`` or ``codemap.harness_cache()``) and that is calling it
    (:func:`is_calling`), gets ``getter()``; any other caller
    gets ``refuse()`` instead while ``getter()`` is not None. Naming matters: a trusted function
    that only calls what it was handed (a thread's ``run``, a pool's task, another opaque hook
    given ``_function=``) would otherwise relay the answer to whoever handed it the getter.
    Its code lives here, in the harness, so the scheduler never makes decision points of it.
    The references it judges by live in its closure, reachable only through the opaque hook,
    and it takes no arguments: a default argument would let a caller pass its own ``trusted``.
    """
    getframe = sys._getframe
    wanted = (name or getter.__name__,)
    plain, names, calling = in_folders, names_any, is_calling

    def guarded() -> Any:
        value = getter()
        if value is None:
            return None
        caller = getframe(2)  # 1 is the opaque hook that called this one
        if plain(caller.f_code.co_filename, trusted) and names(caller.f_code, wanted) \
                and calling(caller):
            return value
        return refuse()

    return opaque(guarded)


def private_memo(trusted: tuple[str, ...], what: str) -> Callable[[Any, Callable[[], Any]], Any]:
    """An :func:`opaque` memo whose stored values reach only the grader's own code.

    ``memo(key, build)`` is called by a grader function (``reference_outputs``, a model pool)
    whose file is a plain path inside one of ``trusted`` (:func:`in_folders`), at a call
    (:func:`is_calling`: not while it reads a property of graded code's made of C). When that
    function's own caller is trusted too, it returns the value built once for ``key``; for
    any other caller (an answer, a notebook cell, a library relay such as a thread pool) it
    returns a fresh ``build()``, never stored.
    So code under test can neither fill the cache in advance nor change in place a value a
    later check will judge by. Called directly from untrusted code, it records the attempt
    (``what``) and raises PermissionError. The store lives in a closure behind the opaque
    hook; the memo takes no other arguments.
    """
    getframe = sys._getframe
    store: dict[Any, Any] = {}

    def memo(key: Any, build: Callable[[], Any]) -> Any:
        owner = getframe(2)  # 1 is the opaque hook that called this one
        if not (in_folders(owner.f_code.co_filename, trusted) and is_calling(owner)):
            record_attempt(f"reaching {what}")
            raise PermissionError(f"{what} is not available to code under test")
        caller = owner.f_back
        if caller is None or not in_folders(caller.f_code.co_filename, trusted):
            return build()
        if key not in store:
            store.setdefault(key, build())
        return store[key]

    return opaque(memo)


#: Every folder a check makes for its own records inside the kernel (lesson 08's worker
#: receipts) starts with this name; the grading runner's audit hook refuses code under test
#: any path that contains it.
SCRATCH_PREFIX = "racelab-grader-"


#: Each live scratch folder -> the frame of the check's call that made it. The grading
#: runner's audit hook lets a path in the folder be touched only from inside that call, with
#: no frame of code under test between (so not by code under test calling the grader's own
#: functions, on any thread); and, in a forked child, only by a worker's own record writers.
SCRATCH_OWNERS: dict[str, Any] = {}
_getframe = sys._getframe


def scratch_folder(purpose: str) -> str:
    """A new private folder for a check's records, which code under test may not touch.

    Only the call that made it (the caller of this function, until it returns) may touch it
    (:data:`SCRATCH_OWNERS`); remove it with :func:`remove_scratch`.

    Args:
        purpose: A word for the folder's name (``"receipts"``).

    Returns:
        The folder's path, under the system's temporary folder.
    """
    import tempfile

    path = tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{purpose}-")
    SCRATCH_OWNERS[path] = _getframe(1)
    return path


def remove_scratch(path: str) -> None:
    """Remove a folder :func:`scratch_folder` made, and forget who made it."""
    import shutil

    shutil.rmtree(path, ignore_errors=True)
    SCRATCH_OWNERS.pop(path, None)


def adopt(module: types.ModuleType, name: str, value: object) -> None:
    """Make ``value`` the genuine ``module.name`` from now on, here too if this module holds it.

    For the grading runner's own guards (a ``sys.gettrace`` that answers only trusted
    callers), installed before any student code runs: the tamper check then reports a later
    replacement of the guard, not the guard itself.
    """
    for watched in _WATCHED:
        if watched.module is module and watched.name == name:
            watched.original = value
            watched.genuine = lambda obj, _value=value: obj is _value
    current = getattr(module, name)
    for key, held in list(globals().items()):
        if held is current:
            globals()[key] = value
    vars(module)[name] = value


def describe(obj: object) -> str:
    """Name an object for a student: what it is and where it was defined."""
    target = obj
    if isinstance(obj, (types.MethodType,)):
        target = obj.__func__
    code = getattr(target, "__code__", None)
    name = getattr(target, "__qualname__", None) or type(target).__name__
    if code is not None:
        return f"{name} defined in {code.co_filename} line {code.co_firstlineno}"
    if isinstance(target, type):
        try:
            where = inspect.getsourcefile(target) or target.__module__
        except TypeError:
            where = target.__module__
        return f"class {name} from {where}"
    return repr(target)[:120]


def _attempt_log() -> tuple[Callable[[str], None], Callable[[str], None],
                            Callable[[int], list[str]]]:
    """``record_attempt`` and ``attempts_since``, both :func:`opaque`, over a log of refused
    attempts that only their closures hold: code under test can clear :data:`_attempts` (it is
    a module global), never this log, so a refusal it caught and then tried to erase is still
    reported."""
    log: list[str] = []

    def record_attempt(what: str, _public: list[str] = _attempts, _log: list[str] = log) -> None:
        """Remember a refused attempt on the grader (``"overwriting autograder.harness.explore"``).

        Every later harness run fails while it is remembered; the grading runner also reports it
        as tampering with the cell that made it (:func:`attempts_since`)."""
        _public.append(what)
        _log.append(what)

    def note_refusal(what: str, _log: list[str] = log) -> None:
        """Remember an attempt that was refused before it changed anything (a lock or a clock
        assigned to a guarded module): the grading runner reports it with the cell that made
        it, and later harness runs go on, since nothing they rely on changed."""
        _log.append(what)

    def attempts_since(count: int, _log: list[str] = log, _list: type = list) -> list[str]:
        """A copy of the attempts recorded after the first ``count`` (the grading runner's)."""
        return _list(_log[count:])

    return opaque(record_attempt), opaque(note_refusal), opaque(attempts_since)


record_attempt, note_refusal, attempts_since = _attempt_log()


def _frames_for_the_harness() -> Callable[[], dict[int, types.FrameType]]:
    """:func:`current_frames`, behind an :func:`opaque` hook whose closure holds what it uses."""
    getframe, every = _getframe, _sys_current_frames
    isenabled, disable, enable = _gc_isenabled, _gc_disable, _gc_enable
    plain, names, calling = in_folders, names_any, is_calling
    record, grader = record_attempt, (GRADER_DIR,)

    def current_frames() -> dict[int, types.FrameType]:
        """``sys._current_frames()`` with the garbage collector paused while it runs, for the
        grader's own code only.

        The frames lead to everything in the process: from a frame, ``f_back`` and
        ``f_locals`` (no audit event sees either on Python 3.11) reach the grading runner's
        frames, its plan and the function that signs its report. So the caller must be the
        grader's own code (a file in the ``autograder`` package, :data:`GRADER_DIR`) that
        asks for them itself (its code names ``current_frames``, as the harness's report,
        stress runner and turns and the kit's ``describe`` do, and it is calling it:
        :func:`is_calling`); any other caller, a notebook cell, a grader function that only
        calls what it was handed or one reading a property of graded code's, is recorded
        (:func:`record_attempt`) and gets PermissionError.

        CPython 3.11 holds the interpreter's thread-list lock while it builds the result, and
        the frame objects it allocates there can start a collection. A finalizer run by that
        collection that takes the same lock (a TensorFlow graph's does) deadlocks the thread
        while it holds the GIL, and so the whole kernel. With the collector paused no code
        runs under the lock.
        """
        caller = getframe(2)  # 1 is the opaque hook that called this one
        if not (plain(caller.f_code.co_filename, grader)
                and names(caller.f_code, ("current_frames",)) and calling(caller)):
            record("reading every thread's frames (autograder.harness.tamper.current_frames)")
            raise PermissionError("every thread's frames are the race detector's own: they are "
                                  "not available to code under test")
        was_enabled = isenabled()
        disable()
        try:
            return every()
        finally:
            if was_enabled:
                enable()

    return opaque(current_frames)


def growing_total(what: str) -> tuple[Callable[[], float], Callable[[float], None]]:
    """A total of seconds that only grows, behind two :func:`opaque` hooks: ``read()`` and
    ``add(seconds)``.

    Graded code may read it and add to it (a check's answer that sleeps moves its own clock),
    but never set it or wind it back: the total lives in the hooks' closure, not in a module
    global, and ``add`` takes only a positive finite number of seconds. Any other amount is
    recorded (:func:`record_attempt`, naming ``what``) and refused with ValueError.
    """
    total = [0.0]
    record, finite, number = record_attempt, math.isfinite, (int, float)

    def read() -> float:
        return total[0]

    def add(seconds: float) -> None:
        if type(seconds) not in number or not (seconds > 0 and finite(seconds)):
            record(f"moving {what} by {seconds!r}")
            raise ValueError(f"{what} only moves ahead, by a positive number of seconds")
        total[0] += seconds

    return opaque(read), opaque(add)


def refused_attempts() -> list[str]:
    """The list :func:`record_attempt` appends to, oldest first (the grading runner reads it)."""
    return _attempts


current_frames = _frames_for_the_harness()


def snapshot_harness(modules: Iterable[types.ModuleType]) -> None:
    """Remember every function and class the harness modules define, to notice replacements."""
    for module in modules:
        _harness_modules[module.__name__] = module
        for name, value in vars(module).items():
            if getattr(value, "__module__", None) != module.__name__:
                continue
            if not isinstance(value, (types.FunctionType, type)):
                continue
            _harness_snapshot.append((f"{module.__name__}.{name}", module, name, value))
            if isinstance(value, type):
                for attr, member in vars(value).items():
                    if _watched_member(attr):
                        label = f"{module.__name__}.{name}.{attr}"
                        _harness_snapshot.append((label, value, attr, member))
                inherited = {attr for base in value.__mro__[1:]
                             if base.__module__.startswith("autograder.harness")
                             for attr in vars(base) if _watched_member(attr)}
                _harness_inherited.extend((f"{module.__name__}.{name}.{attr}", value, attr)
                                          for attr in sorted(inherited - set(vars(value))))


def _watched_member(attr: str) -> bool:
    return not attr.startswith("__") or attr in ("__init__", "__repr__")


def snapshot_public(package: types.ModuleType, names: Iterable[str]) -> None:
    """Remember the package's public names (``autograder.harness.explore`` and friends)."""
    _harness_modules[package.__name__] = package
    for name in names:
        _harness_snapshot.append((f"{package.__name__}.{name}", package, name,
                                  getattr(package, name)))


class _SealedModule(types.ModuleType):
    """A module whose sealed names (and class) cannot be reassigned (refused and noted)."""

    def __setattr__(self, name: str, value: object) -> None:
        if name == "__class__" or name in vars(self).get("__sealed__", ()):
            record_attempt(f"overwriting {self.__name__}.{name}")
            raise AttributeError(f"{self.__name__}.{name} is part of the grader and cannot "
                                 "be replaced")
        super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        if name in vars(self).get("__sealed__", ()):
            record_attempt(f"deleting {self.__name__}.{name}")
            raise AttributeError(f"{self.__name__}.{name} is part of the grader and cannot "
                                 "be deleted")
        super().__delattr__(name)


def sealed_module_type() -> type:
    """The class :func:`seal` gives a module (what the grading runner verifies)."""
    return _SealedModule


def seal(package: types.ModuleType, names: Iterable[str]) -> None:
    """Refuse (and remember) later assignments to ``names`` of ``package`` (and to its class)."""
    vars(package)["__sealed__"] = frozenset(names) | vars(package).get("__sealed__", frozenset())
    if type(package) is not _SealedModule:
        package.__class__ = _SealedModule


def _harness_problems() -> list[str]:
    problems = []
    for name, module in _harness_modules.items():
        if sys.modules.get(name) is not module:
            problems.append(f"the module {name} was replaced in sys.modules")
    for label, owner, attr, original in _harness_snapshot:
        current = vars(owner).get(attr)
        if current is not original:
            problems.append(f"{label} was replaced (it is now {describe(current)})")
    for label, owner, attr in _harness_inherited:
        if attr in vars(owner):
            problems.append(f"{label} was replaced (it is now {describe(vars(owner)[attr])})")
    return problems


def problems() -> list[str]:
    """Every replaced primitive, trace hook or harness function, in plain words.

    Returns:
        One sentence per problem; an empty list when nothing was tampered with.
    """
    found = []
    for watched in _WATCHED:
        problem = watched.problem()
        if problem:
            found.append(problem)
    for label, (value, genuine) in _OWN.items():
        if not genuine(value):
            found.append(f"{label} was already replaced before the harness was imported "
                         f"(it is {describe(value)})")
    found.extend(_harness_problems())
    found.extend(f"someone tried {what}" for what in _attempts)
    return found


def message(found: list[str]) -> str:
    """The student-facing explanation of a tamper verdict."""
    lines = "\n".join(f"  - {p}" for p in found)
    return (
        "Grading stopped: the race detector's own tools were replaced, so this check cannot "
        "pass.\n"
        f"{lines}\n"
        "A replaced lock, trace hook or grader function can make racy code look correct. "
        "Remove the code that assigns to these names (or restart the kernel) and run again."
    )
