"""Exercise 2's run: ``run_ledger`` called, the worker processes it started watched and held.

The grader's ledger workers (:func:`autograder.checks.process_workers.tally`) leave records in
a folder of the check's: that they started, in which process and how it was started (``fork``,
``spawn``...), that they wait before their last update, and that they made every update. While
``run_ledger(3, 3000)`` runs, this module:

- holds every worker before its last update; once all are held and ``run_ledger`` is seen in
  a wait (its thread blocked in ``join()``, a queue's ``get()``, a pool's result:
  :func:`waiting`), lets every worker but :data:`LEDGER_KEPT` go. That one goes when
  ``run_ledger`` is seen waiting for it (or for what is not another worker) without a time
  limit, or with one of :data:`LEDGER_UNLIMITED_S` or more, or waiting again on something it
  already waited on (a loop of short waits); after :data:`LEDGER_HOLD_S`, also once it polls
  in its own code. An answer that waits once per worker with a shorter timeout and
  terminates the workers stops the kept worker, every run, however fast the machine, after
  one timeout;
- has each worker's last update add an amount drawn for it (:data:`LEDGER_EXTRA`), written
  where the answer may not read it: totals that were computed, not read from the ledger, are
  wrong every run;
- gives ``run_ledger`` :data:`LEDGER_STALL_S` to return once every worker has made all its
  updates: a worker that put 3,000 updates on a queue nobody reads cannot exit (its pipe is
  full), and an answer that joins it first hangs. That is a verdict, never a hang of the grader;
- watches every child process (sampled every 10 ms) for how it was started.

Whatever happens, the processes and segments the call left are killed and unlinked.
"""

from __future__ import annotations

import os
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from autograder.checks import process_workers
from autograder.checks.kit import describe_error
from autograder.checks.processes.resources import (
    Leftovers,
    Snapshot,
    child_processes,
    clean_up,
    snapshot,
)
from autograder.checks.processes.settings import (
    EXEC_POLL_S,
    EXEC_POLLS,
    LEDGER_EXTRA,
    LEDGER_HOLD_S,
    LEDGER_KEPT,
    LEDGER_POLL_S,
    LEDGER_S,
    LEDGER_STALL_S,
    LEDGER_UNLIMITED_S,
    LEDGER_UPDATES,
    LEDGER_WORKERS,
)
from autograder.harness import tamper
from autograder.harness.tamper import remove_scratch, scratch_folder


@dataclass
class LedgerRun:
    """What the grader saw of one ``run_ledger`` call.

    Attributes:
        totals: What it returned.
        expected: What the accounts must hold (the workers' extra amounts included).
        extras: The extra amount each worker's last update added (unknown to the answer).
        workers_seen: Child processes seen while it ran.
        workers_ran: Indices of the ledger workers that ran in a child process of this one.
        methods: Worker index -> how its process was started (``"spawn"``, ``"fork"``...).
        kinds: Worker index -> its ledger, ``"shared"`` memory or a ``"queue"``.
        others_not_spawned: Other child processes (a manager, a pool's) not started with spawn.
        failed: Worker index -> the exception its ``tally`` raised.
        not_spawned_workers: Pids of worker processes seen not started with spawn (then the
            run was stopped at once).
        stopped: Workers that ended before they had made every update (not by an exception).
        running: Workers still making their updates when ``run_ledger`` returned.
        held_for: Seconds the workers were held before their last update (until they were let
            go, or until ``run_ledger`` returned).
        returned_after: Seconds from the call to its return.
        leftovers: Processes and segments left when it returned.
    """

    totals: Any = None
    expected: list[int] = field(default_factory=list)
    extras: list[int] = field(default_factory=list)
    workers_seen: int = 0
    workers_ran: set[int] = field(default_factory=set)
    methods: dict[int, str] = field(default_factory=dict)
    kinds: dict[int, str] = field(default_factory=dict)
    others_not_spawned: int = 0
    failed: dict[int, str] = field(default_factory=dict)
    not_spawned_workers: set[int] = field(default_factory=set)
    stopped: list[int] = field(default_factory=list)
    running: list[int] = field(default_factory=list)
    held_for: float = 0.0
    returned_after: float = 0.0
    leftovers: Leftovers = field(default_factory=Leftovers)


