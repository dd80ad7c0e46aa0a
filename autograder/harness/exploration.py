"""``explore`` and ``replay``: the controlled scheduler's public face."""

from __future__ import annotations

import linecache
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from . import report, tamper
from .result import Result, issue
from .scheduler import GIVE_UPS, Outcome, Run, Strategy
from .search import DeviationBounded, Exhaustive, PriorityChange, RandomWalk, Replay
from .timeline import Mark, Segment, Timeline

STRATEGIES = ("auto", "random", "pct", "exhaustive", "bounded")
_ROTATIONS = {
    "auto": ("random", "pct3", "random", "exhaustive", "random", "pct2", "random", "random"),
    "random": ("random",),
    "pct": ("pct2", "pct3"),
    "exhaustive": ("exhaustive",),
    "bounded": (),
}
_PREEMPTION_BOUND = 3
#: "auto" and "bounded" first run every schedule that departs at most this many times from
#: the default order (the running thread goes on until it blocks or finishes, then the next
#: thread round-robin; see :class:`search.DeviationBounded`), earliest departure first, in an
#: order no seed changes: a race that one preemption exposes is found whatever the seed, and a
#: pass states the bound it reached. "auto" then samples deeper schedules (seeded random walks
#: and PCT) and runs exhaustive search, which may prove a small space covered.
DEVIATIONS = 1
_TOKEN_PREFIX = "v1:"
_NARRATIVE_LIMIT = 8
#: Reads and writes named in one segment of the schedule figure; more are counted (" +2").
_LABEL_ACCESSES = 2


def explore(
    setup: Callable[[], Any],
    workers: Sequence[Callable[[Any], Any]],
    check: Callable[[Any], Any],
    *,
    seed: int = 0,
    max_schedules: int = 500,
    timeout_s: float = 60.0,
    strategy: str = "auto",
    callbacks: bool = False,
    samples: int | None = None,
    deviations: int = DEVIATIONS,
    glue: Sequence[Callable[..., Any]] = (),
    give_ups: int = GIVE_UPS,
    stand_ins: Mapping[int, Any] | None = None,
) -> Result:
    """Search the interleavings of ``workers`` for one that breaks ``check``.

    One thread runs at a time. Before every instruction of user code that another thread could
    see (code outside the standard library, site-packages and the harness; notebook cells count
    as user code), a seeded choice decides which thread runs next. Library calls (TF ops, Keras
    internals) run atomically. Locks, conditions, semaphores, events, barriers and queues work
    whether they were made in ``setup``, in a worker or before ``explore`` was called; threads
    the workers start are scheduled too.

    Keras and TensorFlow set up global state on first use (building a model, tracing a
    function): warm those code paths once before calling ``explore``, or schedules cannot be
    repeated and races inside them are out of reach (use :func:`stress` for those).

    Args:
        setup: Returns fresh shared state; called once per schedule.
        workers: Callables ``worker(state)``, each run on its own thread.
        check: ``check(state)`` raises ``AssertionError`` (or returns ``False``) when the
            invariant is broken; called after every schedule in which all threads finished.
        seed: Seeds the random and PCT strategies (same seed, same schedules).
        max_schedules: How many schedules to run at most.
        timeout_s: Wall-clock budget; running out is a ``"timeout"``, never a pass.
        strategy: ``"auto"`` (first every schedule with at most :data:`DEVIATIONS`
            deviation from round-robin order, in an order no seed changes, which also covers
            small spaces outright;
            then exhaustive search interleaved with PCT and seeded random runs), ``"bounded"``
            (the first part only), ``"random"``, ``"pct"`` or ``"exhaustive"``. An addition
            to the course's API; leave it at ``"auto"`` in checks.
        callbacks: Also interleave user code that a library call runs (a ``tf.function``'s
            Python body under ``tf.config.run_functions_eagerly(True)``, where each TF op is
            then one step); by default a library call is one step with everything it calls.
            An addition to the course's API, for checks.
        samples: With ``"auto"``: once every schedule within the preemption bound has run,
            sample at most this many more (default: up to ``max_schedules``). A check sets
            a large ``max_schedules`` (the bound is then reached for any reasonable answer)
            and a small ``samples``, so its cost is the bound plus a fixed number.
        deviations: The bound of the first phase of ``"auto"`` and ``"bounded"``: every
            schedule with at most this many departures from round-robin order. 1 for most
            checks; 2 where the program is short (its space grows like steps squared).
        glue: Functions of the check's own (a worker's loop around the answer's calls) whose
            instructions (and, in the grader's own files, those of their list, set and dict
            comprehensions) are no decision points, while the user code they call keeps its
            own: the search then spends its bound on the answer's code. An addition to the
            course's API, for checks; :func:`replay` needs the same ``glue``.
        give_ups: How many times per run a thread's timed wait may be made to give up while
            another thread could still make it ready (each one a choice). A check that holds
            a thread on purpose for long (a learner stalled for seconds) runs one schedule
            with a large number: every timed wait made meanwhile runs out, as it would. An
            addition to the course's API, for checks; :func:`replay` needs the same number.
        stand_ins: The objects (by ``id``) that a call from the answer's own code (user code
            outside the grader's package) replaces with another: a check that cuts the
            answer's timeouts (:func:`autograder.checks.timeouts.cut_timeouts`) swaps the names
            the answer's module reads, and this reaches the ones its code got otherwise (a
            ``time`` imported inside a method). An addition to the course's API, for checks;
            :func:`replay` needs the same map.

    Returns:
        The :class:`Result`. A failing one carries the schedule for :func:`replay`.
    """
    workers = _validate(workers)
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}, not {strategy!r}")
    found = tamper.problems()
    if found:
        return issue("error", message=tamper.message(found))
    deadline = tamper.monotonic() + timeout_s
    search = _Search(seed, strategy, deviations)
    runs = 0
    while runs < max_schedules:
        if (samples is not None and search.bound_reached
                and runs - search.bounded_runs >= samples):
            break
        chooser = search.next()
        if chooser is None:
            break
        runs += 1
        outcome, verdict, seen = _run_once(setup, workers, check, chooser, deadline,
                                           callbacks, glue, give_ups, stand_ins)
        if verdict != "pass":
            return _failure(verdict, outcome, seen, runs, timeout_s)
        search.after(chooser, outcome)
        if tamper.monotonic() > deadline and runs < max_schedules and not search.covered:
            return issue("timeout", schedules_run=runs, message=(
                f"Ran out of time: {report.plural(runs, 'schedule')} ran in {timeout_s:g} s "
                "without finding a problem, but the search was not finished, so this is not "
                "a pass. Make the workers smaller or give explore a larger timeout_s."))
    return issue("pass", schedules_run=runs, covered=search.covered, bound=search.bound(),
                 message=f"No race found: {search.coverage(runs)}, and the check held every "
                 "time.")


