"""A failing verdict as a failure signature: what broke, in words that do not depend on how the
answer spells it, so that the same mistake in two notebooks reads the same.

The controlled scheduler keeps the failing run's decision points (:attr:`Result.trace
<autograder.harness.result.Result.trace>`): which thread was about to read, write, take or
give back what, where. :func:`signature_of` puts them in the order they ran, keeps the
answer's own steps (not the check's), and cuts out the *conflict*: for a lost update, the
read, the other thread's write and the write that overwrote it; for a check-then-act, the
check, the other thread's insert and the second insert; for a torn or stale read, the reads
around the other thread's write; for a deadlock, the lock steps. Names are replaced by letters
in order of appearance (``value`` and ``_count`` are both ``A``), lines and values are left
out, and each step says whether its thread held a lock. A different unprotected operation
gives other steps; a renamed attribute or a moved line gives the same ones.

What comes out is plain data (str, int, bool, lists and dicts of them): the grading runner
hands it to the host beside the check's message (see ``kit.verdict``), where it is information
for the instructor's class report only, never a score.
"""

from __future__ import annotations

import os
import re
from typing import Any

from autograder.harness import codemap

#: Files of the grader's own code (its checks' workers): their steps are the check's, not the
#: answer's.
_GRADER_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_DATA = frozenset({"read", "write"})
_LOCKING = frozenset({"acquire", "release", "wait"})
#: Steps kept when no conflict can be cut out (a sequence, capped so it stays small).
_MAX_STEPS = 24
_ITEM = re.compile(r"^\[(.*)\]$")
#: What a real-thread run says raised: ``worker 2 raised TypeError: ...``.
_RAISED = re.compile(r"\braised ([A-Za-z_][A-Za-z0-9_.]*)")


def signature_of(result: Any) -> dict:
    """The failure signature of a failing harness :class:`~autograder.harness.Result`.

    Returns:
        ``{"verdict", "kind", "steps", "names", "at", "schedule"}``: ``kind`` one of ``lost
        update``, ``check-then-act``, ``torn or stale read``, ``deadlock``, ``timeout``,
        ``exception: TypeName``, ``race (real threads)`` (a ``stress`` run: no steps to
        compare); ``steps`` the conflict, each ``[thread, op, place, locked]`` with
        places as letters; ``names`` each step's own name as the answer spells it; ``at``
        each step's ``[file, line]``; ``schedule`` the replay token (a str) or None.
    """
    trace = tuple(getattr(result, "trace", ()) or ())
    verdict = str(getattr(result, "verdict", ""))
    schedule = getattr(result, "schedule", None)
    events = _answer_events(_in_order(trace))
    raised = [entry[4][len("raised "):] for entry in trace if entry[4].startswith("raised ")]
    if verdict == "deadlock":
        kind, chosen = "deadlock", _still_held(events)
    elif verdict == "timeout":
        kind, chosen = "timeout", []
    elif verdict == "error" and raised:
        kind, chosen = f"exception: {raised[-1]}", _last_steps(events, trace)
    elif verdict == "error":
        found = _RAISED.search(str(getattr(result, "message", "")))
        kind, chosen = f"exception: {found.group(1) if found else 'unknown'}", []
    elif not trace:
        kind, chosen = "race (real threads)", []
    else:
        kind, chosen = _conflict(events)
    steps, names, at = _normalised(chosen[-_MAX_STEPS:])
    return {"verdict": verdict, "kind": kind, "steps": steps, "names": names, "at": at,
            "schedule": schedule if isinstance(schedule, str) else None}


def _in_order(trace: tuple) -> list[dict]:
    """The recorded decision points in the order their operations ran.

    A thread records what it is *about to* do; the operation runs when the thread next gets
    the turn, and it has run by the time the thread records its next decision point. So each
    record of a thread releases the thread's previous one. A blocked thread's attempt counts
    at once, as a ``wait``; an operation still pending when the run stopped never ran.
    """
    pending: dict[int, dict] = {}
    ran: list[dict] = []
    for thread, filename, line, function, note, op, name in trace:
        before = pending.pop(thread, None)
        step = {"thread": thread, "file": filename, "line": line, "function": function,
                "op": op, "name": name}
        if note.startswith("blocked"):
            if before is not None and not before.get("retry"):
                ran.append(before)
            if before is None or not before.get("retry"):
                ran.append({**step, "op": "wait", "name": ""})
            lock = "Lock" in note
            pending[thread] = {**step, "op": "acquire" if lock else "", "name": "",
                               "retry": True}
        elif note.startswith("raised "):
            if before is not None:
                ran.append(before)
            ran.append({**step, "op": "raise", "name": note[len("raised "):]})
        else:
            if before is not None and not (before.get("retry") and op == "acquire"
                                           and (filename, line) == (before["file"],
                                                                    before["line"])):
                ran.append(before)
            if note != "finished":
                pending[thread] = step
    return ran


def _is_answer(filename: str) -> bool:
    """Whether a step ran in the answer's code: a notebook cell or a file of the student's,
    not the grader's checks, the standard library or site-packages."""
    if not filename:
        return False
    if filename.startswith("<"):
        return not filename.startswith("<frozen")
    return not os.path.abspath(filename).startswith(_GRADER_DIR + os.sep) \
        and codemap.kind_of_file(filename) == codemap.USER


