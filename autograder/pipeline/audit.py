"""The PEP 578 audit hook that refuses graded code the introspection escape hatches.

:func:`make_audit_hook` builds the hook the runner adds before the first student cell runs (an
audit hook cannot be removed once added). It refuses, to code compiled from the notebook, frame
objects (``sys._getframe``, ``inspect.currentframe``, ``tb_frame``, ``gi_frame``...),
object-graph walks (``gc.get_objects``/``get_referrers``/``get_referents``), ``ctypes``, trace
and profile hooks other than the harness's, audit hooks of its own, new code objects, code
compiled under the grader's file names, writes to the grader's functions, the checks' own
records (:data:`autograder.harness.tamper.SCRATCH_PREFIX`) and process memory
(``/proc/*/mem``). A refused call raises :class:`TamperingError` in the student's code and is
recorded, so the exercise scores 0 as ``tampered`` even when the student catches the error.
The hook takes every reference it uses when it is made (default arguments), so rebinding a
module global or a builtin later does not change its judgement. Code is the student's when its
file is outside :func:`trusted_roots`.
"""

from __future__ import annotations

import _thread
import os
import pathlib
import re
import sys
import sysconfig
import types
from collections.abc import Callable, Iterable

from autograder.pipeline.kernel_guard import TamperingError

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
            if isinstance(target, type) and _grader_class(target):
                who = origin(frame)
                if who is not None and not trusted(who.f_code.co_filename):
                    return f"changing the grader's class {target.__qualname__}.{name}"
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
