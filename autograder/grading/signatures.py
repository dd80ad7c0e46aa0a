"""Failure signatures of a graded notebook: for each test it failed, what kind of failure and
which steps of the answer broke it, with a short hash that is the same for the same mistake.

A check that fails through ``kit.require`` hands the runner its signature as plain data (see
:mod:`autograder.checks.kit.signature`): the failing interleaving cut down to its conflict, with
the answer's names as letters. The runner copies it into the cell's error; here, on the host,
it is read as untrusted data (shapes and sizes checked, anything else dropped), joined with
what the host knows itself (the lesson, the test's grade_id, the check the hidden test called,
the student's cells and lines) and hashed. A failure without one (a check's own assertion, an
exception, a timeout, a tampered or deleted cell, a notebook that could not run) gets a
signature from the host's own record of it: its kind and the first line of its message, with
numbers, addresses and cell names left out, so that real-thread runs, whose numbers vary,
still give the same hash.

Signatures are information for the instructor's class report (:mod:`~autograder.grading.report`)
only: no score reads them. :func:`failure_signatures` makes them for a :class:`JobResult`.
"""

from __future__ import annotations

import hashlib
import json
import re

from autograder.grading.cells import Plan, Structure
from autograder.grading.execute import Run
from autograder.grading.feedback import cell_line, scrub
from autograder.grading.spec import JobResult, Status

#: Kinds a signature from the runner may name (anything else is read as "wrong result").
RACE_KINDS = ("lost update", "check-then-act", "torn or stale read", "deadlock", "timeout",
              "race (real threads)", "wrong result")
#: Statuses whose notebooks need a human look before their scores are trusted.
HUMAN_STATUSES = (Status.GRADER_ERROR.value, Status.TAMPERED.value, Status.KERNEL_DIED.value,
                  Status.TIMEOUT.value, Status.MISSING_CELLS.value, Status.INVALID_NOTEBOOK.value,
                  Status.WORKER_LOST.value)
_OPS = ("read", "write", "acquire", "release", "wait", "call")
_MAX_STEPS = 24
_EXCEPTION = re.compile(r"^exception: [A-Za-z_][A-Za-z0-9_.]{0,80}$")
_ANSWER_ERRORS = {"CellTimeoutError": "timeout", "KernelDiedInThisCell": "kernel-died",
                  "TamperingError": "tampered", "NotImplementedError": "not answered"}
_VERBS = {"read": "reads", "write": "writes", "acquire": "takes a lock",
          "release": "releases a lock", "wait": "waits for a lock", "call": "calls"}


def failure_signatures(result: JobResult, plan: Plan | None = None, run: Run | None = None,
                       structure: Structure | None = None) -> dict[str, dict]:
    """A signature per test of ``result`` that scored less than its points.

    Args:
        result: The scored job (its ``cells``, ``status``, ``assignment``).
        plan, run, structure: The run that scored it, when the notebook ran (None when it
            could not be read or run at all: the signature is then the notebook's status).

    Returns:
        ``{test grade_id: signature}``, each ``{"lesson", "exercise", "check", "kind",
        "steps", "story", "text", "schedule", "replay", "hash"}`` (see :func:`make`) and
        ``visible``: whether the test cell's visible part passed (True: only hidden checks
        failed; None: the cell did not run, or was refused).
    """
    answer_errors = _answer_errors(plan, run, structure)
    found = {}
    for gid, (score, points, reason) in result.cells.items():
        if score >= points:
            continue
        check, error, visible = "", None, None
        if plan is not None and run is not None and gid in plan.tests:
            index = plan.tests[gid]
            event = run.ended.get(index) or {}
            error = event.get("error") if isinstance(event.get("error"), dict) else None
            check = _check_name(plan.cells[index], event)
            visible = _visible_passed(event)
        signature = _from_runner(error, plan) if error else None
        if gid in answer_errors:
            kind, text, answer = answer_errors[gid]
            signature, check = None, f"answer cell {answer}"
        elif str(reason).startswith("tampered"):
            kind, text = "tampered", ""
        elif signature is not None:
            kind = signature["kind"]
            text = "" if signature["steps"] else str(error.get("evalue", ""))
        elif plan is None or run is None:
            graded = result.status == Status.GRADED.value
            kind, text = ("no signature recorded" if graded else result.status), reason
        elif error is not None:
            ename = str(error.get("ename", ""))
            kind = "wrong result" if ename == "AssertionError" else f"exception: {ename}"
            text = str(error.get("evalue", ""))
        elif reason == "cell deleted":
            kind, text = Status.MISSING_CELLS.value, ""
        elif gid not in plan.tests or run.ended.get(plan.tests[gid]) is None:
            kind = result.status if result.status != Status.GRADED.value else "did not run"
            text = ""
        else:
            kind, text = "wrong result", reason
        found[gid] = make(result.assignment, gid, check, kind, signature, text)
        found[gid]["visible"] = visible
    return found


def make(lesson: str, exercise: str, check: str, kind: str, signature: dict | None,
         text: str) -> dict:
    """One signature: what it is made of, and its hash.

    The hash covers the lesson, the exercise, the check, the kind and either the steps (from
    the runner) or the normalised first line of the message (``text``).
    """
    steps = signature["steps"] if signature else []
    text = "" if steps else normalise(text)
    record = {"lesson": lesson, "exercise": exercise, "check": check, "kind": kind,
              "steps": steps, "story": signature["story"] if signature else [], "text": text,
              "schedule": signature["schedule"] if signature else None,
              "replay": signature["replay"] if signature else []}
    record["hash"] = signature_hash(record)
    return record


