"""One controlled run: real threads that take turns, one at a time, as a strategy decides.

Each worker runs on its own thread, but only the thread holding the *turn* executes Python code;
the others wait on a private gate. A trace function (``sys.settrace`` with opcode events) stops
the running thread before every instruction of user code that other threads could see, and asks
the strategy which thread runs next. Library code runs atomically. Before a call or ``with``
that would block on a real lock, the thread is parked as blocked instead (see
``primitives``), so a thread never blocks while holding the turn; when every live thread is
blocked, that is a deadlock. Threads that user code starts (``threading.Thread``,
``ThreadPoolExecutor``) are adopted when they start and scheduled like the workers.

The strategy's choices, numbered by step, are all that is needed to repeat a run exactly.
"""

from __future__ import annotations

import _thread
import concurrent.futures
import queue
import threading
import time
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from . import access, codemap, frames, primitives, report, tamper

_RUNNABLE, _FINISHED = "runnable", "finished"
# How long a turn holder may sit in native code, using no CPU, before others run meanwhile.
NATIVE_STALL_S = 0.5
# How long a run that looks deadlocked is watched for a release by an uncontrolled thread.
_DEADLOCK_GRACE_S = 0.03
#: Fairness: a thread that has run ``FAIR_STEPS`` steps in a row while another could run is
#: set aside for between one and two times as many steps (it runs only if no other thread can),
#: as a real scheduler's time slice would. Without it, a spin or try-lock loop can starve the
#: thread it waits for forever (the run would end in "timeout"). The length varies with the step
#: (deterministically, so runs replay), so that a loop is not set aside at the same unlucky
#: point of its cycle every time. The searched space is therefore the fair schedules: none lets
#: one thread run more than ``FAIR_STEPS`` steps while another waits to run.
FAIR_STEPS = 200
#: How many times per run a thread's timed ``lock.acquire(timeout=...)`` (in user code) may be
#: made to give up while another thread holds the lock, as a schedule choice. Code that ignores
#: a failed acquire needs one to break; a retry loop stays a finite search. (When no thread can
#: move at all, a timed wait still gives up, as often as it comes to that.)
GIVE_UPS = 1
_POLL_S = 0.001
_WATCH_S = 0.02
_TRACE_LIMIT = 20_000

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
_ACTIVE_THREADS = threading._active  # ident -> Thread, filled in before a thread's run()


class Strategy(Protocol):
    """Chooses which thread runs at each step of a run."""

    def choose(self, step: int, current: int | None, runnable: list[int]) -> int:
        """Pick one of ``runnable`` (sorted thread indices).

        ``current`` is the thread that just ran when it could go on, else None.
        """


class _Abort(BaseException):
    """Raised inside a controlled thread to stop it (deadlock, timeout, error elsewhere)."""


@dataclass
class Step:
    """One recorded decision point: which thread was about to do what, where."""

    step: int
    thread: int
    filename: str
    lineno: int
    function: str
    note: str = ""
    access: access.Access = access.NOTHING


@dataclass
class Outcome:
    """How a run ended.

    Attributes:
        kind: ``"done"``, ``"error"``, ``"deadlock"`` or ``"timeout"``.
        names: Thread names by index.
        switches: ``(step, thread)`` for every decision that changed the running thread.
        steps: Decision points, in order (capped).
        error: The exception for ``"error"``, and ``error_thread`` its thread.
        detail: Extra words (deadlock stacks, what was blocked, divergence).
        blocked: Index -> what it waited for, at a deadlock or timeout.
        tampering: Problems found (tracing switched off by user code and the like).
        last_step: The number of decision points.
    """

    kind: str = "done"
    names: list[str] = field(default_factory=list)
    switches: list[tuple[int, int]] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    error: BaseException | None = None
    error_thread: int | None = None
    detail: str = ""
    blocked: dict[int, str] = field(default_factory=dict)
    tampering: list[str] = field(default_factory=list)
    last_step: int = 0


