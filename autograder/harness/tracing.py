"""Where a controlled thread stops: the trace functions that make decision points of its code.

A thread's global trace function sorts each frame's code (:mod:`.codemap`): user code is
traced per instruction and stops before every instruction other threads can see; plumbing is
watched line by line for a call that would block; library code runs atomically. The methods
here are :class:`Tracing`'s, a base class of :class:`~autograder.harness.scheduler.Run`.
"""

from __future__ import annotations

import _thread
import concurrent.futures
import queue
import threading
import time
import types
from collections.abc import Callable
from typing import Any

from . import codemap, frames, primitives, tamper
from .runstate import _FINISHED, _Abort, _Thread

_IMMUTABLE = frozenset({int, float, bool, str, bytes, complex, type(None)})
_IMMUTABLE_CONTAINERS = _IMMUTABLE | {tuple, range, frozenset}
_LOCAL_ITERATORS = frozenset({type(iter(range(1))), type(iter(())), type(iter("")),
                              type(iter(b""))})
_MISSING = object()
# Values code reads but does not rebind while threads run: reading them is not a decision point.
_UNSHARED_VALUES = (
    types.ModuleType, types.FunctionType, types.MethodType, types.BuiltinFunctionType, type,
    _thread.LockType, _thread.RLock, threading.Condition, threading.Semaphore, threading.Event,
    threading.Barrier, threading.Thread, queue.Queue, queue.SimpleQueue,
    concurrent.futures.Executor, primitives.OwnedLock,
)
_PURE_BUILTINS = frozenset({
    abs, min, max, divmod, round, pow, hash, repr, format, chr, ord, bin, hex, oct,
    object, int, float, str, bytes, bool, complex, tuple, frozenset, list, dict, set, range,
    isinstance, issubclass, type,
})
_THREAD_START = threading.Thread.start.__code__
_SLEEP = time.sleep


class Tracing:
    """The trace functions of a :class:`~autograder.harness.scheduler.Run`'s threads."""

    def _make_global_trace(self, me: _Thread) -> Callable:
        infos = self.infos
        glue = self.glue
        run = self

        def atomic_local(frame: types.FrameType, event: str, arg: Any) -> Any:
            if event == "return":
                me.atomic = False
                if me.native or run.current is not me:
                    run._rejoin(me)
            return atomic_local

        def global_trace(frame: types.FrameType, event: str, arg: Any) -> Any:
            if run.stopping or (me.atomic and not run.callbacks):
                return None
            code = frame.f_code
            entry = infos.get(id(code))
            info = entry[1] if entry is not None else codemap.info(code)
            if me.atomic:
                if info.kind != codemap.USER:
                    return None
                # User code a library call runs (a tf.function's Python body run eagerly):
                # its visible instructions are decision points like any user code's.
                frame.f_trace_lines = False
                frame.f_trace_opcodes = True
                return run._user_local(me, info.ops)
            if id(code) in glue:
                return None  # no decision points here; the user code it calls has its own
            if info.kind == codemap.LIBRARY:
                me.atomic = True
                frame.f_trace_lines = False
                return atomic_local
            if info.kind == codemap.PLUMBING:
                frame.f_trace_lines = True
                frame.f_trace_opcodes = False
                if code is _THREAD_START:
                    return run._starting(me, frame)
                return run._plumbing_local(me, info)
            frame.f_trace_lines = False
            frame.f_trace_opcodes = True
            return run._user_local(me, info.ops)

        return global_trace

    def _user_local(self, me: _Thread, ops: list) -> Callable:
        visible = self._visible

        def local(frame: types.FrameType, event: str, arg: Any) -> Any:
            if event == "opcode":
                op = ops[frame.f_lasti >> 1]
                if op is not None:
                    visible(me, frame, op)
            return local

        return local

    def _plumbing_local(self, me: _Thread, info: codemap.CodeInfo) -> Callable:
        """Plumbing is watched line by line, and per instruction only on lines that may block."""
        ops, blocking_lines = info.ops, info.blocking_lines

        def local(frame: types.FrameType, event: str, arg: Any) -> Any:
            if event == "line":
                frame.f_trace_opcodes = frame.f_lineno in blocking_lines and not me.starting
            elif event == "opcode":
                op = ops[frame.f_lasti >> 1]
                if op is not None:
                    wait = self._blocking(me, frame, op)
                    if wait is not None:
                        self._pause(me, frame, wait)
            return local

        return local

    def _starting(self, me: _Thread, frame: types.FrameType) -> Callable:
        """Trace ``Thread.start``: announce the child, and return once it has checked in.

        Until the child checks in it runs uncontrolled (setting up, then telling ``start`` it
        is alive), so inside ``start`` the parent simply blocks for real.
        """
        thread = frame.f_locals.get("self")
        arrived = tamper.allocate_lock()
        arrived.acquire()
        with self.mutex:
            self.pending[id(thread)] = (thread, me, arrived)
        me.starting += 1

        def local(frame: types.FrameType, event: str, arg: Any) -> Any:
            if event == "return":
                me.starting -= 1
                self._await_check_in(thread, arrived)
                return None
            return local

        return local

    def _await_check_in(self, thread: threading.Thread, arrived: Any) -> None:
        started = getattr(thread, "_started", None)
        if started is None or not started.is_set():
            with self.mutex:
                self.pending.pop(id(thread), None)  # start() failed: no child is coming
            return
        if not arrived.acquire(timeout=max(0.0, self.deadline - tamper.monotonic())):
            raise _Abort

    def _visible(self, me: _Thread, frame: types.FrameType, op: tuple) -> None:
        if self.stopping:
            raise _Abort
        category = op[0]
        if category == codemap.LOOP:
            return
        me.expect_native = False
        wait = None
        if category == codemap.CALL:
            function, wait = primitives.at_call(frame, op[1], op[2], self._finished_thread,
                                                self.glue)
            if wait is None:
                stand_in = self.stand_ins.get(id(function)) if self.stand_ins else None
                if stand_in is not None and primitives.call_stand_in(frame, op[1], stand_in):
                    function = stand_in
                if function is _SLEEP or (type(function) is types.FunctionType
                                          and vars(function).get("__wrapped__") is _SLEEP):
                    me.expect_native = True
                    me.yielding = True
                elif _invisible_call(frame, function, op[1]):
                    return
        elif category == codemap.WITH:
            if primitives.elide_traced_lock(frame):
                return
            wait = primitives.at_with(frame)
        elif category == codemap.GLOBAL:
            name = op[1]
            value = frame.f_globals.get(name, frame.f_builtins.get(name))
            if isinstance(value, _UNSHARED_VALUES):
                return
        elif category == codemap.ATTR:
            if _unshared_attribute(frames.peek(frame, 0), op[1]):
                return
        elif category == codemap.OPERANDS:
            if all(type(frames.peek(frame, i)) in _IMMUTABLE for i in range(op[1])):
                return
        elif category == codemap.CONTAINER:
            if type(frames.peek(frame, op[1])) in _IMMUTABLE_CONTAINERS:
                return
        elif category == codemap.ITERATOR:
            if type(frames.peek(frame, 0)) in _LOCAL_ITERATORS:
                return
        try:
            self._pause(me, frame, wait)
        finally:
            me.yielding = False

    def _blocking(self, me: _Thread, frame: types.FrameType, op: tuple) -> Any:
        if self.stopping:
            raise _Abort
        if op[0] == codemap.CALL:
            wait = primitives.at_call(frame, op[1], op[2], self._finished_thread,
                                      self.glue)[1]
        else:  # a lock a primitive takes inside itself is never elided: it is the primitive
            wait = primitives.at_with(frame)
        if wait is None or wait.ready():
            return None
        return wait

    def _finished_thread(self, thread: object) -> bool | None:
        controlled = self.by_thread.get(id(thread))
        return None if controlled is None else controlled.status == _FINISHED