def signature_hash(record: dict) -> str:
    """Ten hex digits of SHA-256 over what identifies a signature (not its story or replay)."""
    key = [record["lesson"], record["exercise"], record["check"], record["kind"],
           record["steps"], record["text"]]
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:10]


def normalise(text: str) -> str:
    """A message's informative line (what the check saw, else the first line) without what
    varies between runs or students: addresses, runner cell names, numbers (``#``), spacing;
    at most 200 characters."""
    lines = [line.strip() for line in scrub(str(text)).splitlines() if line.strip()]
    saw = [line for line in lines if line.startswith("What the check saw:")]
    first = saw[0] if saw else lines[0] if lines else ""
    first = re.sub(r"(?<![#\d])\d+(\.\d+)?", "#", first)
    return re.sub(r"\s+", " ", first).strip()[:200]


def describe_steps(steps: list) -> str:
    """Normalised steps in words: ``worker 0 read A (lock held) -> worker 2 write A``."""
    words = []
    for thread, op, place, locked in steps:
        who = "the check" if thread < 0 else f"worker {thread}"
        words.append(f"{who} {op}{' ' + place if place else ''}{' (lock held)' if locked else ''}")
    return " -> ".join(words)


def _answer_errors(plan: Plan | None, run: Run | None,
                   structure: Structure | None) -> dict[str, tuple[str, str, str]]:
    """Test grade_id -> (kind, message, answer grade_id) for the tests of each answer cell
    that raised."""
    if plan is None or run is None or structure is None:
        return {}
    found: dict[str, tuple[str, str, str]] = {}
    for index, cell in enumerate(plan.cells):
        error = (run.ended.get(index) or {}).get("error")
        if cell["kind"] != "answer" or not isinstance(error, dict):
            continue
        ename = str(error.get("ename", ""))
        kind = _ANSWER_ERRORS.get(ename, f"exception: {ename}")
        for test in structure.answers.get(cell["grade_id"], []):
            found.setdefault(test, (kind, "" if ename in _ANSWER_ERRORS else
                                    str(error.get("evalue", "")), cell["grade_id"]))
    return found


def _check_name(cell: dict, event: dict) -> str:
    """The hidden check a test cell's failure came from (``anatomy.check_counter``): the call
    after those that returned, or the first answer call when none raised; ``visible test``
    when the cell's visible part raised; "" when the test did not run."""
    calls = cell.get("hidden") or []
    values = event.get("values")
    if not event:
        return ""
    if not isinstance(values, list):
        return "visible test" if event.get("error") else ""
    failed = len(values) if event.get("error") else next(
        (i for i, call in enumerate(calls) if "answer" in call), len(calls))
    if failed >= len(calls):
        return ""
    call = calls[failed]
    if "face" in call:
        return f"{call['face']}.{call['check']}"
    return str(call.get("answer", ""))


def _visible_passed(event: dict) -> bool | None:
    """Whether the test cell's visible part ran without raising (its hidden calls were made
    only then); None when the cell did not run."""
    if not event or event.get("integrity"):
        return None
    return isinstance(event.get("values"), list)


def _from_runner(error: dict, plan: Plan | None) -> dict | None:
    """The runner's signature of a failing check, read as untrusted data; None unless every
    part has the expected shape."""
    data = error.get("signature")
    if not isinstance(data, dict):
        return None
    kind = data.get("kind")
    steps = data.get("steps")
    if not isinstance(kind, str) or not (kind in RACE_KINDS or _EXCEPTION.match(kind)):
        return None
    if not isinstance(steps, list) or len(steps) > _MAX_STEPS or not all(
            isinstance(s, list) and len(s) == 4 and type(s[0]) is int and s[1] in _OPS
            and isinstance(s[2], str) and len(s[2]) <= 40 and type(s[3]) is bool
            for s in steps):
        return None
    names = data.get("names") if isinstance(data.get("names"), list) else []
    at = data.get("at") if isinstance(data.get("at"), list) else []
    story = [_story(step, names[i] if i < len(names) else "", at[i] if i < len(at) else None,
                    plan) for i, step in enumerate(steps)]
    schedule = data.get("schedule")
    again = data.get("again")
    replay = []
    if isinstance(again, str) and len(again) <= 300:
        replay = [f"result = {again}", "print(result)", "result.figure()"]
    return {"kind": kind, "steps": [list(s) for s in steps], "story": story,
            "schedule": schedule if isinstance(schedule, str) and len(schedule) <= 400
            else None, "replay": replay}


def _story(step: list, name: object, at: object, plan: Plan | None) -> str:
    """One step as the representative's own code says it: ``worker 2 writes value (line 15 of
    your answer cell ex_anatomy_counter (In [12]): `self.value = 0`)``."""
    thread, op, place, locked = step
    who = "the check" if thread < 0 else f"worker {thread}"
    what = name if isinstance(name, str) and name and op in ("read", "write") else place
    text = f"{who} {_VERBS[op]}{' ' + what if what else ''}"
    text += " (holding a lock)" if locked and op in ("read", "write", "call") else ""
    if plan is not None and isinstance(at, list) and len(at) == 2 and isinstance(at[0], str) \
            and type(at[1]) is int:
        found = cell_line(plan.cells, at[0], at[1])
        if found:
            words, code = found
            text += f", line {at[1]} of {words}" + (f": `{code}`" if code else "")
    return scrub(text)[:400]