class _Thread:
    """The scheduler's view of one controlled thread."""

    def __init__(self, index: int, name: str, *, spawned: bool = False,
                 thread: threading.Thread | None = None):
        self.index = index
        self.name = name
        self.spawned = spawned
        self.thread = thread
        self.daemon = bool(thread is not None and thread.daemon)
        self.gate = tamper.allocate_lock()
        self.gate.acquire()
        self.ident: int | None = None
        self.status = _RUNNABLE
        self.wait: primitives.Wait | None = None
        self.blocked_on = ""
        self.timed_out = False
        self.given_up = 0  # timed acquires this thread was made to give up as a choice
        self.atomic = False
        self.native = False
        self.expect_native = False
        self.parked = True
        self.detached = False
        self.starting = 0
        self.global_trace: Callable | None = None


class Run:
    """Runs ``workers`` on ``state`` once, under ``strategy``; see :meth:`execute`."""

    def __init__(self, state: Any, workers: Sequence[Callable[[Any], Any]],
                 strategy: Strategy, deadline: float, *, callbacks: bool = False,
                 glue: Sequence[Callable[..., Any]] = ()):
        self.state = state
        #: Trace user code that library code calls back (see :func:`explore`'s ``callbacks``).
        self.callbacks = callbacks
        #: Code run without decision points of its own (see :func:`explore`'s ``glue``).
        self.glue_code = tuple(_code_of(function) for function in glue)
        self.glue = frozenset(id(code) for code in self.glue_code)
        self.workers = list(workers)
        self.strategy = strategy
        self.deadline = deadline
        self.mutex = tamper.allocate_lock()
        self.done = tamper.allocate_lock()
        self.done.acquire()
        self.finished_signal = False
        self.threads: list[_Thread] = []
        self.current: _Thread | None = None
        self.stopping = False
        # True while a thread chooses the next turn; it naps with the mutex released then,
        # and nobody else may hand the turn over or take it meanwhile.
        self.choosing = False
        self.step = 0
        self.run_index: int | None = None  # the thread that ran the last steps, and how many
        self.run_length = 0
        self.set_aside: dict[int, int] = {}  # thread index -> step until which others go first
        self.pending: dict[int, tuple[threading.Thread, _Thread, Any]] = {}
        self.by_thread: dict[int, _Thread] = {}
        self.exited: list[Any] = []
        self.outcome = Outcome()
        self.infos = codemap.harness_cache()
        self.previous_excepthook: Callable = threading.__excepthook__
        self.main_ident: int | None = None
        self.outside_before: dict[int, int] = {}

    # ------------------------------------------------------------------ main thread
    def execute(self) -> Outcome:
        """Run every thread to the end (or to a deadlock, error or the deadline)."""
        self.main_ident = tamper.get_ident()
        self.outside_before = _outside_user_frames({self.main_ident})
        previous_hook = tamper.threading_gettrace()
        previous_excepthook = self.previous_excepthook = threading.excepthook
        # Code under test can read both hooks: they must not lead back to this run.
        excepthook = tamper.opaque(self._excepthook)
        tamper.threading_settrace(tamper.opaque(self._spawn_hook))
        threading.excepthook = excepthook
        try:
            self._start_workers()
            self._watch()
        except BaseException:
            self._stop("timeout", "the run was interrupted")
            raise
        finally:
            self._wait_for_exit()
            tamper.threading_settrace(previous_hook)
            if threading.excepthook is excepthook:
                threading.excepthook = previous_excepthook
        self.outcome.names = [t.name for t in self.threads]
        self.outcome.last_step = self.step
        return self.outcome

    def _start_workers(self) -> None:
        arrived = []
        for index in range(len(self.workers)):
            worker = _Thread(index, f"worker {index}")
            worker.global_trace = self._make_global_trace(worker)
            self.threads.append(worker)
            checked_in = tamper.allocate_lock()
            checked_in.acquire()
            arrived.append(checked_in)
            exited = tamper.allocate_lock()
            exited.acquire()
            self.exited.append(exited)
            tamper.start_new_thread(self._worker_main, (worker, checked_in, exited))
        for checked_in in arrived:
            if not checked_in.acquire(timeout=max(0.0, self.deadline - tamper.monotonic())):
                self._stop("timeout", "The worker threads did not even start in time.")
                return
        with self.mutex:
            try:
                self._hand_over(None, can_continue=False)
            except _Abort:
                return

    def _watch(self) -> None:
        last = (None, -1)
        since = tamper.monotonic()
        cpu = None
        while not self.done.acquire(timeout=_WATCH_S):
            now = tamper.monotonic()
            if now > self.deadline:
                self._stop("timeout", "")
                return
            with self.mutex:
                holder = self.current
                if (holder is None or self.stopping or self.choosing or holder.native
                        or holder.expect_native):
                    last, since, cpu = (None, -1), now, None
                    continue
                if (holder, self.step) != last:
                    last, since, cpu = (holder, self.step), now, _cpu_time(holder.ident)
                    continue
                if now - since < NATIVE_STALL_S:
                    continue
                used = _cpu_time(holder.ident)
                if cpu is not None and used is not None and used - cpu > 0.01 * (now - since):
                    last, since, cpu = (holder, self.step), now, used
                    continue
                holder.native = True
                try:
                    self._hand_over(holder, can_continue=False)
                except _Abort:
                    return
                last, since, cpu = (None, -1), now, None

    def _wait_for_exit(self) -> None:
        end = tamper.monotonic() + 1.0
        for exited in self.exited:
            exited.acquire(timeout=max(0.0, end - tamper.monotonic()))
        for thread in self.threads:
            if thread.spawned and thread.thread is not None and not thread.detached:
                thread.thread.join(max(0.0, end - tamper.monotonic()))

    # ------------------------------------------------------------------ worker threads
    def _worker_main(self, me: _Thread, checked_in: Any, exited: Any) -> None:
        me.ident = tamper.get_ident()
        checked_in.release()
        me.gate.acquire()
        try:
            if self.stopping:
                return
            tamper.settrace(me.global_trace)
            try:
                self.workers[me.index](self.state)
            except _Abort:
                pass
            except BaseException as error:  # the worker's failure is the finding
                self._record_error(me, error)
            finally:
                still_traced = tamper.gettrace() is me.global_trace
                tamper.settrace(None)
                if not still_traced and not self.stopping:
                    self.outcome.tampering.append(
                        f"{me.name} switched off the race detector's tracing "
                        "(sys.settrace was called by the code under test)")
            self._finish(me)
        finally:
            exited.release()

    def _spawn_hook(self, frame: types.FrameType, event: str, arg: Any) -> Any:
        thread = _ACTIVE_THREADS.get(tamper.get_ident())
        with self.mutex:
            entry = self.pending.pop(id(thread), None) if thread is not None else None
            if entry is not None and self.stopping:
                entry[2].release()
            if entry is None or self.stopping:
                tamper.settrace(None)
                return None
            parent, arrived = entry[1], entry[2]
            me = _Thread(len(self.threads), f"thread {len(self.threads)} "
                         f"(started by {parent.name})", spawned=True, thread=thread)
            me.ident = tamper.get_ident()
            me.global_trace = self._make_global_trace(me)
            me.parked = True
            self.threads.append(me)
            self.by_thread[id(thread)] = me
        arrived.release()
        tamper.settrace(me.global_trace)
        me.gate.acquire()
        if self.stopping:
            raise _Abort
        inner = me.global_trace(frame, event, arg)

        def top(frame: types.FrameType, event: str, arg: Any) -> Any:
            nonlocal inner
            if inner is not None:
                inner = inner(frame, event, arg)
            if event == "return":
                tamper.settrace(None)
                self._finish(me)
                return None
            return top

        return top

    def _excepthook(self, args: Any) -> None:
        if isinstance(args.exc_value, _Abort):
            return
        thread = self.by_thread.get(id(args.thread))
        if thread is None:
            return self.previous_excepthook(args)
        self._record_error(thread, args.exc_value)
        return None

    # ------------------------------------------------------------------ tracing
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
            function, wait = primitives.at_call(frame, op[1], op[2], self._finished_thread)
            if wait is None:
                if _invisible_call(frame, function, op[1]):
                    return
                if function is _SLEEP:
                    me.expect_native = True
        elif category == codemap.WITH:
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
        self._pause(me, frame, wait)

    def _blocking(self, me: _Thread, frame: types.FrameType, op: tuple) -> Any:
        if self.stopping:
            raise _Abort
        if op[0] == codemap.CALL:
            wait = primitives.at_call(frame, op[1], op[2], self._finished_thread)[1]
        else:
            wait = primitives.at_with(frame)
        if wait is None or wait.ready():
            return None
        return wait

    def _finished_thread(self, thread: object) -> bool | None:
        controlled = self.by_thread.get(id(thread))
        return None if controlled is None else controlled.status == _FINISHED

    # ------------------------------------------------------------------ turns
    def _pause(self, me: _Thread, frame: types.FrameType, wait: Any) -> None:
        """A decision point in ``me``; returns when ``me`` may execute the instruction.

        ``wait`` is the readiness test of an instruction that may block (else None). It is
        tested again every time ``me`` gets the turn back: the lock may have been taken while
        ``me`` was preempted.
        """
        while True:
            blocked = wait is not None and not wait.ready()
            with self.mutex:
                if self.stopping:
                    raise _Abort
                if self.current is not me or self.choosing:
                    me.native = False
                else:
                    me.wait = wait if blocked else None
                    where = frame
                    if blocked:
                        where, me.blocked_on = _blocked_where(frame, wait)
                    self._record(me, where, f"blocked: {me.blocked_on}" if blocked else "")
                    chosen = self._hand_over(me, can_continue=not blocked)
                    if chosen is None:
                        raise _Abort
                    if chosen is me:
                        me.wait = None
                        if me.timed_out or not blocked or wait.ready():
                            self._timed_out_now(me, frame, wait)
                            return
                        continue
                me.parked = True
            me.gate.acquire()
            if me.detached:
                tamper.settrace(None)
                return
            if self.stopping:
                raise _Abort
            if wait is None or me.timed_out or wait.ready():
                me.wait = None
                self._timed_out_now(me, frame, wait)
                return

    def _timed_out_now(self, me: _Thread, frame: types.FrameType | None = None,
                       wait: Any = None) -> None:
        """A timed wait given up on: a user-code ``acquire`` gets timeout 0 and returns False
        at once; any other real call sleeps out its timeout, with the turn."""
        if me.timed_out:
            me.timed_out = False
            if (wait is not None and wait.give_up is not None and frame is not None
                    and not wait.ready() and wait.give_up(frame)):
                return
            me.expect_native = True

    def _rejoin(self, me: _Thread) -> None:
        """``me`` comes back from native code it was stuck in; wait for a turn."""
        with self.mutex:
            me.native = False
            if self.stopping or (self.current is me and not self.choosing):
                return
            me.parked = True
        me.gate.acquire()
        if self.stopping:
            raise _Abort

    def _record(self, me: _Thread, frame: types.FrameType | None, note: str) -> None:
        if len(self.outcome.steps) < _TRACE_LIMIT:
            if frame is None:
                self.outcome.steps.append(Step(self.step + 1, me.index, "", 0, "", note))
                return
            code = frame.f_code
            self.outcome.steps.append(Step(self.step + 1, me.index, code.co_filename,
                                           frame.f_lineno or code.co_firstlineno,
                                           code.co_name, note,
                                           access.NOTHING if note else access.describe(frame)))

    def _hand_over(self, me: _Thread | None, *, can_continue: bool) -> _Thread | None:
        """Choose who runs next and give them the turn. Call with the mutex held."""
        self.step += 1
        self.choosing = True
        try:
            chosen = self._choose(me, can_continue)
        finally:
            self.choosing = False
        # ``me`` may have parked while the watcher chose for it; a parked thread needs its gate.
        if chosen is None or (chosen is me and not me.parked):
            return chosen
        self.current = chosen
        chosen.parked = False
        chosen.gate.release()
        return chosen

    def _choose(self, me: _Thread | None, can_continue: bool) -> _Thread | None:
        grace_until = None
        while True:
            if self.pending:
                self._unlocked_nap()
                continue
            runnable = [t for t in self.threads if t.status == _RUNNABLE and not t.native
                        and (t.wait is None or t.wait.ready())]
            if (me is not None and not can_continue and me in runnable and me.wait is None
                    and not me.parked):
                runnable.remove(me)
            if runnable:
                # A timed acquire may give up at any step while its lock is held, as on a
                # loaded machine: each such thread is one more choice (issue #18, class 3),
                # GIVE_UPS times per thread and run (a retry loop would otherwise make the
                # space of schedules endless).
                giving_up = [t for t in self.threads if t.status == _RUNNABLE
                             and not t.native and t.wait is not None
                             and t.wait.give_up is not None and t.given_up < GIVE_UPS
                             and t not in runnable]
                chosen = self._pick(me, can_continue,
                                    sorted(runnable + giving_up, key=lambda t: t.index))
                if chosen in giving_up:
                    chosen.timed_out = True
                    chosen.given_up += 1
                return chosen
            if any(t.native and t.status == _RUNNABLE for t in self.threads):
                self._unlocked_nap()
                continue
            timed = [t for t in self.threads if t.status == _RUNNABLE and t.wait is not None
                     and t.wait.timed]
            if timed:
                chosen = self._pick(me, False, timed)
                if chosen is not None:
                    chosen.timed_out = True
                return chosen
            alive = [t for t in self.threads if t.status == _RUNNABLE]
            if not alive or all(t.spawned and (t.daemon or t.wait.idle) for t in alive):
                self._complete(alive)
                return None
            if grace_until is None:
                grace_until = tamper.monotonic() + _DEADLOCK_GRACE_S
            if tamper.monotonic() < grace_until or self._outside_activity():
                self._unlocked_nap()
                continue
            self._deadlock(alive)
            return None

    def _outside_activity(self) -> bool:
        """Has a thread the scheduler does not control started running user code in this run?

        A pool made before ``explore`` runs its tasks on threads nobody controls; a thread
        waiting for such a task is not deadlocked while the task still runs. Threads that were
        already in user code when the run began (stuck ones left over from earlier runs) and
        threads parked in threading plumbing do not count.
        """
        ours = {t.ident for t in self.threads} | {self.main_ident}
        now = _outside_user_frames(ours)
        return any(frame != self.outside_before.get(ident) for ident, frame in now.items())

    def _pick(self, me: _Thread | None, can_continue: bool,
              runnable: list[_Thread]) -> _Thread | None:
        current = me.index if (me is not None and can_continue) else None
        indices = [t.index for t in runnable]
        if current is not None and current == self.run_index and self.run_length >= FAIR_STEPS:
            self.set_aside[current] = self.step + FAIR_STEPS + (self.step * 2654435761) % FAIR_STEPS
        allowed = [i for i in indices if self.set_aside.get(i, 0) <= self.step] or indices
        if current not in allowed:
            current = None
        index = self.strategy.choose(self.step, current, allowed)
        if index not in allowed:
            raise ValueError(f"the strategy chose thread {index}, not one of {allowed}")
        if current is None or index != current:
            self.outcome.switches.append((self.step, index))
        if index == self.run_index:
            self.run_length += 1
        else:
            self.run_index, self.run_length = index, 1
        return self.threads[index]

    def _unlocked_nap(self) -> None:
        if tamper.monotonic() > self.deadline:
            self._stop_locked("timeout", "")
            raise _Abort
        self.mutex.release()
        try:
            _nap()
        finally:
            self.mutex.acquire()

    def _finish(self, me: _Thread) -> None:
        with self.mutex:
            me.status = _FINISHED
            me.wait = None
            if self.stopping:
                return
            if self.current is me:
                self._record(me, None, "finished")
                self._hand_over(me, can_continue=False)

    def _complete(self, idle: list[_Thread]) -> None:
        """Every thread finished, or waits forever as an idle pool worker or daemon."""
        for thread in idle:
            thread.status = _FINISHED
            thread.wait = None
            thread.detached = True
        self.stopping = True
        self._release_parked()
        self._signal_done()

    def _deadlock(self, alive: list[_Thread]) -> None:
        self.outcome.blocked = {t.index: t.blocked_on or "?" for t in alive}
        stacks = report.stacks_of({t.ident: t.name for t in alive if t.ident is not None})
        self._stop_locked("deadlock", stacks)

    def _record_error(self, me: _Thread, error: BaseException) -> None:
        with self.mutex:
            if self.outcome.kind == "done":
                self.outcome.error, self.outcome.error_thread = error, me.index
                self._stop_locked("error", "")

    def _stop(self, kind: str, detail: str) -> None:
        with self.mutex:
            self._stop_locked(kind, detail)

    def _stop_locked(self, kind: str, detail: str) -> None:
        if not self.stopping and self.outcome.kind == "done":
            self.outcome.kind, self.outcome.detail = kind, detail
            if kind == "timeout":
                self.outcome.blocked = {t.index: (t.blocked_on if t.wait else "running")
                                        for t in self.threads if t.status == _RUNNABLE}
                self.outcome.detail = detail or report.stacks_of(
                    {t.ident: t.name for t in self.threads
                     if t.status == _RUNNABLE and t.ident is not None})
        self.stopping = True
        self._release_parked()
        for _, _, arrived in self.pending.values():
            arrived.release()
        self.pending.clear()
        self._signal_done()

    def _release_parked(self) -> None:
        """Wake every parked thread to stop; idle pool workers are let go, not stopped."""
        for thread in self.threads:
            if thread.parked:
                if thread.wait is not None and thread.wait.idle:
                    thread.detached = True
                thread.parked = False
                thread.gate.release()

    def _signal_done(self) -> None:
        if not self.finished_signal:
            self.finished_signal = True
            self.done.release()


