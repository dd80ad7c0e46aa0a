"""The PEP 578 audit hook that refuses graded code the introspection escape hatches.

:func:`make_audit_hook` builds the hook the runner adds before the first student cell runs (an
audit hook cannot be removed once added). It refuses, to code compiled from the notebook, frame
objects (``sys._getframe``, ``inspect.currentframe``, ``tb_frame``, ``gi_frame``...),
object-graph walks (``gc.get_objects``/``get_referrers``/``get_referents``), ``ctypes``, trace
and profile hooks other than the harness's, audit hooks of its own, new code objects, code
that claims the grader's or an installed library's file name (compiled, unmarshalled, loaded
from a ``.pyc`` file or rebuilt with ``code.replace``), native modules from outside the
installed folders, writes to the grader's functions, the checks' own records
(:data:`autograder.harness.tamper.SCRATCH_PREFIX`) and process memory (``/proc/*/mem``). A
refused call raises :class:`TamperingError` in the student's code and is recorded, so the
exercise scores 0 as ``tampered`` even when the student catches the error. The hook takes
every reference it uses when it is made (default arguments), so rebinding a module global or
a builtin later does not change its judgement.

Who asked. Code is the student's when its file is not a plain path inside
:func:`trusted_roots` (:func:`autograder.harness.tamper.in_folders`: a module imported through
a ``sys.path`` entry with ``..`` in it is the student's, wherever its name starts). Library
and grader code may use frames, ``ctypes`` and the rest for its own purposes; but a trusted
function that only calls what it was handed (a thread's ``run``, a pool's task, a cached
property, ``functools.partial`` run by a check, an opaque hook given ``_function=``) or reads
an attribute by a name it was given (``inspect.getmembers``) would relay the request of
whoever handed it over. So the asking frame must also *name* what it asks for
(:func:`autograder.harness.tamper.names_any`: ``sys._getframe``, ``tb_frame``,
``from_address``...), and what a library function asks for on graded code's behalf (a
debugger's or profiler's trace function, a code object it rebuilds) is judged by graded code.
"""

from __future__ import annotations

import _thread
import builtins
import dis
import io
import marshal
import os
import pathlib
import re
import sys
import sysconfig
import types
from collections.abc import Callable, Iterable

from autograder.kernel.kernel_guard import TamperingError

_FRAME_EVENTS = frozenset({"sys._getframe", "sys._current_frames"})
_FRAME_ATTRIBUTES = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back"})
_FUNCTION_FIELDS = frozenset({"__code__", "__defaults__", "__kwdefaults__"})
_DEFAULT_FIELDS = frozenset({"__defaults__", "__kwdefaults__"})
_BLOCKED_MODULES = frozenset({"ctypes", "_ctypes", "cffi", "_cffi_backend", "_testcapi",
                              "_testinternalcapi", "_xxsubinterpreters", "_signal"})
#: Events refused to graded code outright, with what a trusted function that makes the call
#: itself names in its code.
_REFUSED_BY_NAME = {
    "gc.get_objects": ("get_objects",), "gc.get_referrers": ("get_referrers",),
    "gc.get_referents": ("get_referents",), "sys.addaudithook": ("addaudithook",),
    "code.__new__": ("replace", "CodeType"), "marshal.load": ("marshal",),
}
_TRACE_SETTERS = {"sys.settrace": ("settrace",), "sys.setprofile": ("setprofile",)}
_FRAME_NAMES = ("frame", "f_back")
_DEFAULT_NAMES = ("defaults",)
#: What a function that uses ``ctypes`` itself names (its module, or the call it makes).
_CTYPES_NAMES = ("ctypes", "from_address", "from_buffer", "addressof", "string_at", "cast",
                 "CDLL", "cdll", "pythonapi", "memmove", "memset", "byref", "INCREF", "DECREF",
                 "errno", "dlopen", "dlsym", "LoadLibrary", "lib", "dll", "Structure",
                 "POINTER", "pointer", "_FromPtr")
#: Events that start another program. While a check's private folder exists (it is running),
#: graded code may not start one: the program would run outside this hook.
_PROGRAM_EVENTS = frozenset({"os.system", "os.exec", "os.posix_spawn", "os.spawn",
                             "subprocess.Popen"})