def run_ledger_once(run_ledger: Callable[[int, int], Any], *, workers: int = LEDGER_WORKERS,
                    updates: int = LEDGER_UPDATES, exercise: str = "run_ledger") -> LedgerRun:
    """Call ``run_ledger(workers, updates)``, holding its workers, and clean up what it left.

    Raises:
        AssertionError: (in the exercise's terms) it raised, did not return within
            :data:`LEDGER_S`, or did not return :data:`LEDGER_STALL_S` after every worker had
            made all its updates.
    """
    before = snapshot()
    extras = [secrets.randbelow(LEDGER_EXTRA[1] - LEDGER_EXTRA[0]) + LEDGER_EXTRA[0]
              for _ in range(workers)]
    seen = LedgerRun(expected=process_workers.expected_totals(workers, updates, extras),
                     extras=extras)
    watcher = _ChildWatcher(before.processes)
    receipts = scratch_folder("receipts")
    with open(os.path.join(receipts, process_workers.EXTRA_FILE), "w",
              encoding="utf-8") as extra:
        extra.writelines(f"{index} {amount}\n" for index, amount in enumerate(extras))
    os.environ[process_workers.RECEIPTS_ENV] = receipts
    what = f"run_ledger({workers}, {updates})"
    watcher.start()
    try:
        call = _Call(lambda: run_ledger(workers, updates), f"{exercise}: {what}")
        verdict = _conduct(call, receipts, workers, seen, before)
    finally:
        _release(receipts)
        watcher.stop()
        os.environ.pop(process_workers.RECEIPTS_ENV, None)
        records = process_workers.read_records(receipts)
        seen.workers_seen = len(watcher.seen)
        seen.workers_ran = {index for index, pid in process_workers.read_receipts(receipts)
                            if pid in watcher.seen | seen.not_spawned_workers}
        children = watcher.seen | seen.not_spawned_workers
        ours = {key: value for key, value in records.started.items() if key[1] in children}
        seen.methods = {index: method for (index, _), (method, _) in ours.items()}
        seen.kinds = {index: kind for (index, _), (_, kind) in ours.items()}
        workers_pids = {pid for _, pid in ours}
        seen.others_not_spawned = len(watcher.not_spawned - workers_pids)
        remove_scratch(receipts)
        seen.leftovers = before.since()
        clean_up(seen.leftovers)
    if verdict == "raised":
        raise AssertionError(f"{exercise}: {what} raised {describe_error(call.error)}; "
                             "expected it to work") from None
    if verdict == "hung":
        raise AssertionError(
            f"{exercise}: {what} did not finish within {LEDGER_S:g} s; expected it to return: "
            "something waits for a process, a queue or a lock that never comes")
    if verdict == "stalled":
        raise AssertionError(_stalled_message(exercise, what, seen))
    return seen


def _stalled_message(exercise: str, what: str, seen: LedgerRun) -> str:
    message = (f"{exercise}: every worker had made all its updates, and {what} still had not "
               f"returned {LEDGER_STALL_S:g} s later, expected it to return once they were "
               "done: it waits for something that never happens")
    if "queue" in seen.kinds.values():
        message += (". A process that put items on a multiprocessing queue does not exit until "
                    "they have been read (only about 64 KB fit in the queue's pipe), so "
                    "joining the workers before reading their updates waits forever once "
                    "they send more than that. Read every update off the queue, then join "
                    "the workers")
    return message


#: How long a call whose workers were stopped early is waited for before it is left behind.
_AFTER_ABORT_S = 0.5


class _Call:
    """``run_ledger`` running on a daemon thread of its own (left behind if it hangs)."""

    def __init__(self, call: Callable[[], Any], name: str) -> None:
        self.value: Any = None
        self.error: BaseException | None = None

        def body() -> None:
            try:
                self.value = call()
            except BaseException as error:  # noqa: BLE001 - reported to the student
                self.error = error

        self.thread = threading.Thread(target=body, name=name, daemon=True)


