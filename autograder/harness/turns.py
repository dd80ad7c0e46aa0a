"""Whose turn it is: a controlled run's decision points, its choice of thread, and its end.

A thread at a decision point hands the turn over (:meth:`Turns._pause`); the strategy picks
among the threads that can run, fairly (:data:`FAIR_STEPS`), with timed acquires that may give
up as choices of their own (:data:`GIVE_UPS`). When no thread can run the run is complete, or
deadlocked; a deadlock, an error or the deadline stops every thread. The methods here are
:class:`Turns`'s, a base class of :class:`~autograder.harness.scheduler.Run`.
"""

from __future__ import annotations

import types
from typing import Any

from . import access, codemap, primitives, report, tamper
from .runstate import _FINISHED, _RUNNABLE, Step, _Abort, _Thread

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
#: How many times per run a thread's timed wait in user code (``lock.acquire(timeout=...)``,
#: ``Event.wait``, ``Condition.wait``, ``Queue.get`` and ``put``, ``Semaphore.acquire``,
#: ``Thread.join``, ``Future.result``: :mod:`.primitives`) may be made to give up while another
#: thread could still end it, as a schedule choice. Code that takes a timeout for failure needs
#: one to break; a retry loop stays a finite search. (When no thread can move at all, a timed
#: wait still gives up, as often as it comes to that.)
GIVE_UPS = 1
_TRACE_LIMIT = 20_000


class Turns:
    """How a :class:`~autograder.harness.scheduler.Run` hands the turn over and stops."""

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
                # GIVE_UPS times per thread and run unless the run says otherwise (a retry
                # loop would otherwise make the space of schedules endless).
                giving_up = [t for t in self.threads if t.status == _RUNNABLE
                             and not t.native and t.wait is not None
                             and t.wait.give_up is not None and t.given_up < self.give_ups
                             and t not in runnable]
                chosen = self._pick(me, can_continue,
                                    sorted(runnable + giving_up, key=lambda t: t.index))
                if chosen in giving_up:
                    chosen.timed_out = True
                    chosen.given_up += 1
                    self.outcome.gave_up.add(self.step)
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
                    self.outcome.gave_up.add(self.step)
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
        if me is not None and me.yielding and any(t is not me for t in runnable):
            # A sleep gives the core away: on a real machine every thread that can run gets
            # ahead of the sleeper, so a retry loop that backs off lets the thread it waits for
            # take the lock it let go (without this, a loop whose timed acquire gave up could
            # take its lock back at once, for ever). The sleeper may run again one step later.
            runnable = [t for t in runnable if t is not me]
            can_continue = False
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