#: What a forked child of the graded process may write in a check's folder: a ledger or pool
#: worker's own records (``autograder.checks.process_workers``), nothing else.
_WORKER_RECORDERS = frozenset({"_leave_receipt", "_record", "serve"})
#: Raised by lesson 06's reference analyses (``autograder.checks.tracing.references``): only the
#: grader's own code that names the reference it calls (or the ``reference`` it was handed)
#: may call one; graded code calling the grader's answer, directly or through a relay, may not.
REFERENCE_EVENT = "racelab.reference"
_REFERENCE_NAMES = ("reference",)
_WATCHED = (_FRAME_EVENTS | frozenset(_REFUSED_BY_NAME) | frozenset(_TRACE_SETTERS)
            | _PROGRAM_EVENTS | frozenset({REFERENCE_EVENT})
            | frozenset({"open", "import", "object.__setattr__", "compile", "marshal.loads",
                         "os.symlink", "os.rename", "os.link", "os.chdir"}))
#: Events that name a path (first argument) or two (the first two), judged by
#: :func:`make_audit_hook` against the checks' private folders.
_PATH_EVENTS = frozenset({"open", "os.symlink", "os.rename", "os.link", "os.chdir"})
_TWO_PATH_EVENTS = frozenset({"os.symlink", "os.rename", "os.link"})
#: Where a ``pathlib`` path keeps its text once it has been turned into a file name.
_PATH_TEXT_SLOT = vars(pathlib.PurePath).get("_str")
_MEMORY_FILE = re.compile(r"(^|/)(mem|pagemap)$")
# Library functions that return frames to their caller: a frame event they raise is judged by
# who called them.
_FRAME_RETURNING = (
    ("inspect", "currentframe"), ("inspect", "stack"), ("inspect", "trace"),
    ("inspect", "getouterframes"), ("inspect", "getinnerframes"),
    ("traceback", "walk_stack"), ("traceback", "walk_tb"), ("logging", "currentframe"),
    # A stack summary walks the caller's own frames (and with ``capture_locals`` shows every
    # local of the runner's): the summary, not the walk, is what the caller asked for.
    ("traceback", "extract_stack"), ("traceback", "format_stack"), ("traceback", "print_stack"),
    ("traceback", "StackSummary.extract"),
    ("traceback", "StackSummary._extract_from_extended_frame_gen"),
    # ``asyncio.current_task().get_stack()`` is the running coroutine's frame, whose f_back
    # leads to the runner's.
    ("asyncio.base_tasks", "_task_get_stack"),
    ("tensorflow.python.util.tf_inspect", "currentframe"),
    ("tensorflow.python.util.tf_inspect", "stack"),
)
#: Standard library modules of :data:`_FRAME_RETURNING`, imported when the hook is made so
#: that a later import cannot leave them out.
_STANDARD_FRAME_MODULES = ("inspect", "traceback", "logging", "asyncio.base_tasks")
#: Where importlib and zipimport unmarshal a module's code from its ``.pyc`` file.
_BYTECODE_LOADERS = frozenset({("<frozen importlib._bootstrap_external>", "_compile_bytecode"),
                               ("<frozen zipimport>", "_unmarshal_code")})
_CALL_OPS = frozenset(dis.opmap[name] for name in ("CALL", "CALL_FUNCTION_EX", "PRECALL")
                      if name in dis.opmap)
_ATTRIBUTE_OPS = frozenset(dis.opmap[name] for name in ("LOAD_ATTR", "LOAD_METHOD")
                           if name in dis.opmap)
_IMPORT_NAME = dis.opmap["IMPORT_NAME"]
_CACHE = dis.opmap.get("CACHE", -1)
_EXTENDED_ARG = dis.opmap["EXTENDED_ARG"]
#: How far :func:`_code_names` looks into what ``marshal`` hands back (containers, constants).
_MARSHAL_DEPTH = 64
_MARSHAL_ITEMS = 200_000


