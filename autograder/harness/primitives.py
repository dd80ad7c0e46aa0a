"""Spot an instruction that is about to block on a real lock, and say when it could proceed.

Every primitive in ``threading`` and ``queue`` (Lock, RLock, Condition, Semaphore,
BoundedSemaphore, Event, Barrier, Queue, Thread.join) ends in a C-level ``acquire`` of a
``_thread.lock`` or ``_thread.RLock``; a ``ThreadPoolExecutor``'s workers wait in
``SimpleQueue.get``. The scheduler looks at each call and ``with`` in user code and in that
plumbing *before* it runs. When the call would block, the thread does not make it yet: it is
parked as blocked with a readiness test, and other threads run until the test passes. So a
lock made before ``explore`` was called (a module-level lock, one from an earlier notebook
cell) is handled exactly like one made in ``setup``, and a blocked thread never holds the turn.

A timed call in user code (:data:`_TIMED_CALLS`: ``Event.wait(5)``, ``Queue.get(timeout=1)``)
waits at the call itself, with the readiness test of the whole call: the schedule may then
make it give up (its timeout set to 0) at any step, as on a loaded machine, with no clock.
"""

from __future__ import annotations

import _queue
import _thread
import collections
import concurrent.futures
import contextlib
import functools
import os
import queue
import re
import sys
import threading
import types
from collections.abc import Callable

from . import codemap, frames, tamper

_LOCK_TYPES = (_thread.LockType, _thread.RLock)
_ACQUIRING = frozenset({"acquire", "acquire_lock", "__enter__", "_acquire_restore"})
_DESCRIPTORS = {
    vars(lock_type)[name]: name
    for lock_type in _LOCK_TYPES
    for name in _ACQUIRING
    if name in vars(lock_type)
}
_SIMPLE_QUEUE_GET = vars(_queue.SimpleQueue)["get"]
_JOIN_CODE = threading.Thread._wait_for_tstate_lock.__code__
_OWNER = re.compile(r"owner=(\d+)")
_POOL_WORKER_CODE = __import__("concurrent.futures.thread").futures.thread._worker.__code__
#: The library frames a single timed wait passes through, innermost (the blocking acquire) to
#: outermost (the call the student made).
_SINGLE_WAITS = frozenset({threading.Condition.wait.__code__, threading.Event.wait.__code__,
                           _JOIN_CODE, threading.Thread.join.__code__})


class OwnedLock:
    """A ``threading.Lock`` that knows which thread holds it, for checks that must tell
    "guarded by the thread that writes" from "some thread holds the lock".

    Used as a Lock (``with``, ``acquire(blocking, timeout)``, ``release``, ``locked``). Its
    code is the harness's, so under the controlled scheduler it is one atomic step; a call or
    ``with`` that would block on it is seen at the caller's instruction and parked like one on
    the Lock inside (a timed ``acquire`` may give up, as with a Lock). :meth:`held_here` says
    whether the calling thread holds it.
    """

    __slots__ = ("_lock", "owner")

    def __init__(self) -> None:
        self._lock = tamper.allocate_lock()
        self.owner: int | None = None

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        """Take the lock, as ``threading.Lock.acquire``."""
        if self._lock.acquire(blocking, timeout):
            self.owner = tamper.get_ident()
            return True
        return False

    def release(self) -> None:
        """Release the lock, as ``threading.Lock.release``."""
        self.owner = None
        self._lock.release()

    def locked(self) -> bool:
        """Whether any thread holds the lock."""
        return self._lock.locked()

    def held_here(self) -> bool:
        """Whether the calling thread holds the lock."""
        return self.owner == tamper.get_ident()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"<OwnedLock {'locked' if self.locked() else 'unlocked'} at {id(self):#x}>"


_OWNED_ACQUIRING = {OwnedLock.acquire: "acquire", OwnedLock.__enter__: "__enter__"}