def _outside_user_frames(excluded: set[int | None]) -> dict[int, int]:
    """For each other thread running user code (not parked in plumbing): its innermost user
    frame's id."""
    found = {}
    for ident, frame in tamper.current_frames().items():
        if ident in excluded or codemap.info(frame.f_code).kind == codemap.PLUMBING:
            continue
        while frame is not None:
            if codemap.info(frame.f_code).kind == codemap.USER:
                found[ident] = id(frame)
                break
            frame = frame.f_back
    return found


def _blocked_where(frame: types.FrameType, wait: primitives.Wait) -> tuple[types.FrameType, str]:
    """The user frame that is waiting, and what it waits for in the student's terms."""
    if codemap.info(frame.f_code).kind == codemap.USER:
        return frame, wait.what
    outermost = frame
    caller = frame.f_back
    while caller is not None and codemap.info(caller.f_code).kind != codemap.USER:
        outermost, caller = caller, caller.f_back
    if caller is None:
        return frame, wait.what
    name = outermost.f_code.co_qualname
    if name.endswith("__enter__"):
        what = f"enter `with` on a {name.split('.')[0]}"
    elif name == "Thread._wait_for_tstate_lock" or wait.what.startswith("join"):
        what = wait.what
    else:
        what = f"return from {name}()"
    return caller, what


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
    return (function.__func__ if isinstance(function, types.MethodType) else function).__code__


def _nap() -> None:
    lock = tamper.allocate_lock()
    lock.acquire()
    lock.acquire(timeout=_POLL_S)


def _cpu_time(ident: int | None) -> float | None:
    if ident is None:
        return None
    try:
        return time.clock_gettime(time.pthread_getcpuclockid(ident))
    except (AttributeError, OSError):
        return None