def _unshared_attribute(owner: object, name: str) -> bool:
    """Reading this attribute cannot race: a module's, or one holding a primitive or function.

    Code rebinds attributes that hold data, not the lock or queue guarding it, so a read of
    the latter needs no decision point of its own (the next visible instruction has one).
    """
    if isinstance(owner, types.ModuleType):
        return True
    try:
        value = vars(owner).get(name, _MISSING)
    except TypeError:
        return False
    return isinstance(value, _UNSHARED_VALUES)


def _invisible_call(frame: types.FrameType, function: object, count: int) -> bool:
    """A call other threads cannot observe: into user code (its own instructions are the
    decision points), or a pure builtin on immutable arguments (``max(a, b)``, ``object()``)."""
    if isinstance(function, (types.FunctionType, types.MethodType)):
        return codemap.info(_code_of(function)).kind == codemap.USER
    if function in _PURE_BUILTINS:
        return all(type(frames.peek(frame, i)) in _IMMUTABLE_CONTAINERS for i in range(count))
    return False


def _code_of(function: Any) -> types.CodeType:
    if isinstance(function, types.CodeType):
        return function
    return (function.__func__ if isinstance(function, types.MethodType) else function).__code__


#: The code objects Python 3.11 makes for comprehensions, run at once inside their function
#: (3.12 inlines them, PEP 709). Generator expressions, lambdas and nested functions are not
#: among them: they may run later, from other code.
_COMPREHENSIONS = frozenset({"<listcomp>", "<setcomp>", "<dictcomp>"})


def glue_codes(function: Any) -> list[types.CodeType]:
    """The code of a glue function and, when it is the grader's own (a file of its package,
    which graded code cannot claim), of the comprehensions in it: none has decision points (a
    snapshot of the live threads is one step, however many threads the process holds). An
    answer's function made glue (lesson 08's ``__init__``) keeps its comprehensions' decision
    points: a code object's name and arguments are the answer's to forge."""
    code = _code_of(function)
    if not code.co_filename.startswith(tamper.GRADER_DIR):
        return [code]
    found, todo = [], [code]
    while todo:
        code = todo.pop()
        found.append(code)
        todo.extend(c for c in code.co_consts
                    if isinstance(c, types.CodeType) and c.co_name in _COMPREHENSIONS)
    return found