def replay(
    setup: Callable[[], Any],
    workers: Sequence[Callable[[Any], Any]],
    check: Callable[[Any], Any],
    schedule: str | Result,
    *,
    timeout_s: float = 60.0,
    callbacks: bool = False,
    glue: Sequence[Callable[..., Any]] = (),
    give_ups: int = GIVE_UPS,
    stand_ins: Mapping[int, Any] | None = None,
) -> Result:
    """Run exactly the schedule of a failing :func:`explore` result again.

    Args:
        setup: The same ``setup`` as the explore call.
        workers: The same workers.
        check: The same check.
        schedule: The ``schedule`` token of a failing result (or the result itself).
        timeout_s: Wall-clock budget.
        callbacks: The same ``callbacks`` as the explore call.
        glue: The same ``glue`` as the explore call.
        give_ups: The same ``give_ups`` as the explore call.
        stand_ins: The same ``stand_ins`` as the explore call.

    Returns:
        The same verdict as the run that produced the schedule, every time.
    """
    workers = _validate(workers)
    token = schedule.schedule if isinstance(schedule, Result) else schedule
    switches = parse_token(token)
    found = tamper.problems()
    if found:
        return issue("error", message=tamper.message(found))
    deadline = tamper.monotonic() + timeout_s
    chooser = Replay(switches)
    outcome, verdict, seen = _run_once(setup, workers, check, chooser, deadline, callbacks,
                                       glue, give_ups, stand_ins)
    note = ""
    if chooser.deviation:
        note = ("\nNote: the program did not repeat itself exactly "
                f"({chooser.deviation}); code whose behaviour depends on more than the thread "
                "order (first use of Keras/TF, the clock, randomness, the order of a set) "
                "cannot always be replayed step by step.")
    if verdict == "pass":
        return issue("pass", schedules_run=1, message=(
            "The replayed schedule ran to the end and the check held." + note))
    failed = _failure(verdict, outcome, seen, 1, timeout_s)
    if not note:
        return failed
    return issue(failed.verdict, schedule=failed.schedule, schedules_run=1,
                 message=failed.message + note, timeline=failed._timeline, trace=failed.trace)