def _conduct(call: _Call, receipts: str, workers: int, seen: LedgerRun,
             before: Snapshot) -> str:
    """Run the call, hold its workers and let them go; ``"returned"``, ``"raised"``,
    ``"hung"``, ``"stalled"``, or ``"forked"``: a worker's process was not started with spawn,
    which settles the verdict, so its processes are stopped at once (and the call is given
    :data:`_AFTER_ABORT_S` to return, then left behind: a worker killed holding the ledger's
    lock leaves it taken)."""
    everyone = set(range(workers))
    start = time.monotonic()
    held_since: float | None = None
    done_since: float | None = None
    policy = _Release()
    released = False
    call.thread.start()
    while call.thread.is_alive():
        now = time.monotonic()
        if now - start > LEDGER_S:
            return "hung"
        records = process_workers.read_records(receipts)
        odd = _not_spawned(records)
        if odd:
            seen.not_spawned_workers = odd
            _release(receipts)
            clean_up(before.since())
            call.thread.join(_AFTER_ABORT_S)
            return "forked"
        held = {index for index, _ in records.held}
        done = {index for index, _ in records.done}
        if not released:
            if held and held_since is None:
                held_since = now
            if held_since is not None:
                go = policy.let_go(waiting(call.thread), everyone <= held,
                                   now - held_since >= LEDGER_HOLD_S,
                                   {pid: index for index, pid in records.started})
                if go == "others":
                    for index in everyone - {LEDGER_KEPT}:
                        _release(receipts, index)
                elif go == "all":
                    _release(receipts)
                    released = True
                    seen.held_for = now - held_since
        elif everyone <= done:
            done_since = now if done_since is None else done_since
            if now - done_since > LEDGER_STALL_S:
                return "stalled"
        call.thread.join(LEDGER_POLL_S)
    seen.returned_after = time.monotonic() - start
    if not released and held_since is not None:
        seen.held_for = time.monotonic() - held_since
    _unfinished(receipts, seen)
    seen.totals = call.value
    return "raised" if call.error is not None else "returned"


class _Release:
    """When the held workers are let go, from what the answer's thread is seen doing.

    Every worker but :data:`LEDGER_KEPT` (``"others"``), once all are held and the answer is
    seen blocked in any wait. Every worker (``"all"``) when it is seen twice in a row waiting,
    with no time limit (or one of :data:`LEDGER_UNLIMITED_S` or more), for the kept worker or
    for something that is not another worker (a queue, a pool's result) while every worker is
    held (or the others have gone); or when it begins a new wait on something it has already
    waited on, other than another worker (``while p.is_alive(): p.join(1)``: it goes round a
    loop instead of giving up). Once :data:`LEDGER_HOLD_S` has passed, also when it is seen
    twice in a row outside any wait (polling in its own code). An answer that waits for each
    worker once with a shorter limit and then terminates the ones still running
    (``for p in procs: p.join(30)``) never gets the kept worker: it stops it, every run,
    whatever the machine's speed, one timeout after it began to wait for it.
    """

    def __init__(self) -> None:
        self.unlimited = 0
        self.outside = 0
        self.current: Any = None
        self.targets: list[Any] = []
        self.others_gone = False

    def let_go(self, seen: Waiting, all_held: bool, hold_is_over: bool,
               workers: dict[int, int] | None = None) -> str | None:
        """``"all"``, ``"others"`` (every worker but the kept one, said once) or None.

        Args:
            seen: What the answer's thread is doing now.
            all_held: Every worker is held before its last update.
            hold_is_over: :data:`LEDGER_HOLD_S` has passed since the first was held.
            workers: Pid -> index of the ledger workers seen so far.
        """
        self.outside = self.outside + 1 if not seen.blocked else 0
        if hold_is_over and self.outside >= 2:
            return "all"
        if not seen.blocked:
            self.unlimited = 0
            return None
        worker = (workers or {}).get(_pid_of(seen.target))
        kept = worker is None or worker == LEDGER_KEPT
        again = False
        if seen.call is not self.current:
            self.current = seen.call
            again = any(target is seen.target for target in self.targets)
            if not again:
                self.targets.append(seen.target)
        waits_on = seen.unlimited() and kept and (all_held or self.others_gone)
        self.unlimited = self.unlimited + 1 if waits_on else 0
        if kept and (again or self.unlimited >= 2):
            return "all"
        if all_held and not self.others_gone:
            self.others_gone = True
            return "others"
        return None