def trusted_roots() -> tuple[str, ...]:
    """Folders whose code is the grader's or an installed library's (not the student's)."""
    paths = sysconfig.get_paths()
    roots = {paths["stdlib"], paths["platstdlib"], paths["purelib"], paths["platlib"],
             os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}
    roots.update(p for p in sys.path if p.endswith(("site-packages", "dist-packages")))
    roots |= {os.path.realpath(r) for r in roots}
    return tuple(sorted(os.path.join(r, "") for r in roots))


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
    import importlib

    from autograder.checks import process_workers
    from autograder.harness import codemap, tracing
    from autograder.harness.tamper import (
        GRADER_DIR,
        OPAQUE_CODE,
        SCRATCH_OWNERS,
        SCRATCH_PREFIX,
        in_folders,
        names_any,
    )

    for module_name in _STANDARD_FRAME_MODULES:
        importlib.import_module(module_name)
    # By identity: code objects compare equal by their contents, not their file, so code of
    # graded code's made equal to a library function's must not pass for it.
    pass_through = {id(code): code for code in _frame_returning_codes()}
    grader_root = GRADER_DIR
    library = os.path.dirname(os.__file__)
    relays = tuple(os.path.join(library, name, "") for name in ("ctypes", "importlib"))
    trusted_files = frozenset(trusted_files)
    #: Every folder whose file names belong to the grader or an installed library: a code
    #: object claiming one of them is the scheduler's LIBRARY (never interleaved).
    claimed_folders = tuple(sorted(set(roots) | set(codemap.library_prefixes())))
    global_trace = _global_trace_code(tracing)
    tracing_depth = _tracing_depth_reader()
    busy: set[int] = set()
    trusted_files_cache: dict[str, bool] = {}
    asking_cache: dict[tuple, tuple] = {}
    #: Code that uses ctypes itself (trusted, names it, no relay), by identity (code objects
    #: compare equal by contents, whatever their file): known after its first call.
    ctypes_users: dict[int, types.CodeType] = {}
    import threading

    thread_globals = vars(threading)
    made_in = os.getpid()

    def trusted(filename: str, _roots=roots, _files=trusted_files, _in=in_folders,
                _type=type, _str=str, _cache=trusted_files_cache, _len=len) -> bool:
        if _type(filename) is not _str:
            return False
        found = _cache.get(filename)
        if found is None:
            if _len(_cache) > 100_000:
                _cache.clear()
            found = _cache[filename] = (_in(filename, _roots) or filename in _files
                                        or filename.startswith("<frozen "))
        return found

    def claims(filename, _folders=claimed_folders, _files=trusted_files, _type=type,
               _str=str, _kind=codemap.kind_of_file, _user=codemap.USER) -> bool:
        """Does a code object's file name claim the grader's or an installed library's file
        (so that the scheduler would run it atomically, or the audit hook trust it)?"""
        if _type(filename) is not _str:
            return False
        return (filename.startswith(_folders) or filename in _files
                or filename.startswith("<frozen ") or _kind(filename) != _user)

    def asker(frame, _relays=relays, _pass=pass_through, _opaque=OPAQUE_CODE):
        """The frame that asked, and the name of the frame-returning library function it
        called (or None): functions that only relay the request (:data:`_FRAME_RETURNING`,
        ``importlib``, the ``ctypes`` package's own Python, an opaque hook) are skipped."""
        called = None
        while frame is not None:
            code = frame.f_code
            if _pass.get(id(code)) is code:
                called = code.co_name
            elif not (code is _opaque or code.co_filename.startswith(_relays)
                      or code.co_filename.startswith("<frozen importlib")):
                break
            frame = frame.f_back
        return frame, called

    def origin(frame, _grader=grader_root, _files=trusted_files, _opaque=OPAQUE_CODE):
        """The nearest frame that is the grader's or the student's: library frames (``inspect``,
        ``copy``...) and opaque hooks only relay what that frame asked for."""
        while frame is not None and (frame.f_code is _opaque or (
                trusted(frame.f_code.co_filename)
                and not frame.f_code.co_filename.startswith(_grader)
                and frame.f_code.co_filename not in _files)):
            frame = frame.f_back
        return frame

    checks_root = os.path.join(grader_root, "checks", "")

    def entered_by_a_check(frame, _checks=checks_root) -> bool:
        """Was the grader's code that runs ``frame`` entered from graded code through a public
        check (a function named ``check_...``), with no check's frame further out? So graded
        code that calls a private grading function itself (handing it a reference), or that
        runs a check from inside the answer the check is grading, relays nothing."""
        entry = None
        while frame is not None and trusted(frame.f_code.co_filename):
            if frame.f_code.co_filename.startswith(_checks):
                entry = frame
            frame = frame.f_back
        if entry is None or not entry.f_code.co_name.startswith("check_"):
            return False
        while frame is not None:
            if frame.f_code.co_filename.startswith(_checks):
                return False
            frame = frame.f_back
        return True

    def asks_itself(code, needles, _cache=asking_cache, _names=names_any) -> bool:
        """``code`` is trusted and names one of ``needles`` (cached: both are fixed for a code
        object, which the cache keeps alive so that its id is not reused)."""
        key = (id(code), needles)
        found = _cache.get(key)
        if found is None:
            found = _cache[key] = (code, trusted(code.co_filename) and _names(code, needles))
        return found[1]

    def asked_directly(frame, attribute, _calls=_CALL_OPS, _attributes=_ATTRIBUTE_OPS,
                       _extended=_EXTENDED_ARG, _import=_IMPORT_NAME, _cache_op=_CACHE,
                       _len=len) -> bool:
        """The frame's current instruction is the request itself: a call (of the function that
        raised the event, or of a library function that relays it), or, for ``attribute``,
        the read of that attribute by name. A trusted frame that is evaluating something else
        (a property, ``in``, ``==``, iteration over an object of graded code's, whose
        implementation may be a C-level composition such as ``functools.partial``) did not
        ask."""
        code, lasti = frame.f_code, frame.f_lasti
        raw = code.co_code
        if lasti < 0 or lasti + 1 >= _len(raw):
            return False
        while lasti >= 2 and raw[lasti] == _cache_op:  # a frame that called Python code is
            lasti -= 2  # past its call's inline cache
        op = raw[lasti]
        if attribute is None:
            return op in _calls or op == _import
        if op not in _attributes:
            return False
        argument = raw[lasti + 1]
        if lasti >= 2 and raw[lasti - 2] == _extended:
            argument |= raw[lasti - 1] << 8
        return argument < _len(code.co_names) and code.co_names[argument] == attribute

    def refused_to(frame, needles, attribute=None, *, acting_for: bool = False) -> bool:
        """Is the request graded code's? It is unless the asking frame (past relays) is trusted
        code that names what it asks for (:func:`asks_itself`) and is asking right now
        (:func:`asked_directly`): a trusted function that calls what it was handed (a thread's
        target, a pool's task, a cached property's function, ``partial`` made by graded code)
        or reads an attribute by a name it was given relays graded code's request. With
        ``acting_for``, a library function asking on graded code's behalf (the nearest
        grader-or-student frame is the student's: a debugger's ``settrace``) is refused too."""
        who, called = asker(frame)
        if who is None:  # only relays down to the thread's start: nobody vouches for it
            return True
        if not asks_itself(who.f_code, needles + ((called,) if called else ())):
            return True
        if not asked_directly(who, attribute if who is frame else None):
            return True
        if acting_for:
            found = origin(frame)
            return found is not None and not trusted(found.f_code.co_filename)
        return False

    def scratch_owned(frame, path, _owners=SCRATCH_OWNERS, _pid=made_in,
                      _getpid=os.getpid, _normpath=os.path.normpath, _list=list,
                      _items=dict.items, _type=type, _str=str, _opaque=OPAQUE_CODE,
                      _workers=process_workers.__file__, _recorders=_WORKER_RECORDERS) -> bool:
        """May ``frame`` touch ``path``, in a check's private folder? In this process, only
        from inside the check's call that made the folder (:data:`SCRATCH_OWNERS`), with no
        frame of graded code between: not graded code calling the grader's own functions
        (``ledger._release``, ``process_workers.extra_amount``), on any thread. In a forked
        child, only a worker's own record writers."""
        if _getpid() != _pid:
            who = origin(frame)
            return (who is not None and who.f_code.co_filename == _workers
                    and who.f_code.co_name in _recorders)
        path = _normpath(path)
        owner = None
        for folder, made_by in _list(_items(_owners)):
            if _type(folder) is _str and (path == folder or path.startswith(folder + "/")):
                owner = made_by
                break
        while owner is not None and frame is not None:
            if frame is owner:
                return True
            if not (frame.f_code is _opaque or trusted(frame.f_code.co_filename)):
                return False
            frame = frame.f_back
        return False

    def code_of(function, _type=type, _function=types.FunctionType, _method=types.MethodType):
        """A Python function's (or bound method's) code, read without running its code."""
        if _type(function) is _method:
            function = function.__func__
        return function.__code__ if _type(function) is _function else None

    def harness_trace_stopping(function, _global_trace=global_trace, _depth=tracing_depth,
                               _attribute=object.__getattribute__, _get=dict.get) -> bool:
        """CPython clearing the race detector's trace function that raised to stop its run
        (``_Abort``): the function is a controlled thread's global trace, its run is stopping,
        and (where this Python's thread state can be read) the call comes from inside a trace
        call. Any other ``sys.settrace`` by graded code, even while the detector's own trace
        function is set, is refused: it would hand graded code the scheduler's frames."""
        code = code_of(function)
        if code is None or code is not _global_trace or function.__closure__ is None:
            return False
        try:
            run = function.__closure__[code.co_freevars.index("run")].cell_contents
            stopping = _get(_attribute(run, "__dict__"), "stopping")
        except (ValueError, AttributeError, TypeError):
            return False
        if stopping is not True:
            return False
        depth = _depth()
        return depth is None or depth >= 2  # 1 is this audit hook's own

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

    def installed_file(path, _plain_in=in_folders, _folders=claimed_folders) -> bool:
        return _plain_in(path, _folders)

    def file_bytes(path, _open=io.open) -> bytes | None:
        try:
            with _open(path, "rb") as found:
                return found.read()
        except OSError:
            return None

    def genuine_source(filename, source, _type=type, _bytes=bytes, _str=str) -> bool:
        """``source`` is the very text of the installed file ``filename`` (importlib compiling
        a library module that has no ``.pyc``)."""
        if not installed_file(filename):
            return False
        on_disk = file_bytes(filename)
        if on_disk is None:
            return False
        if _type(source) is _bytes:
            return source == on_disk
        if _type(source) is _str:
            try:
                return source == on_disk.decode("utf-8")
            except UnicodeDecodeError:
                return False
        return False

    def genuine_bytecode(path, data, _type=type, _bytes=bytes, _memory=memoryview) -> bool:
        """``data`` is the body of the installed ``.pyc`` file ``path``."""
        if not installed_file(path):
            return False
        on_disk = file_bytes(path)
        if on_disk is None:
            return False
        if _type(data) is _memory:
            data = _bytes(data)
        return _type(data) is _bytes and on_disk[16:] == data

    def unmarshalled_names(data, _loads=marshal.loads) -> tuple[bool, str | None]:
        """(whether ``data`` unmarshals to anything holding a code object, the first file name
        such a code object claims (:func:`claims`) or None)."""
        try:
            value = _loads(data)
        except Exception:  # noqa: BLE001 - the real call will raise the same error
            return False, None
        return _code_names(value, claims)

    # The hook runs no code of the objects it is handed: exact type checks and C methods only,
    # so a student's object cannot run while the hook is busy (and so not watching).
    def judge(event: str, args: tuple, frame, _type=type, _int=int, _str=str,
              _function=types.FunctionType, _thread_globals=thread_globals,
              _gettrace=sys.gettrace, _getprofile=sys.getprofile,
              _memory=_MEMORY_FILE, _opaque=OPAQUE_CODE, _grader=grader_root,
              _scratch=SCRATCH_PREFIX, _blocked=_BLOCKED_MODULES,
              _by_name=_REFUSED_BY_NAME, _setters=_TRACE_SETTERS, _loaders=_BYTECODE_LOADERS,
              _frame_names=_FRAME_NAMES, _default_names=_DEFAULT_NAMES,
              _ctypes_names=_CTYPES_NAMES, _direct=ctypes_users,
              _owners=SCRATCH_OWNERS) -> str | None:
        if event.startswith("ctypes."):  # the scheduler reads paused frames through ctypes:
            code = frame.f_code
            if _direct.get(id(code)) is code and asked_directly(frame, None):  # the hot path
                return None
            if refused_to(frame, _ctypes_names):
                return event
            if asker(frame)[0] is frame:
                _direct[id(code)] = code
            return None
        if event in _PATH_EVENTS:
            for named in args[:2] if event in _TWO_PATH_EVENTS else args[:1]:
                path = path_text(named)
                unnamed = path is None and _type(named) is not _int and event != "open"
                if unnamed:
                    who = origin(frame)
                    if who is not None and not trusted(who.f_code.co_filename):
                        return "naming a file through an object that is not a path string"
                elif path is not None and _scratch in path and not scratch_owned(frame, path):
                    return f"touching the grader's own records ({path})"
            if event not in ("open", "os.symlink"):
                return None
            path = text(args[0])
            if path is None:
                who = asker(frame)[0]
                if _type(args[0]) is _int or (who is not None
                                               and trusted(who.f_code.co_filename)):
                    return None
                return "opening a file through an object that is not a path string"
            if _memory.search(path) or (event == "os.symlink" and "/proc" in path):
                return f"opening {path}" if event == "open" else f"a link to {path}"
            return None
        if event == REFERENCE_EVENT:
            caller = frame.f_back
            name = args[0] if args and _type(args[0]) is _str else "?"
            if caller is None or not caller.f_code.co_filename.startswith(_grader) \
                    or not names_any(caller.f_code, _REFERENCE_NAMES) \
                    or not entered_by_a_check(caller):
                return f"calling the grader's reference answer {name}"
            return None
        if event in _PROGRAM_EVENTS:
            who = origin(frame)
            if _owners and (who is None or not trusted(who.f_code.co_filename)):
                return f"starting a program ({event}) while a check runs"
            return None
        if event == "object.__getattr__" and args[1] in _DEFAULT_FIELDS:
            target = args[0]
            if _type(target) is _function and target.__code__ is _opaque \
                    and refused_to(frame, _default_names, args[1], acting_for=True):
                return f"reading the grader's hidden references (.{args[1]} of a hook)"
            return None
        if event == "object.__getattr__":
            if refused_to(frame, _frame_names + (args[1],), args[1]):
                return f"reading .{args[1]}"
            return None
        if event in _FRAME_EVENTS:
            return event if refused_to(frame, _frame_names) else None
        if event == "import":
            filename = args[1] if len(args) > 1 else None
            if filename is not None and not installed_file(text(filename)):
                return f"loading native code from {text(filename) or '(unnamed)'}"
            if args[0] in _blocked and refused_to(frame, (args[0],)):
                return f"import {args[0]}"
            return None
        if event == "object.__setattr__":
            target, name = args[0], args[1]
            if isinstance(target, type) and _grader_class(target):
                who = origin(frame)
                if who is not None and not trusted(who.f_code.co_filename):
                    return f"changing the grader's class {target.__qualname__}.{name}"
            if (name in _FUNCTION_FIELDS and _type(target) is _function
                    and trusted(target.__code__.co_filename)
                    and refused_to(frame, (name,), acting_for=True)):
                return f"changing {target.__qualname__}.{name}"
            return None
        if event == "compile":
            filename = text(args[1])
            if claims(filename) and not genuine_source(filename, args[0]):
                return (f"compiling code under the file name {filename}, which belongs to the "
                        "grader or an installed library")
            return None
        if event == "marshal.loads":
            code = frame.f_code
            if (code.co_filename, code.co_name) in _loaders:  # an import reading a .pyc file
                if genuine_bytecode(frame.f_locals.get("bytecode_path"), args[0]):
                    return None
                found = unmarshalled_names(args[0])[1]
                if found is not None:
                    return f"loading compiled code that claims the file name {found}"
                return None
            if refused_to(frame, ("marshal",), acting_for=True) \
                    and unmarshalled_names(args[0])[0]:
                return "unmarshalling code objects (marshal.loads)"
            return None
        if event in _setters:
            current = _gettrace() if event == "sys.settrace" else _getprofile()
            if not (event == "sys.settrace" and harness_trace_stopping(current)) \
                    and refused_to(frame, _setters[event], acting_for=True):
                return event
            for name in ("_trace_hook", "_profile_hook"):
                hook = _thread_globals.get(name)
                code = code_of(hook)
                if hook is not None and (code is None or not (
                        code is _opaque or code.co_filename.startswith(_grader))):
                    return f"a thread {name.strip('_').replace('_', ' ')} of graded code"
            return None
        if event == "code.__new__":
            filename = text(args[1]) if len(args) > 1 else None
            if refused_to(frame, _by_name[event]) or (
                    claims(filename) and refused_to(frame, _by_name[event], acting_for=True)):
                return (f"making a code object under {filename}" if claims(filename)
                        else event)
            return None
        if event in _by_name:  # object walks, audit hooks of its own, marshal.load
            return event if refused_to(frame, _by_name[event], acting_for=True) else None
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


