"""The five graders hidden tests call, and how exercises 2 to 4 are graded on the logs.

Each grader, once its own verdict passed, reports what it saw (:func:`autograder.checks.kit.
report`) for the host's judge (:mod:`autograder.judges.tracing`), which decides: the records
``log_access`` made in every stress trial, every graded log with what the analysis returned
on it, and every explored schedule of ``publish_locked``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from autograder.checks.kit import (
    Overlap,
    call_text,
    describe_error,
    explored_report,
    report,
    require,
    smoke,
)
from autograder.checks.plain import NotPlainData, plain
from autograder.checks.tracing.logs import _conflict_edge_logs, _hidden_logs, _lockset_edge_logs
from autograder.checks.tracing.publishing import run_publish_locked
from autograder.checks.tracing.recording import (
    TOGETHER_CASES,
    _record,
    run_log_access,
    run_log_access_explore,
    run_log_access_together,
)
from autograder.checks.tracing.references import (
    reference_find_conflicts,
    reference_lockset_races,
    reference_who_overwrote,
)
from autograder.checks.tracing.settings import TOGETHER_WAIT_S

# --------------------------------------------------------------------------- exercise 1


def check_log_access(log_access: Callable[..., Any]) -> None:
    """Graded: every record names its thread, brackets the call, survives an exception, and
    the accesses it logs still overlap (real threads); no record is lost in any explored
    schedule of two threads (:func:`run_log_access_explore`).

    Reports (for the judge) the one-call smoke test's value and record, every stress trial's
    values, raised errors, records and the times ``fn`` noted inside each call, and the same
    for every explored schedule.
    """
    one_call = _smoke_log_access(log_access)
    trials: list = []
    overlap = Overlap()
    result = run_log_access(log_access, observed=trials, overlap=overlap)
    require(result, exercise="log_access",
            again=call_text("tracing.run_log_access", "log_access"))
    if overlap.most < 2:
        raise AssertionError(
            f"log_access: in {result.schedules_run} trials of three threads whose fn() sleeps, "
            "no two fn() calls ever ran at once: log_access serialises the accesses it logs "
            "(a lock of its own around fn()), so the log can no longer show the races it is "
            "there to find; expected it to hold no lock around fn() (appending to a list is "
            "atomic)")
    together = run_log_access_together(log_access)
    apart = [name for name, _, _ in TOGETHER_CASES if not together[name]]
    if apart:
        raise AssertionError(
            f"log_access: two threads that hold no lock each logged a {apart[0]} of one "
            f"resource, and each fn() waited {TOGETHER_WAIT_S:g} s for the other's fn() to "
            "start too, in vain: log_access ran them one after the other (a lock of its own "
            "around fn()), so the log can no longer show the races it is there to find; "
            "expected it to hold no lock around fn(), for reads and writes alike, and to "
            "record the lock a caller names, not to take one for it")
    schedules: list = []
    explored = run_log_access_explore(log_access, observed=schedules)
    require(explored, exercise="log_access",
            again=call_text("tracing.run_log_access_explore", "log_access"))
    report({"one_call": one_call, "trials": trials, "trials_run": result.schedules_run,
            "overlap": overlap.most, "together": together,
            "explored": explored_report(explored, schedules)})


def _smoke_log_access(log_access: Callable[..., Any]) -> dict[str, Any]:
    """One call on one thread; AssertionError if its contract is not met.

    Returns:
        The judge's observation: what it returned, how many records it appended, the record's
        keys (its str ones) and its ``[op, resource, lock]``.
    """
    log: list[dict[str, Any]] = []
    lock = "best_lock"
    value = smoke("log_access", lambda: log_access(log, "write", "best", lambda: 7, lock=lock))
    value = plain(value, "log_access: log_access(log, 'write', 'best', fn, lock='best_lock')")
    assert value == 7, f"log_access: expected it to return fn's value 7, got {value!r}"
    assert len(log) == 1, f"log_access: expected one record appended, got {len(log)}"
    record = plain(log[0], "log_access: reading the record it appended")
    assert isinstance(record, dict), f"log_access: expected a dict record, got {record!r}"
    missing = {"thread", "op", "resource", "start", "end", "lock"} - set(record)
    assert not missing, f"log_access: expected keys {sorted(missing)} in the record, got {record}"
    assert record["lock"] == lock, (
        f"log_access: expected the record's lock to be the name passed in, {lock!r}, got "
        f"{record['lock']!r}")
    assert record["op"] == "write" and record["resource"] == "best", (
        f"log_access: expected op 'write' and resource 'best' in the record, got {record}")
    return {"value": value, "records": len(log),
            "keys": sorted(key for key in record if type(key) is str),
            "record": [record["op"], record["resource"], record["lock"]]}


# --------------------------------------------------------------------------- exercises 2 to 4


def _grade_on_hidden_logs(answer: Callable[[list[dict[str, Any]]], Any], *, exercise: str,
                          reference: Callable[[Sequence[dict[str, Any]]], set[Any]],
                          normalise: Callable[[Any], set[Any]], explain: Callable[
                              [list[dict[str, Any]], Any], str],
                          logs: list[tuple[str, list[dict[str, Any]]]] | None = None
                          ) -> dict[str, Any]:
    """Grade ``answer`` on every log; AssertionError at the first log it gets wrong.

    Returns:
        The judge's observation: each log's name, its records as ``[thread, op, resource,
        start, end, lock]``, the results ``answer`` returned on it as the check compared them
        (normalised, a tuple as a list) and how many it returned.
    """
    graded = []
    for name, log in _hidden_logs() if logs is None else logs:
        given = _copy(log)
        try:
            got = answer(given)
        except Exception as error:  # noqa: BLE001 - reported to the student
            raise AssertionError(f"{exercise}: on the {name} ({len(log)} records) it raised "
                                 f"{describe_error(error)}") from None
        try:
            unchanged = plain(given, exercise) == log
        except NotPlainData:  # something that is no plain record was put in the log
            unchanged = False
        assert unchanged, f"{exercise}: expected the log to be left unchanged, it was modified"
        try:
            # The results as plain data: their own ==, hash and iteration never decide.
            items = plain(_listed(got), f"{exercise}: on the {name}, {exercise}(log)")
            seen = normalise(items)
        except (TypeError, ValueError) as error:
            raise AssertionError(f"{exercise}: expected a list of tuples, got {got!r} "
                                 f"({error})") from None
        expected = reference(log)
        if len(items) != len(seen):
            # The spec says each result once: compared as a list, not only as a set
            # (issue #18, class 6).
            repeated = next(item for item in items if items.count(item) > 1)
            shown = tuple(repeated) if isinstance(repeated, list) else repeated
            raise AssertionError(
                f"{exercise}: on the {name} ({len(log)} records) expected each result once, "
                f"but the {len(items)} results hold only {len(seen)} different ones "
                f"({shown!r} more than once)")
        if seen != expected:
            extra = sorted(seen - expected)
            missed = sorted(expected - seen)
            lines = [f"{exercise}: on the {name} ({len(log)} records) expected "
                     f"{len(expected)} result(s), got {len(seen)}."]
            if missed:
                lines.append(f"  missed: {missed[0]!r}" + explain(log, missed[0]))
            if extra:
                lines.append(f"  wrongly reported: {extra[0]!r}" + explain(log, extra[0]))
            raise AssertionError("\n".join(lines))
        # What was compared: the normalised results (any shape the check accepts reads the
        # same way here) and how many the answer returned (each once).
        graded.append({"name": name, "log": [_record(r) for r in log],
                       "results": [_as_read(item) for item in sorted(seen, key=repr)],
                       "returned": len(items)})
    return {"logs": graded}


def _as_read(item: Any) -> Any:
    """A result as the normalising step read it: a tuple result as a list of its parts."""
    return list(item) if type(item) in (list, tuple) else item


def _listed(got: Any) -> list[Any]:
    """The items of what ``who_overwrote``/``find_conflicts`` returned, in a list. A list,
    tuple, set or dict (or a subclass) is read through the built-in type's own iteration;
    anything else (a generator) is iterated once."""
    for base in (list, tuple, set, frozenset, dict):
        if issubclass(type(got), base):
            return list(base.__iter__(got))
    return list(got)


def _copy(log: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [dict(r) for r in log]


def _describe_record(log: Sequence[dict[str, Any]], i: int) -> str:
    r = log[i]
    lock = f", lock {r['lock']}" if r.get("lock") else ", no lock"
    return (f"[{i}] {r['thread']} {r['op']}s {r['resource']} "
            f"from {r['start']} to {r['end']} ns{lock}")


def _norm_overwrites(got: Any) -> set[tuple[str, str, str]]:
    items = list(got)
    seen = set()
    for item in items:
        a, b, c = item
        seen.add((a, b, c))
    return seen


def _explain_overwrite(log: list[dict[str, Any]], item: Any) -> str:
    try:
        over, lost, res = item
    except (TypeError, ValueError):
        return ""
    rows = sorted((r["start"], r["thread"], r["op"]) for r in log
                  if r["resource"] == res and r["thread"] in (over, lost))
    return "\n    accesses to " + repr(res) + " by these threads, by start: " + ", ".join(
        f"{t} {op}@{s}" for s, t, op in rows)


def check_who_overwrote(who_overwrote: Callable[[list[dict[str, Any]]], Any]) -> None:
    """Graded on 40 hidden seeded logs (20 racy, 20 clean) against the notebook's definition;
    reports every log and what ``who_overwrote`` returned on it (for the judge)."""
    report(_grade_on_hidden_logs(who_overwrote, exercise="who_overwrote",
                                 reference=reference_who_overwrote, normalise=_norm_overwrites,
                                 explain=_explain_overwrite))


def _norm_pairs(got: Any) -> set[tuple[int, int]]:
    seen = set()
    for item in list(got):
        i, j = item
        if isinstance(i, bool) or isinstance(j, bool) or not isinstance(i, int) \
                or not isinstance(j, int):
            raise TypeError(f"expected index pairs of ints, got {item!r}")
        seen.add((i, j))
    return seen


def _explain_pair(log: list[dict[str, Any]], item: Any) -> str:
    try:
        i, j = item
        return "\n    " + _describe_record(log, i) + "\n    " + _describe_record(log, j)
    except (TypeError, ValueError, IndexError, KeyError):
        return ""


def check_find_conflicts(find_conflicts: Callable[[list[dict[str, Any]]], Any]) -> None:
    """Graded on 5 small logs (accesses that start together, or listed out of order) and the
    40 hidden seeded logs (20 racy, 20 clean) against the notebook's definition; reports every
    log and what ``find_conflicts`` returned on it (for the judge)."""
    report(_grade_on_hidden_logs(find_conflicts, exercise="find_conflicts",
                                 reference=reference_find_conflicts, normalise=_norm_pairs,
                                 explain=_explain_pair,
                                 logs=_conflict_edge_logs() + _hidden_logs()))


def _norm_resources(got: Any) -> set[str]:
    seen = set()
    for item in list(got):
        if not isinstance(item, str):
            raise TypeError(f"expected resource names (str), got {item!r}")
        seen.add(item)
    return seen


def _explain_resource(log: list[dict[str, Any]], item: Any) -> str:
    rows = sorted((r["start"], r["thread"], r["op"], r.get("lock")) for r in log
                  if r["resource"] == item)
    return "\n    its accesses, by start: " + ", ".join(
        f"{t} {op} ({f'lock {lock}' if lock else 'no lock'})" for _, t, op, lock in rows)


def check_lockset_races(lockset_races: Callable[[list[dict[str, Any]]], Any]) -> None:
    """Graded on 7 small logs (one part of the definition each) and the 40 hidden logs;
    reports every log and what ``lockset_races`` returned on it (for the judge)."""
    report(_grade_on_hidden_logs(lockset_races, exercise="lockset_races",
                                 reference=reference_lockset_races, normalise=_norm_resources,
                                 explain=_explain_resource,
                                 logs=_lockset_edge_logs() + _hidden_logs()))


# --------------------------------------------------------------------------- exercise 5


_PUBLISH_ERROR_HINT = (
    "expected every trainer to hold the lock it was passed from before its read to after its "
    "write, and to release only a lock it holds. A timed acquire(timeout=...) can give up on "
    "a loaded machine (it returns False, and the scheduler tries that): check what it "
    "returned before you go on, or wait without a timeout")


def check_publish_locked(publish_locked: Callable[..., Any], **kwargs: Any) -> None:
    """Graded with the controlled scheduler: the best score survives, the log proves it.

    Reports (for the judge) every explored schedule's record, log and saves, how many
    schedules ran, whether they covered every schedule, and how many the bounded search ran.
    """
    schedules: list = []
    result = run_publish_locked(publish_locked, observed=schedules, **kwargs)
    require(result, exercise="publish_locked",
            again=call_text("tracing.run_publish_locked", "publish_locked", **kwargs),
            hints={"error": _PUBLISH_ERROR_HINT})
    report(explored_report(result, schedules))

