"""Inside the grading sandbox: what graded code may not touch, and noticing when it tried.

Student code runs in the same process as the checks that grade it (the checks call it from
their own threads), so the runner (:mod:`autograder.kernel.runner`) protects the checks in
two ways before the first student cell runs:

- :func:`integrity_check` remembers every name the graders depend on (the ``autograder`` modules,
  their classes and functions' code, the threading primitives, clocks and trace hooks, the
  builtins, ``sys.modules``) and names each one that was replaced since. The runner asks before
  and after every test cell; a replaced name makes that test fail as ``tampered``.
- :func:`autograder.kernel.audit.make_audit_hook` builds a PEP 578 audit hook (it cannot be
  removed once added) that refuses the introspection escape hatches to code compiled from the
  notebook; a refused call is recorded, so the exercise scores 0 as ``tampered``.

:func:`seal_grader_modules` also refuses, as they happen, assignments to the grader's module
names and to the attributes of every class a grader module defines.

What this does not close (stated in the README's threat model): a path to the runner's frames
that no audit event covers, or a library class's attribute (or a grader object's) replaced
while a check runs and restored before the check returns. The OS sandbox, not this module,
keeps other students' grades and files out of reach."""

from __future__ import annotations

import builtins
import sys
import types
from collections.abc import Callable, Iterable
from typing import Any

from autograder.kernel.audit import imported_in_functions, trusted_roots
from autograder.kernel.kernel_guard import PROTECTED, TamperingError
from autograder.kernel.object_internals import dict_version, freeze_class

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
#: Class attributes Python creates on first read, empty (``cls.__annotations__`` on 3.10+,
#: read by ``inspect.signature`` and Keras): not a change a notebook made while still empty.
_CREATED_ON_READ = frozenset({"__annotations__"})
#: Grader module globals that fill as checks run (the harness's records of running threads
#: and refused attempts):
#: their contents may change, so only their identity is remembered.
#: Every other dict, list or set in a grader module must keep its contents; the checks keep
#: their caches of reference outputs and models out of reach (``autograder.checks.cache``).
_GRADER_CACHES = frozenset({
    "autograder.harness.scheduler._ACTIVE_THREADS", "autograder.harness.tamper._attempts",
})


def fill_library_caches() -> None:
    """Fill the class attributes libraries leave as None until first used (matplotlib's unit
    paths, made the first time a figure draws a rectangle or a circle), before
    :func:`integrity_check` remembers them: a check that draws its first figure must not read
    as a replaced name."""
    from matplotlib.path import Path

    Path.unit_rectangle()
    Path.unit_circle()
    Path.unit_circle_righthalf()


def print_thread_exceptions_in_python() -> None:
    """Print an exception no thread caught with :mod:`traceback`, not ``threading``'s C hook.

    The C hook underlines each traceback line by parsing that line's source under its file's
    name: a ``compile`` event naming a library file, which the audit hook refuses (it cannot
    tell that parse from graded code forging a library's code, and letting it through would
    let a note or message object of the exception compile under a library name). So every
    answer whose thread crashed was reported as tampered. :mod:`traceback` parses under
    ``<unknown>``. Set before :func:`integrity_check` remembers ``threading.excepthook``.
    """
    import threading
    import traceback

    def print_thread_exception(args: Any, _print=traceback.print_exception,
                               _system_exit=SystemExit, _sys=sys) -> None:
        if args.exc_type is _system_exit:
            return
        stderr = _sys.stderr
        if stderr is None:
            return
        name = args.thread.name if args.thread is not None else "(unknown)"
        print(f"Exception in thread {name}:", file=stderr, flush=True)
        _print(args.exc_type, args.exc_value, args.exc_traceback, file=stderr)

    threading.excepthook = print_thread_exception


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
                 _dict=dict, _created_on_read=_CREATED_ON_READ) -> list[str]:
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
            added = [key for key in _set(namespace) - keys - _added_legitimately
                     if not (key in _created_on_read and _type(namespace[key]) is _dict
                             and not namespace[key])]
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


def _contents(container: object, _type=type, _id=id) -> object:
    """A container's contents by identity (what a later comparison cannot be fooled about)."""
    if container is None:
        return None
    if _type(container) is dict:
        return tuple((_id(k), _id(v)) for k, v in dict.items(container))
    if _type(container) is list:
        return tuple(_id(v) for v in list.__iter__(container))
    return frozenset(_id(v) for v in set.__iter__(container))


def _defines_no_functions(cls: type) -> bool:
    return cls.__module__ == "builtins" or not any(
        isinstance(v, types.FunctionType) for v in vars(cls).values())


#: The packages whose code runs beside student code in every lesson: imported whole before any
#: student code runs, with the lesson's own check packages (:func:`import_kernel_modules`).
KERNEL_PACKAGES = ("autograder.harness", "autograder.checks.kit")


def import_kernel_modules(preloaded: dict) -> None:
    """Import every module a lesson's checks may reach, so that all are sealed with the rest
    and no check imports a module of its own after sealing (one the notebook imported first
    and changed, or one that would run unsealed): :data:`KERNEL_PACKAGES`, the shared modules
    of :mod:`autograder.checks`, :mod:`autograder.lesson`, and every module of each check
    package the lesson imports (``preloaded``: the lesson's imports, as the runner made them).
    Other lessons' packages are left alone (they would import TensorFlow into lesson 00)."""
    import importlib
    import pkgutil

    import autograder.checks

    importlib.import_module("autograder.lesson")
    for found in pkgutil.iter_modules(autograder.checks.__path__, "autograder.checks."):
        if not found.ispkg:
            importlib.import_module(found.name)
    faces = {value.__name__ for value in preloaded.values()
             if isinstance(value, types.ModuleType) and hasattr(value, "__path__")
             and value.__name__.startswith("autograder.checks.")}
    for name in (*KERNEL_PACKAGES, *sorted(faces)):
        package = importlib.import_module(name)
        for found in pkgutil.walk_packages(package.__path__, f"{name}."):
            importlib.import_module(found.name)


def grader_names(names: dict) -> dict:
    """The entries of ``names`` (a lesson's imports, as the runner preloads them) that are the
    grader's own: its modules (the lesson's face) and its functions (``explore``, ``claim``)."""
    def own(value: object) -> bool:
        if isinstance(value, types.ModuleType):
            return value.__name__.startswith("autograder")
        module = getattr(value, "__module__", None)
        return isinstance(module, str) and module.startswith("autograder")

    return {name: value for name, value in names.items() if own(value)}


def unsealed_grader_modules() -> list[str]:
    """The grader modules in ``sys.modules`` that :func:`seal_grader_modules` did not seal (the
    runner checks that there are none before the first student cell: else it grades nothing)."""
    from autograder.harness import tamper

    return sorted(name for name in _grader_module_names()
                  if type(sys.modules[name]) is not tamper.sealed_module_type())


def _grader_module_names() -> list[str]:
    return [name for name in sys.modules
            if name.startswith(("autograder.harness", "autograder.checks", "autograder.kernel",
                             "autograder.grading", "autograder.course"))
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
    # Libraries a check imports inside a function body (``import tensorflow as tf`` there).
    libraries.extend(imported_in_functions(
        [sys.modules[name] for name in grader if isinstance(sys.modules[name], types.ModuleType)]))
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

    from autograder.harness.tamper import note_refusal as record_attempt

    def refuse(*_args: object, _record=record_attempt, **_kwargs: object) -> None:
        _record("installing a signal handler")
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