def _answer_events(ran: list[dict]) -> list[dict]:
    """The answer's own reads, writes, lock steps and C calls, each with its thread's lock count.

    An item (``d[k]``) or a C call (``d.get(k)``) is placed in the container its thread read
    last, and that read, only the way to the container, is left out (``self.values[key] = v``
    is one write of ``values[k]``; ``key in self.values`` stays a read of ``values``).
    """
    held: dict[int, int] = {}
    last_read: dict[int, dict] = {}
    events: list[dict] = []
    for step in ran:
        if step["op"] not in (*_DATA, *_LOCKING, "call") or not _is_answer(step["file"]):
            continue
        thread = step["thread"]
        event = {**step, "locked": held.get(thread, 0) > 0, "base": "", "key": None}
        if step["op"] == "acquire":
            held[thread] = held.get(thread, 0) + 1
        elif step["op"] == "release":
            held[thread] = max(0, held.get(thread, 0) - 1)
        item = _ITEM.match(step["name"]) if step["op"] in _DATA else None
        previous = last_read.pop(thread, None)
        if item or step["op"] == "call":
            if previous is not None:
                events.remove(previous)
                event["base"] = previous["base"]
            else:
                event["base"] = "?"
            event["key"] = item.group(1) if item else None
        elif step["op"] in _DATA:
            event["base"] = step["name"]
            if step["op"] == "read":
                last_read[thread] = event
        events.append(event)
    return events


def _related(event: dict, other: dict) -> bool:
    """Whether two accesses touch the same state: one place, or a container and its item."""
    return event["base"] == other["base"] and (
        event["key"] is None or other["key"] is None or event["key"] == other["key"])


def _conflict(events: list[dict]) -> tuple[str, list[dict]]:
    """The race's kind and its steps.

    First choice, an overwrite: a thread reads, another thread writes, the first writes on
    what it read (a lost update; a check-then-act when the writes are items of a container);
    the steps are the read, the other thread's read before its write, its write, and the
    overwrite. Else a read on both sides of another thread's write (torn or stale). Else the
    last two conflicting accesses.
    """
    data = [e for e in events if e["op"] in _DATA or e["op"] == "call"]
    for k, last in enumerate(data):
        if last["op"] != "write":
            continue
        mine = last["thread"]
        reads = [i for i in range(k) if data[i]["thread"] == mine and data[i]["op"] == "read"
                 and _related(data[i], last)]
        if not reads:
            continue
        first = reads[-1]
        others = [j for j in range(first + 1, k) if data[j]["thread"] != mine
                  and data[j]["op"] == "write" and _related(data[j], last)]
        if others:
            write = others[0]
            theirs = [i for i in range(first + 1, write)
                      if data[i]["thread"] == data[write]["thread"]
                      and data[i]["op"] == "read" and _related(data[i], last)]
            kind = "check-then-act" if last["key"] is not None else "lost update"
            return kind, [data[i] for i in (first, *theirs[-1:], write, k)]
    for m, later in enumerate(data):
        if later["op"] != "read":
            continue
        mine = later["thread"]
        for j in range(m - 1, -1, -1):
            write = data[j]
            if write["thread"] == mine or write["op"] != "write":
                continue
            earlier = [i for i in range(j) if data[i]["thread"] == mine
                       and data[i]["op"] == "read"]
            if earlier and (_related(data[earlier[-1]], write) or _related(later, write)):
                return "torn or stale read", [data[earlier[-1]], write, later]
    pairs = [(i, j) for j in range(len(data)) for i in range(j)
             if data[i]["thread"] != data[j]["thread"] and _related(data[i], data[j])
             and "write" in (data[i]["op"], data[j]["op"])]
    if pairs:
        i, j = pairs[-1]
        return "torn or stale read", [data[i], data[j]]
    return "torn or stale read", events


def _still_held(events: list[dict]) -> list[dict]:
    """A deadlock's steps: each thread's acquires it had not released, and its waits."""
    open_: dict[int, list[dict]] = {}
    waits: list[dict] = []
    for event in events:
        if event["op"] == "acquire":
            open_.setdefault(event["thread"], []).append(event)
        elif event["op"] == "release" and open_.get(event["thread"]):
            open_[event["thread"]].pop()
        elif event["op"] == "wait":
            waits.append(event)
    kept = {id(e) for held in open_.values() for e in held} | {id(e) for e in waits}
    return [e for e in events if id(e) in kept]


def _last_steps(events: list[dict], trace: tuple) -> list[dict]:
    """What the raising thread did last before it raised (at most three steps)."""
    thread = next((entry[0] for entry in reversed(trace) if entry[4].startswith("raised ")), -1)
    return [e for e in events if e["thread"] == thread][-3:]


def _normalised(chosen: list[dict]) -> tuple[list, list, list]:
    """Steps with places as letters (containers ``A``, ``B``...; keys ``k1``, ``k2``... in order
    of appearance), each step's own name, and where each ran."""
    letters: dict[str, str] = {}
    keys: dict[str, str] = {}
    steps, names, at = [], [], []
    for event in chosen:
        place = ""
        if event["op"] in _DATA:
            place = letters.setdefault(event["base"], _letter(len(letters)))
            if event["key"] is not None:
                place += f"[{keys.setdefault(event['key'], f'k{len(keys) + 1}')}]"
        elif event["op"] == "call":
            place = event["name"]
        steps.append([event["thread"], event["op"], place, bool(event.get("locked"))])
        shown = event["name"] if event["key"] is None else \
            f"{event['base']}[{event['key']}]"
        names.append(shown)
        at.append([event["file"], event["line"]])
    return steps, names, at


def _letter(index: int) -> str:
    return chr(ord("A") + index) if index < 26 else f"Z{index}"