def make_token(switches: list[tuple[int, int]]) -> str:
    """The replay token for a run's switches, e.g. ``"v1:1>0,7>1"``."""
    return _TOKEN_PREFIX + ",".join(f"{step}>{thread}" for step, thread in switches)


def parse_token(token: object) -> dict[int, int]:
    """Inverse of :func:`make_token`."""
    if isinstance(token, dict) and token.get("engine") == "stress":
        raise ValueError("this schedule came from stress(): real threads cannot be replayed "
                         "step by step; call stress(...) again with the same seed instead")
    expected = (f"a schedule token is the text after 'schedule=' in a failing verdict, "
                f"{_TOKEN_PREFIX!r} then STEP>THREAD pairs separated by commas")
    if not isinstance(token, str) or not token.startswith(_TOKEN_PREFIX):
        raise ValueError(f"not a schedule token: {token!r} ({expected})")
    switches = {}
    body = token[len(_TOKEN_PREFIX):]
    for part in filter(None, body.split(",")):
        step, arrow, thread = part.strip().partition(">")
        if not (arrow and step.isdigit() and thread.isdigit()):
            raise ValueError(f"{part!r} in schedule token {token!r} is not STEP>THREAD "
                             f"({expected})")
        switches[int(step)] = int(thread)
    return switches


def _validate(workers: Sequence[Callable[[Any], Any]]) -> list[Callable[[Any], Any]]:
    workers = list(workers)
    if not workers:
        raise ValueError("explore needs at least one worker")
    for worker in workers:
        if not callable(worker):
            raise TypeError(f"workers must be callables, got {worker!r}")
    return workers


class _Search:
    """Hands out one strategy per schedule: the deviation-bounded search first (``auto``,
    ``bounded``), then the others in rotation; tracks what was covered."""

    def __init__(self, seed: int, strategy: str, deviations: int = DEVIATIONS):
        self.seed = seed
        self.deviations = deviations
        self.rotation = _ROTATIONS[strategy]
        self.dfs: Exhaustive | None = Exhaustive() if "exhaustive" in self.rotation else None
        self.bounded: DeviationBounded | None = (DeviationBounded(deviations)
                                           if strategy in ("auto", "bounded") else None)
        self.bounded_runs = 0
        self.bound_reached = False
        self.horizon = 1
        self.count = 0
        self.covered = False

    def bound(self) -> str:
        """The search bound this search reached, in words ("" when none was)."""
        if self.covered:
            return "every schedule"
        if self.bound_reached:
            return (f"every schedule with at most "
                    f"{report.plural(self.deviations, 'preemption')} "
                    "or other departure from round-robin order "
                    f"({report.plural(self.bounded_runs, 'schedule')})")
        return ""

    def coverage(self, runs: int) -> str:
        """What was tried, for a pass message."""
        if self.covered:
            return f"every one of the {report.plural(runs, 'possible schedule')} was tried"
        if self.bound_reached:
            more = runs - self.bounded_runs
            return (f"{self.bound()} was tried"
                    + (f", and {report.plural(more, 'more schedule')} sampled" if more else ""))
        return f"{report.plural(runs, 'schedule')} were tried (a sample of the interleavings)"

    def next(self) -> Strategy | None:
        if self.covered or (self.dfs is None and self.rotation == ("exhaustive",)):
            return None
        if self.bounded is not None:
            self.bounded_runs += 1
            return self.bounded
        if not self.rotation:
            return None
        for _ in range(len(self.rotation)):
            name = self.rotation[self.count % len(self.rotation)]
            self.count += 1
            if name == "exhaustive":
                if self.dfs is not None:
                    return self.dfs
                continue
            rng = random.Random(f"explore/{self.seed}/{self.count}")
            if name == "random":
                return RandomWalk(rng, _PREEMPTION_BOUND, self.horizon)
            return PriorityChange(rng, 2 if name == "pct2" else 3, self.horizon)
        return None

    def after(self, chooser: Strategy, outcome: Outcome) -> None:
        if self.count <= 1:
            self.horizon = max(self.horizon, outcome.last_step)
        if chooser is self.bounded and not self.bounded.advance():
            self.bound_reached = not self.bounded.deviated
            self.covered = self.bound_reached and not self.bounded.pruned
            self.bounded = None
            return
        if chooser is self.dfs and not self.dfs.advance():
            self.covered = not self.dfs.deviated
            self.dfs = None