class Wait:
    """A blocked thread's readiness test.

    Attributes:
        ready: Returns True once the blocking call would return at once.
        what: Plain words for messages (``"acquire <lock>"``).
        timed: True when the call has a timeout: it may give up instead of deadlocking.
        idle: True for a pool worker waiting for work (not a deadlock when it stays so).
        give_up: For a timed ``acquire`` in user code: ``give_up(frame)`` makes the paused
            call return False at once (its timeout becomes 0). Such a wait is a schedule
            choice: the scheduler may let it time out at any step while the lock is held,
            as a loaded machine can, instead of only when no thread can move.
    """

    __slots__ = ("ready", "what", "timed", "idle", "give_up")

    def __init__(self, ready: Callable[[], bool], what: str, *, timed: bool = False,
                 idle: bool = False, give_up: Callable[[types.FrameType], bool] | None = None):
        self.ready = ready
        self.what = what
        self.timed = timed
        self.idle = idle
        self.give_up = give_up


def _lock_ready(lock: object) -> Callable[[], bool]:
    """Whether ``lock`` could be taken now by the calling thread (the one about to block).

    The test runs in whichever thread is choosing, so an RLock's owner is compared with the
    waiting thread's id, read from the lock's repr (``owner=<ident>``): the C type offers no
    other way to see it.
    """
    if isinstance(lock, _thread.RLock):
        waiter = tamper.get_ident()
        return lambda: _rlock_free_for(lock, waiter)
    return lambda: not lock.locked()


def _rlock_free_for(lock: object, waiter: int) -> bool:
    match = _OWNER.search(repr(lock))
    if match:
        return int(match.group(1)) in (0, waiter)
    if lock.acquire(False):  # no owner in the repr: test from here (right unless we own it)
        lock.release()
        return True
    return False


def _arguments(frame: types.FrameType, count: int, kwnames: tuple) -> tuple[object, list, dict]:
    """The callable, positional and keyword arguments of the CALL about to run in ``frame``."""
    callable_slot = frames.peek(frame, count + 1)
    self_slot = frames.peek(frame, count)
    values = [frames.peek(frame, count - 1 - i) for i in range(count)]
    keywords = dict(zip(kwnames, values[len(values) - len(kwnames):], strict=True))
    positional = values[:len(values) - len(kwnames)]
    if callable_slot is None:
        return self_slot, positional, keywords
    return callable_slot, [self_slot, *positional], keywords


def call_stand_in(frame: types.FrameType, count: int, stand_in: object) -> bool:
    """Make the CALL about to run in the answer's ``frame`` call ``stand_in`` instead of its
    callable (see :func:`~autograder.harness.explore`'s ``stand_ins``). Returns True when it
    does; a call from code that is not the answer's is left alone."""
    if not _students(frame.f_code):
        return False
    slot = count + 1 if frames.peek(frame, count + 1) is not None else count
    return frames.poke(frame, slot, stand_in)


def _option(positional: list, keywords: dict, index: int, name: str, default: object) -> object:
    if len(positional) > index:
        return positional[index]
    return keywords.get(name, default)


def at_call(frame: types.FrameType, count: int, kwnames: tuple,
            finished_thread: Callable[[object], bool | None],
            glue: frozenset[int] = frozenset()) -> tuple[object, Wait | None]:
    """The function a CALL instruction is about to call, and its Wait if it may block.

    Args:
        frame: The frame paused before the CALL.
        count: The CALL's argument count.
        kwnames: Keyword names of the call.
        finished_thread: Maps a ``threading.Thread`` to whether the scheduler saw it finish
            (None when the scheduler does not control it).
        glue: The ids of the code the run treats as glue (``explore``'s ``glue``).

    Returns:
        ``(function, wait)``; ``wait`` is None when the call cannot block on a lock.
    """
    function, positional, keywords = _arguments(frame, count, kwnames)
    if function is frames.UNKNOWN:
        return function, None
    owner: object = None
    name = _DESCRIPTORS.get(function)
    if name is not None and positional:
        owner, positional = positional[0], positional[1:]
    elif isinstance(function, types.BuiltinMethodType) and isinstance(
            function.__self__, _LOCK_TYPES) and function.__name__ in _ACQUIRING:
        owner, name = function.__self__, function.__name__
    elif function in _OWNED_ACQUIRING and positional and isinstance(positional[0], OwnedLock):
        owner, name = positional[0]._lock, _OWNED_ACQUIRING[function]
        positional = positional[1:]
    elif (isinstance(function, types.MethodType) and isinstance(function.__self__, OwnedLock)
          and function.__func__ in _OWNED_ACQUIRING):
        owner, name = function.__self__._lock, _OWNED_ACQUIRING[function.__func__]
    if owner is not None:
        wait = _lock_wait(frame, owner, name, positional, keywords, finished_thread)
        if (wait is not None and wait.timed and name == "acquire"
                and _asked_for_by_student(frame, glue)):
            wait.give_up = _timeout_slot(count, kwnames, len(positional))
        return function, wait
    if _students(frame.f_code):
        wait = _timed_call_wait(function, positional, keywords, count, kwnames, finished_thread)
        if wait is not None:
            return function, wait
    if function is _SIMPLE_QUEUE_GET and positional:
        return function, _queue_wait(frame, positional[0], positional[1:], keywords)
    if (isinstance(function, types.BuiltinMethodType)
            and isinstance(function.__self__, _queue.SimpleQueue) and function.__name__ == "get"):
        return function, _queue_wait(frame, function.__self__, positional, keywords)
    return function, None