def _pid_of(target: Any) -> int | None:
    """The pid of a started ``multiprocessing`` process object, read from its attributes
    without running its code (None for anything else)."""
    try:
        popen = object.__getattribute__(target, "__dict__").get("_popen")
        pid = object.__getattribute__(popen, "__dict__").get("pid")
    except (AttributeError, TypeError):
        return None
    return pid if type(pid) is int else None


def _not_spawned(records: process_workers.LedgerRecords) -> set[int]:
    """The children of this process whose ledger worker said it was not started with spawn."""
    odd = {pid for (_, pid), (method, _) in records.started.items() if method != "spawn"}
    return odd & set(child_processes()) if odd else set()


def _unfinished(receipts: str, seen: LedgerRun) -> None:
    """Workers that started and had not made every update when ``run_ledger`` returned: ended
    (stopped) or still running."""
    records = process_workers.read_records(receipts)
    for (index, _pid), error in sorted(records.failed.items()):
        seen.failed.setdefault(index, error)
    for index, pid in sorted(set(records.started) - records.done - set(records.failed)):
        (seen.running if _alive(pid) else seen.stopped).append(index)


def _alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _release(receipts: str, index: int | None = None) -> None:
    """Let held worker ``index`` (None: every held worker, and every later one) make its last
    update."""
    name = "release" if index is None else f"release-{index}"
    try:
        with open(os.path.join(receipts, name), "w", encoding="utf-8"):
            pass
    except OSError:
        pass


# --------------------------------------------------------------------------- waiting, seen


_STDLIB = os.path.join(os.path.dirname(os.path.realpath(os.__file__)), "")


def _library(code: Any) -> bool:
    return os.path.realpath(code.co_filename).startswith(_STDLIB)


def _is(code: Any, module: str, name: str) -> bool:
    return code.co_name == name and code.co_filename.replace(os.sep, "/").endswith(module)


@dataclass(frozen=True)
class Waiting:
    """Where a thread is, seen from outside (see :func:`waiting`).

    Attributes:
        blocked: It is blocked in one of the standard library's blocking calls.
        limit: That wait's time limit in seconds (None: no limit).
        call: The outermost standard-library frame of that wait, the call the answer made
            (kept, so that a later look can tell the same wait from a new one).
        target: What that call waits on: its ``self`` (a process, a queue, an event), or its
            code when it has none (``multiprocessing.connection.wait``).
    """

    blocked: bool
    limit: float | None = None
    call: Any = None
    target: Any = None

    def unlimited(self, at_least: float = LEDGER_UNLIMITED_S) -> bool:
        """Blocked with no time limit, or with one of ``at_least`` seconds or more."""
        return self.blocked and (self.limit is None or self.limit >= at_least)


def waiting(thread: threading.Thread) -> Waiting:
    """Is ``thread`` blocked, right now, in a wait, and with what time limit?

    Its innermost frame must be one of the standard library's blocking calls: a process's
    ``join()`` (``popen_fork``'s blocking ``waitpid``), a ``threading`` wait (``Condition.wait``,
    so also ``Event.wait`` and a pool's or a future's result; ``Thread.join``), a read from a
    ``multiprocessing`` connection (a queue's or a manager's ``get``), a queue's read lock, a
    ``select``. Its time limit is the ``timeout`` (a number, not None or -1) of the outermost
    standard-library frame of the wait that has one: what the answer passed (inner frames hold
    what is left of it, ``select`` in milliseconds). The wait's frames are the standard
    library's frames from the innermost outwards, up to the first frame of other code (the
    answer's). A thread in its own code (sleeping between polls), or in a call that does not
    block, is not blocked.
    """
    frame = tamper.current_frames().get(thread.ident or -1)
    if frame is None or not _library(frame.f_code) or not _blocking(frame):
        return Waiting(False)
    limit, call = None, None
    while frame is not None and _library(frame.f_code):
        call = frame
        timeout = frame.f_locals.get("timeout")
        if timeout is None and frame.f_code.co_name == "_callmethod":
            timeout = _proxied_timeout(frame.f_locals)
        if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) \
                and timeout >= 0:
            limit = timeout  # the outermost one wins: what the answer passed
        frame = frame.f_back
    target = call.f_locals.get("self", call.f_code)
    return Waiting(True, limit, call, target)