def _run_once(setup: Callable[[], Any], workers: list[Callable[[Any], Any]],
              check: Callable[[Any], Any], chooser: Strategy,
              deadline: float, callbacks: bool = False,
              glue: Sequence[Callable[..., Any]] = (),
              give_ups: int = GIVE_UPS,
              stand_ins: Mapping[int, Any] | None = None) -> tuple[Outcome, str, object]:
    """One schedule: fresh state, a controlled run, then the check."""
    try:
        state = setup()
    except Exception as error:  # reported, fail closed
        outcome = Outcome(kind="error", error=error, detail="setup")
        return outcome, "error", None
    outcome = Run(state, workers, chooser, deadline, callbacks=callbacks, glue=glue,
                  give_ups=give_ups, stand_ins=stand_ins).execute()
    problems = outcome.tampering + tamper.problems()
    if problems:
        outcome.detail = tamper.message(problems)
        return outcome, "tampered", None
    if outcome.kind != "done":
        return outcome, outcome.kind, None
    try:
        verdict = check(state)
    except AssertionError as failure:
        return outcome, "race", failure
    except Exception as error:  # a check crashing on broken state fails closed
        outcome.error, outcome.detail = error, "check"
        return outcome, "error", None
    if verdict is False:
        return outcome, "race", False
    return outcome, "pass", None


def _failure(verdict: str, outcome: Outcome, seen: object, runs: int,
             timeout_s: float) -> Result:
    if verdict == "tampered":
        return issue("error", schedules_run=runs, message=outcome.detail)
    if verdict == "error" and outcome.detail == "setup":
        return issue("error", schedules_run=runs, message=(
            f"setup() raised {report.exception_line(outcome.error)}, so nothing was tested. "
            "This is a problem in the check's setup, not a race."))
    token = make_token(outcome.switches)
    replay_call = f"replay(setup, workers, check, schedule={token!r})"
    found_after = f"found in schedule {runs}"
    timeline = _timeline(outcome, verdict)
    common: dict[str, Any] = {"schedule": token, "schedules_run": runs, "timeline": timeline,
                              "trace": _trace(outcome, verdict)}
    how = _narrative(outcome)
    replay_hint = (f"Replay exactly this interleaving (same verdict every time):\n"
                   f"    {replay_call}\nSee it: result.figure()")

    if verdict == "race":
        return issue("race", **common, message=(
            f"Race found ({found_after}): the threads interleaved in a way that broke the "
            "check.\n"
            f"  What the check saw: {report.check_failure(seen)}\n"
            f"How it happened:\n{how}\n{replay_hint}"))
    if verdict == "deadlock":
        waits = "\n".join(f"  {outcome.names[i]} waits to {what}"
                          for i, what in sorted(outcome.blocked.items()))
        return issue("deadlock", **common, message=(
            f"Deadlock ({found_after}): every live thread is blocked, so the program would "
            f"hang forever.\n{waits}\nWhere each thread is stuck:\n{outcome.detail}\n"
            f"How it got there:\n{how}\n{replay_hint}"))
    if verdict == "error" and outcome.detail == "check":
        return issue("error", **common, message=(
            f"The check raised {report.exception_line(outcome.error)} ({found_after}). It "
            "could not even read the shared state, which usually means a race left it "
            f"broken.\nHow it happened:\n{how}\n{replay_hint}"))
    if verdict == "error":
        error = outcome.error
        name = outcome.names[outcome.error_thread] if outcome.error_thread is not None else "?"
        at = report.error_location(error)
        return issue("error", **common, message=(
            f"{name} raised {report.exception_line(error)}{' at ' + at if at else ''} "
            f"({found_after}).\nHow it happened:\n{how}\n{replay_hint}"))
    stuck = "\n".join(f"  {outcome.names[i]}: {what}"
                      for i, what in sorted(outcome.blocked.items()))
    return issue("timeout", **common, message=(
        f"Ran out of time ({timeout_s:g} s) in schedule {runs}: this is never a pass.\n"
        f"{stuck}\nWhere the threads were:\n{outcome.detail}\n"
        "A thread that loops forever, or waits on something outside Python, keeps the "
        "schedule from finishing."))


def _trace(outcome: Outcome, verdict: str) -> tuple[tuple, ...]:
    """The failing run's decision points as plain tuples (see :attr:`Result.trace`), ending
    with what raised when the verdict is an error."""
    steps = [(step.thread, step.filename, step.lineno, step.function, step.note,
              step.access.op, step.access.name) for step in outcome.steps]
    if verdict == "error" and outcome.error is not None:
        thread = -1 if outcome.error_thread is None else outcome.error_thread
        steps.append((thread, "", 0, "", f"raised {type(outcome.error).__name__}", "", ""))
    return tuple(steps)