def at_with(frame: types.FrameType) -> Wait | None:
    """The Wait for a ``with`` statement entering a lock that is held, or None."""
    manager = frames.peek(frame, 0)
    if isinstance(manager, OwnedLock):
        manager = manager._lock
    if isinstance(manager, _LOCK_TYPES):
        return Wait(_lock_ready(manager), f"enter `with` on {_name(manager)}")
    return None


#: ``tf.function``'s ``__call__``: the Python body it runs directly when functions run eagerly.
_TF_FUNCTION_FILE = os.path.join("polymorphic_function", "polymorphic_function.py")
#: The module that holds ``tf.config.run_functions_eagerly``'s switch.
_EAGER_SWITCH_MODULE = "tensorflow.python.eager.polymorphic_function.eager_function_run"
_ELIDED = (*_LOCK_TYPES, OwnedLock, threading.Condition, threading.Semaphore)


def elide_traced_lock(frame: types.FrameType) -> bool:
    """Make a ``with`` that enters a lock inside a ``tf.function`` body enter nothing, when
    the body runs eagerly (``tf.config.run_functions_eagerly(True)``, as an explored check
    runs it to interleave its ops).

    In graph mode, the Python in a ``tf.function`` runs only while the function is traced: the
    graph that every later call runs holds no Python lock, and the ops the ``with`` seemed to
    guard interleave with another thread's. Running the body eagerly would take the lock on
    every call and hide that race, so the lock is replaced by a null context on the paused
    frame's stack (a lock taken with ``acquire()`` is not elided). Returns True when it was.
    """
    manager = frames.peek(frame, 0)
    if not isinstance(manager, _ELIDED) or not _in_eager_tf_function(frame):
        return False
    return frames.poke(frame, 0, contextlib.nullcontext())


def _in_eager_tf_function(frame: types.FrameType) -> bool:
    # Read the switch first: unless functions run eagerly, no frame is walked (each ``f_back``
    # read is an audit event the grading runner judges).
    switch = sys.modules.get(_EAGER_SWITCH_MODULE)
    if switch is None or not getattr(switch, "RUN_FUNCTIONS_EAGERLY", False):
        return False
    caller = frame.f_back
    while caller is not None:
        code = caller.f_code
        if code.co_name == "__call__" and code.co_filename.endswith(_TF_FUNCTION_FILE):
            function = caller.f_locals.get("self")
            return bool(getattr(function, "_run_functions_eagerly", False))
        caller = caller.f_back
    return False


def _lock_wait(frame: types.FrameType, lock: object, name: str, positional: list,
               keywords: dict, finished_thread: Callable[[object], bool | None]) -> Wait | None:
    if name == "_acquire_restore":
        blocking, timeout = True, -1
    elif name == "__enter__":
        blocking, timeout = True, -1
    else:
        blocking = _option(positional, keywords, 0, "blocking", True)
        timeout = _option(positional, keywords, 1, "timeout", -1)
    if not blocking or timeout == 0:
        return None
    timed = timeout is not None and timeout >= 0
    if frame.f_code is _JOIN_CODE:
        thread = frame.f_locals.get("self")
        finished = finished_thread(thread)
        if finished is not None:
            return Wait(lambda: bool(finished_thread(thread)),
                        f"join thread {getattr(thread, 'name', '?')}", timed=timed)
    return Wait(_lock_ready(lock), f"acquire {_name(lock)}", timed=timed)