#: Where a manager proxy's blocking methods take their timeout among their positional arguments.
_PROXIED_TIMEOUT_AT = {"get": 1, "put": 2, "acquire": 1, "wait": 0, "join": 0}


def _proxied_timeout(local: dict) -> Any:
    """The timeout a manager proxy's call passes on (``BaseProxy._callmethod``'s ``kwds`` or
    ``args``): ``manager.Queue().get(timeout=5)`` waits in the proxy's connection, where no
    frame has a ``timeout`` of its own."""
    kwds, args = local.get("kwds"), local.get("args")
    if type(kwds) is dict and "timeout" in kwds:
        return kwds["timeout"]
    at = _PROXIED_TIMEOUT_AT.get(local.get("methodname"))
    if at is not None and type(args) is tuple and len(args) > at:
        return args[at]
    return None


def waits_without_limit(thread: threading.Thread, *,
                        at_least: float = LEDGER_UNLIMITED_S) -> bool:
    """Is ``thread`` blocked in a wait with no time limit (or one of ``at_least`` s or more)?"""
    return waiting(thread).unlimited(at_least)


def _blocking(frame: Any) -> bool:
    code = frame.f_code
    local = frame.f_locals
    if _is(code, "multiprocessing/popen_fork.py", "poll"):
        return local.get("flag") == 0
    if _is(code, "threading.py", "wait") or _is(code, "threading.py", "_wait_for_tstate_lock"):
        return local.get("block", True) is True
    if _is(code, "multiprocessing/connection.py", "_recv") or \
            _is(code, "multiprocessing/connection.py", "_recv_bytes"):
        return True
    if _is(code, "multiprocessing/queues.py", "get"):
        return local.get("block", True) is True
    return _is(code, "selectors.py", "select")


# --------------------------------------------------------------------------- child processes


class _ChildWatcher:
    """The child processes that run while a call is made (sampled every 10 ms), and which of
    them were not started with spawn.

    A child whose command line shows ``spawn_main`` was spawned; one running another program
    was not; one that still shows this process's command line is forked, or spawned and not yet
    through ``execve``: it is looked at again at every sample, and counts as forked once it has
    looked so for :data:`EXEC_POLLS` x :data:`EXEC_POLL_S`.
    """

    def __init__(self, ignore: set[int]) -> None:
        self.ignore = ignore
        self.seen: set[int] = set()
        self.not_spawned: set[int] = set()
        self._judged: set[int] = set()
        self._looks_forked: dict[int, float] = {}
        self._own: list[str] | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def start(self) -> None:
        import psutil

        self._own = psutil.Process().cmdline()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _watch(self) -> None:
        while not self._stop.wait(0.01):
            children = child_processes()
            self.seen |= set(children) - self.ignore
            for pid, proc in children.items():
                if pid not in self.ignore and pid not in self._judged:
                    self._judge(pid, proc)

    def _judge(self, pid: int, proc: Any) -> None:
        try:
            command = proc.cmdline()
        except Exception:  # noqa: BLE001 - it ended, or is a zombie: nothing to judge
            return
        if "spawn_main" in " ".join(command):
            self._judged.add(pid)
        elif command and command != self._own:
            self._judged.add(pid)
            self.not_spawned.add(pid)
        else:
            first = self._looks_forked.setdefault(pid, time.monotonic())
            if time.monotonic() - first >= EXEC_POLLS * EXEC_POLL_S:
                self._judged.add(pid)
                self.not_spawned.add(pid)