def watch_builtins(_builtins=builtins) -> Callable[[], list[str]]:
    """A function naming every write into the builtins' dictionary since it was last called.

    ``builtins.sum = lying_sum`` (or ``vars(builtins)['len'] = ...``) done by an answer while
    a check runs, and put back before the check returns, leaves every builtin as it was when
    the test cell ends: comparing values afterwards finds nothing, while the check has summed
    with the answer's function. The dictionary's PEP 509 version changes on every write, even
    one that puts the same value back (:func:`autograder.kernel.object_internals
    .dict_version`), and no honest answer writes a builtin. Call it when the grader's names
    are remembered, then after every cell that may have run graded code: each write is named
    once. Returns ``[]`` always where this Python's dictionary layout is not known.
    """
    from autograder.kernel.object_internals import dict_version

    namespace = vars(_builtins)
    state = [dict_version(namespace), dict(namespace)]
    missing = object()

    def written(_version=dict_version, _namespace=namespace, _state=state, _dict=dict,
                _type=type, _str=str, _sorted=sorted, _missing=missing) -> list[str]:
        now = _version(_namespace)
        if now is None or now == _state[0]:
            return []
        before, current = _state[1], _dict(_namespace)
        _state[0], _state[1] = now, current
        changed = [key for key in (*before, *current) if _type(key) is _str
                   and before.get(key, _missing) is not current.get(key, _missing)]
        if changed:
            return [f"builtins.{key} was replaced, added or deleted"
                    for key in _sorted(set(changed))[:5]]
        return ["a builtin was written while graded code ran (and perhaps put back)"]

    return written