def _functions_run(outcome: Outcome, thread: int, start: int, stop: int) -> str:
    """Where ``thread`` ran between two steps, for the narrative: ``" (in f, in g)"``."""
    names: list[str] = []
    for step in outcome.steps:
        if (start <= step.step < stop and step.thread == thread and step.function
                and step.function not in names):
            names.append(step.function)
    return f" (in {', in '.join(names)})" if names else ""


def _narrative(outcome: Outcome) -> str:
    by_step = {step.step: step for step in outcome.steps}
    lines = []
    running: int | None = None
    since = 0
    for step, thread in outcome.switches:
        name = outcome.names[thread] if thread < len(outcome.names) else f"thread {thread}"
        runs = (f"{name}'s timed wait runs out (its timeout ends first, as on a busy machine) "
                f"and {name} goes on." if step in outcome.gave_up else f"{name} runs.")
        paused = by_step.get(step)
        if running is None or paused is None:
            lines.append(f"  {runs}")
        else:
            who = outcome.names[paused.thread]
            if paused.note == "finished":
                ran = _functions_run(outcome, paused.thread, since, step)
                lines.append(f"  {who} runs to the end{ran}; {runs}")
            elif paused.note:
                waits = paused.note.removeprefix("blocked: ")
                lines.append(f"  {who} is blocked at {_where(paused)}: it waits to {waits}; "
                             f"{runs}")
            else:
                lines.append(f"  {who} is paused before {_where(paused)}; {runs}")
        running, since = thread, step
    if len(lines) > _NARRATIVE_LIMIT:
        hidden = len(lines) - _NARRATIVE_LIMIT
        lines = lines[:_NARRATIVE_LIMIT // 2] + [f"  ... {hidden} more switches ..."] + \
            lines[-_NARRATIVE_LIMIT // 2:]
    return "\n".join(lines)


def _where(step: Any) -> str:
    source = linecache.getline(step.filename, step.lineno).strip()
    place = f"{report.place_name(step.filename)} line {step.lineno} in {step.function}"
    place = f"{place} (`{source}`)" if source else place
    return f"{place}, about to {step.access.text}" if step.access.text else place


def _segment_label(ran: list[Any]) -> str:
    """What a thread did between two switches, one line each: its reads and writes of plain
    values (``read _count=0``, ``write _count=1``), else of objects (``read items``), else
    the lines it ran (``line 12``, ``lines 12-14``)."""
    accesses = [step.access.text for step in ran if step.access.valued] or \
        [step.access.text for step in ran if step.access.text]
    if accesses:
        shown = accesses[:_LABEL_ACCESSES]
        more = len(accesses) - len(shown)
        return "\n".join(shown) + (f" +{more}" if more else "")
    lines = [step.lineno for step in ran if step.lineno]
    if not lines:
        return ""
    low, high = min(lines), max(lines)
    return f"line {low}" if low == high else f"lines {low}-{high}"


def _timeline(outcome: Outcome, verdict: str) -> Timeline:
    timeline = Timeline(lanes=list(outcome.names), xlabel="scheduler step",
                        title=f"controlled schedule: {verdict}")
    switches = sorted(outcome.switches)
    end = max(outcome.last_step, switches[-1][0] if switches else 0) + 1
    steps = sorted(outcome.steps, key=lambda step: step.step)
    paused_at: dict[int, Any] = {}  # each thread's latest decision: what it does when it runs
    seen = 0
    for (start, thread), following in zip(switches, [*switches[1:], (end, -1)], strict=False):
        stop = following[0]
        while seen < len(steps) and steps[seen].step <= start:
            paused_at[steps[seen].thread] = steps[seen]
            seen += 1
        ran = [paused_at[thread]] if thread in paused_at else []
        ahead = seen
        while ahead < len(steps) and steps[ahead].step < stop:
            if steps[ahead].thread == thread:
                ran.append(steps[ahead])
            ahead += 1
        timeline.segments.append(Segment(thread, start, stop, _segment_label(ran)))
    timeline.switches = [step for step, _ in switches[1:]]
    if verdict == "error" and outcome.error_thread is not None:
        timeline.marks.append(Mark(outcome.error_thread, end, type(outcome.error).__name__))
    elif verdict == "deadlock":
        for thread in outcome.blocked:
            timeline.marks.append(Mark(thread, end, "blocked"))
    elif switches:
        timeline.marks.append(Mark(switches[-1][1], end, "check failed"))
    return timeline
