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

The run itself lives here (:class:`Run`: its workers and the threads they start, from start to
exit, and the watcher that notices a thread stuck in native code); :mod:`.tracing` has the
trace functions that make decision points, :mod:`.turns` how the turn is handed over and how a
run stops, :mod:`.runstate` what a run keeps about its threads and what it records.
"""

from __future__ import annotations

import io
import threading
import time
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from . import codemap, tamper
from .runstate import Outcome, Step, _Abort, _Thread
from .tracing import Tracing, glue_codes
from .turns import FAIR_STEPS, GIVE_UPS, Turns, _outside_user_frames

__all__ = ["FAIR_STEPS", "GIVE_UPS", "NATIVE_STALL_S", "Outcome", "Run", "Step", "Strategy"]

# How long a turn holder may sit in native code, using no CPU, before others run meanwhile.
NATIVE_STALL_S = 0.5
_POLL_S = 0.001
_WATCH_S = 0.02
_ACTIVE_THREADS = threading._active  # ident -> Thread, filled in before a thread's run()
_native_id = threading.get_native_id
_open = io.open  # bound before the code under test can replace ``open``


class Strategy(Protocol):
    """Chooses which thread runs at each step of a run."""

    def choose(self, step: int, current: int | None, runnable: list[int]) -> int:
        """Pick one of ``runnable`` (sorted thread indices).

        ``current`` is the thread that just ran when it could go on, else None.
        """


class Run(Tracing, Turns):
    """Runs ``workers`` on ``state`` once, under ``strategy``; see :meth:`execute`."""

    def __init__(self, state: Any, workers: Sequence[Callable[[Any], Any]],
                 strategy: Strategy, deadline: float, *, callbacks: bool = False,
                 glue: Sequence[Callable[..., Any]] = (), give_ups: int = GIVE_UPS,
                 stand_ins: Mapping[int, Any] | None = None):
        self.state = state
        #: What a call from the answer's code calls instead (see :func:`explore`'s
        #: ``stand_ins``).
        self.stand_ins = dict(stand_ins or {})
        #: How many timed waits per thread may be made to give up as a choice.
        self.give_ups = give_ups
        #: Trace user code that library code calls back (see :func:`explore`'s ``callbacks``).
        self.callbacks = callbacks
        #: Code run without decision points of its own (see :func:`explore`'s ``glue``).
        self.glue_code = tuple(code for function in glue for code in glue_codes(function))
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
                if _waiting_for_cpu(holder.native_id):
                    continue  # starved by a busy machine, not blocked in native code
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
        me.ident, me.native_id = tamper.get_ident(), _native_id()
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
            me.ident, me.native_id = tamper.get_ident(), _native_id()
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

    # The other turn-taking methods are :class:`Turns`'s; this one naps with :func:`_nap`,
    # which lives here.
    def _unlocked_nap(self) -> None:
        if tamper.monotonic() > self.deadline:
            self._stop_locked("timeout", "")
            raise _Abort
        self.mutex.release()
        try:
            _nap()
        finally:
            self.mutex.acquire()


def _nap() -> None:
    lock = tamper.allocate_lock()
    lock.acquire()
    lock.acquire(timeout=_POLL_S)


def _waiting_for_cpu(native_id: int | None) -> bool:
    """Is the OS thread ``native_id`` of this process runnable (state R), that is, ready to
    run but not given a core? A thread blocked in native code sleeps (S or D) instead."""
    if native_id is None:
        return False
    try:
        with _open(f"/proc/self/task/{native_id}/stat", "rb") as stat:
            fields = stat.read().rpartition(b")")[2].split()
    except OSError:
        return False
    return bool(fields) and fields[0] == b"R"


def _cpu_time(ident: int | None) -> float | None:
    if ident is None:
        return None
    try:
        return time.clock_gettime(time.pthread_getcpuclockid(ident))
    except (AttributeError, OSError):
        return None