def imported_in_functions(modules: Iterable[types.ModuleType]) -> list[types.ModuleType]:
    """The library modules that ``import`` statements inside the functions of ``modules``
    name (``import tensorflow as tf`` in a check's body), as loaded now.

    ``seal._library_names`` finds the libraries a grader module holds as globals; a module
    imported inside a function is not one, so its names were neither sealed nor watched:
    ``tf.config.run_functions_eagerly``, which lesson 03's explored counter check calls,
    could be swapped while the check ran (or written into ``vars(tf.config)`` and put back)
    and nothing named it. Adding these modules to the ones that function walks closes that.
    Modules of the grader's own (``autograder.*``) and modules not imported yet are left out;
    ``from a.b import c`` names ``a.b`` (and ``a``), and ``c`` when it is a module.
    """
    found: dict[str, types.ModuleType] = {}
    for module in modules:
        pending = [value.__code__ for value in vars(module).values()
                   if isinstance(value, types.FunctionType)]
        pending += [member.__code__ for value in vars(module).values()
                    if isinstance(value, type) and value.__module__ == module.__name__
                    for member in vars(value).values() if isinstance(member, types.FunctionType)]
        seen: set[int] = set()
        while pending:
            code = pending.pop()
            if id(code) in seen:
                continue
            seen.add(id(code))
            pending.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
            imported = None
            for instruction in dis.get_instructions(code):
                if instruction.opname == "IMPORT_NAME":
                    imported = str(instruction.argval)
                    parts = imported.split(".")
                    names = [".".join(parts[:n]) for n in range(1, len(parts) + 1)]
                elif instruction.opname == "IMPORT_FROM" and imported is not None:
                    names = [f"{imported}.{instruction.argval}"]
                else:
                    continue
                for name in names:
                    library = sys.modules.get(name)
                    if isinstance(library, types.ModuleType) and not name.startswith("autograder"):
                        found.setdefault(name, library)
    return list(found.values())