def _students(code: types.CodeType) -> bool:
    """Whether ``code`` is the answer's (user code outside the grader's package): only its
    timed waits give up as schedule choices; a check's own timed wait keeps its meaning."""
    filename = code.co_filename
    return (codemap.info(code).kind == codemap.USER
            and not (type(filename) is str and filename.startswith(tamper.GRADER_DIR)))


def _asked_for_by_student(frame: types.FrameType, glue: frozenset[int]) -> bool:
    """Whether a timed ``acquire`` is the answer's own timeout: made in its code, or the one
    ``Condition.wait(timeout)``, ``Event.wait(timeout)`` or ``Thread.join(timeout)`` makes when
    its code called them, directly, through glue (a check's stand-in) or through C (a
    ``functools.partial`` the call-site test does not see). Each is a single wait, with no clock
    of its own: a ``Queue``'s or ``wait_for``'s deadline loop in the library would wait again."""
    if _students(frame.f_code):
        return True
    if frame.f_code not in _SINGLE_WAITS:
        return False
    caller = frame.f_back
    while caller is not None and (caller.f_code in _SINGLE_WAITS or id(caller.f_code) in glue):
        caller = caller.f_back
    return caller is not None and _students(caller.f_code)


class _TimedCall:
    """A blocking call of ``threading``, ``queue`` or ``concurrent.futures`` that takes a
    timeout: where its arguments are, and when it would return at once."""

    __slots__ = ("owner_type", "timeout_index", "block_index", "ready", "what")

    def __init__(self, owner_type: type, timeout_index: int,
                 block_index: int | None, ready: Callable[..., Callable[[], bool] | None],
                 what: str) -> None:
        self.owner_type = owner_type
        self.timeout_index = timeout_index
        self.block_index = block_index
        self.ready = ready
        self.what = what


_DONE_STATES = frozenset({"CANCELLED", "CANCELLED_AND_NOTIFIED", "FINISHED"})


# The readiness tests read the objects' own fields (``vars``), never a method or property a
# subclass of the answer's could override: they run in whichever thread is choosing.
def _event_ready(owner: threading.Event, _: object) -> Callable[[], bool]:
    return lambda: vars(owner).get("_flag") is True


def _queue_items(owner: queue.Queue) -> int:
    items = vars(owner).get("queue")
    return len(items) if type(items) in (collections.deque, list) else 0


def _queue_not_empty(owner: queue.Queue, _: object) -> Callable[[], bool]:
    return lambda: _queue_items(owner) > 0


def _queue_has_room(owner: queue.Queue, _: object) -> Callable[[], bool]:
    size = vars(owner).get("maxsize")
    if type(size) is not int or size <= 0:
        return lambda: True
    return lambda: _queue_items(owner) < size


def _semaphore_free(owner: threading.Semaphore, _: object) -> Callable[[], bool]:
    def ready() -> bool:
        value = vars(owner).get("_value")
        return type(value) is int and value > 0
    return ready


def _thread_finished(owner: threading.Thread,
                     finished: Callable[[object], bool | None]) -> Callable[[], bool] | None:
    return None if finished(owner) is None else lambda: bool(finished(owner))


def _future_done(owner: concurrent.futures.Future, _: object) -> Callable[[], bool]:
    def ready() -> bool:
        state = vars(owner).get("_state")
        return type(state) is str and state in _DONE_STATES
    return ready


#: The timed calls a thread waits in *at the user's call*, by the real function's ``id``. Not
#: ready, it is blocked there; the schedule may make it give up (its timeout set to 0) while
#: another thread could still make it ready, as on a loaded machine, where a timeout runs out
#: before the thread it waits for gets the core. A stand-in of the check's (its ``__wrapped__``
#: names the real function) is the same call.
_TIMED_CALLS: dict[int, _TimedCall] = {id(function): call for function, call in (
    (threading.Event.wait, _TimedCall(threading.Event, 0, None, _event_ready,
                                      "wait for an Event")),
    (queue.Queue.get, _TimedCall(queue.Queue, 1, 0, _queue_not_empty,
                                 "take an item from a Queue")),
    (queue.Queue.put, _TimedCall(queue.Queue, 2, 1, _queue_has_room,
                                 "put an item on a full Queue")),
    (threading.Semaphore.acquire, _TimedCall(threading.Semaphore, 1, 0, _semaphore_free,
                                             "acquire a Semaphore")),
    (threading.Thread.join, _TimedCall(threading.Thread, 0, None, _thread_finished,
                                       "join a thread")),
    *((method, _TimedCall(concurrent.futures.Future, 0, None, _future_done,
                          "wait for a Future"))
      for method in (concurrent.futures.Future.result, concurrent.futures.Future.exception)),
)}