def _code_names(value: object, claims: Callable[[object], bool]) -> tuple[bool, str | None]:
    """(whether ``value``, as ``marshal`` made it, holds a code object; the first file name one
    of its code objects claims, or None). Only the built-in containers marshal makes are
    walked, with exact type checks, so no code of the value's runs."""
    pending, seen, found_code, count = [(value, 0)], set(), False, 0
    containers = (tuple, list, set, frozenset)
    while pending and count < _MARSHAL_ITEMS:
        item, depth = pending.pop()
        count += 1
        kind = type(item)
        if kind is types.CodeType:
            found_code = True
            if claims(item.co_filename):
                return True, item.co_filename
            if depth < _MARSHAL_DEPTH:
                pending.extend((c, depth + 1) for c in item.co_consts)
        elif kind in containers and depth < _MARSHAL_DEPTH and id(item) not in seen:
            seen.add(id(item))
            pending.extend((c, depth + 1) for c in kind.__iter__(item))
        elif kind is dict and depth < _MARSHAL_DEPTH and id(item) not in seen:
            seen.add(id(item))
            for key, entry in dict.items(item):
                pending.extend(((key, depth + 1), (entry, depth + 1)))
    return found_code, None


def _global_trace_code(tracing: types.ModuleType) -> types.CodeType | None:
    """The code of a controlled thread's global trace function (``global_trace`` in
    :meth:`autograder.harness.tracing.Tracing._make_global_trace`)."""
    for constant in tracing.Tracing._make_global_trace.__code__.co_consts:
        if isinstance(constant, types.CodeType) and constant.co_name == "global_trace":
            return constant
    return None


def _tracing_depth_reader() -> Callable[[], int | None]:
    """A function reading the running thread's ``tstate->tracing`` (how many trace or audit
    calls it is inside), or returning None where CPython 3.11's thread state layout is not
    confirmed by a self-test. CPython clears a trace function that raised from inside the
    trace call (depth 2 in the audit hook, which runs at depth 1 of its own)."""
    if sys.version_info[:2] != (3, 11):
        return lambda: None
    try:
        import ctypes

        current = ctypes.pythonapi.PyThreadState_Get
        current.restype = ctypes.c_void_p
        current.argtypes = []
        offset = 3 * ctypes.sizeof(ctypes.c_void_p) + 5 * ctypes.sizeof(ctypes.c_int)
        field = ctypes.c_int.from_address

        def depth(_current=current, _field=field, _offset=offset) -> int:
            return _field(_current() + _offset).value

        seen: list[int] = []

        def probe(frame, event, arg):
            seen.append(depth())

        outside = depth()
        previous = sys.gettrace()
        sys.settrace(probe)
        try:
            (lambda: None)()
        finally:
            sys.settrace(previous)
        if outside == 0 and seen and seen[0] == 1:
            return depth
    except Exception:  # noqa: BLE001 - any surprise means the layout is not the one we know
        pass
    return lambda: None


def _grader_class(cls: type, _module=type.__dict__["__module__"]) -> bool:
    """A class a grader module defines (its module read without running the class's code)."""
    try:
        module = _module.__get__(cls)
    except (AttributeError, TypeError):
        return False
    return type(module) is str and module.startswith("autograder.")


def _frame_returning_codes() -> list[types.CodeType]:
    """The code of each function in :data:`_FRAME_RETURNING`, and of the generators defined
    inside it (``StackSummary.extract`` walks the stack through one of its own)."""
    codes = []
    for module_name, name in _FRAME_RETURNING:
        found = sys.modules.get(module_name)
        for part in name.split("."):
            found = getattr(found, part, None)
        code = getattr(found, "__code__", None)
        pending = [code] if code is not None else []
        while pending:
            code = pending.pop()
            codes.append(code)
            pending.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    return codes