def _timed_call_wait(function: object, positional: list, keywords: dict, count: int,
                     kwnames: tuple, finished_thread: Callable[[object], bool | None]
                     ) -> Wait | None:
    """The Wait of a call in user code to one of :data:`_TIMED_CALLS` with a timeout, at the
    call: None unless it has a timeout and would block now. A ``functools.partial`` of one
    (``partial(q.put, timeout=1.0)``) is the same call with the partial's arguments first."""
    bound = None
    if type(function) is functools.partial:
        bound = function
        function = bound.func
        positional, keywords = [*bound.args, *positional], {**bound.keywords, **keywords}
    target, owner = function, None
    if type(function) is types.MethodType:
        target, owner = function.__func__, function.__self__
    if type(target) is types.FunctionType:
        target = vars(target).get("__wrapped__", target)
    call = _TIMED_CALLS.get(id(target))
    if call is None:
        return None
    after_owner = positional
    if owner is None:
        if not positional:
            return None
        owner, after_owner = positional[0], positional[1:]
    if not issubclass(type(owner), call.owner_type):
        return None
    timeout = _option(after_owner, keywords, call.timeout_index, "timeout", None)
    if type(timeout) not in (int, float) or timeout <= 0:
        return None
    if call.block_index is not None:
        block = _option(after_owner, keywords, call.block_index,
                        "blocking" if call.owner_type is threading.Semaphore else "block", True)
        if block is not True and not (type(block) is int and block != 0):
            return None
    ready = call.ready(owner, finished_thread)
    if ready is None or ready():
        return None
    if bound is None or "timeout" in kwnames:
        give_up = _timeout_slot(count, kwnames, len(after_owner) - len(bound.args if bound else ()),
                                call.timeout_index)
    elif "timeout" in bound.keywords:
        give_up = _partial_timeout_slot(bound, count)
    else:  # a timeout among the partial's positional arguments: it gives up inside instead
        return None
    return Wait(ready, f"{call.what} (timeout {timeout:g} s)", timed=True, give_up=give_up)


def _partial_timeout_slot(bound: functools.partial,
                          count: int) -> Callable[[types.FrameType], bool]:
    """How to make a paused call of ``bound`` (a partial with a ``timeout`` keyword) give up:
    call, in its place, the same partial with ``timeout=0``."""
    at_once = functools.partial(bound.func, *bound.args, **{**bound.keywords, "timeout": 0})

    def give_up(frame: types.FrameType) -> bool:
        below_top = count if frames.peek(frame, count) is bound else count + 1
        return frames.peek(frame, below_top) is bound and frames.poke(frame, below_top, at_once)

    return give_up


def _timeout_slot(count: int, kwnames: tuple, positional: int,
                  index: int = 1) -> Callable[[types.FrameType], bool] | None:
    """How to make a paused timed call give up: set its timeout to 0.

    ``positional`` counts the call's positional arguments after the lock (or other owner)
    itself; the timeout is the ``index``-th of them (``acquire(True, 0.5)``: 1) or the
    ``timeout`` keyword.
    """
    if "timeout" in kwnames:
        index = count - len(kwnames) + kwnames.index("timeout")
    elif positional > index:
        index = count - len(kwnames) - positional + index
    else:
        return None
    below_top = count - 1 - index
    return lambda frame: frames.poke(frame, below_top, 0)


def _queue_wait(frame: types.FrameType, simple_queue: object, positional: list,
                keywords: dict) -> Wait | None:
    block = _option(positional, keywords, 0, "block", True)
    timeout = _option(positional, keywords, 1, "timeout", None)
    if not block:
        return None
    return Wait(lambda: simple_queue.qsize() > 0, "take an item from a SimpleQueue",
                timed=timeout is not None, idle=frame.f_code is _POOL_WORKER_CODE)


def _name(lock: object) -> str:
    kind = "RLock" if isinstance(lock, _thread.RLock) else "Lock"
    return f"{kind} at {id(lock):#x}"
