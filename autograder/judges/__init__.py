"""The judge: each hidden check's verdict, decided on the host from what the kernel observed.

A hidden test ``face.check_x(Answer)`` runs in the student's kernel, where any secret (a key, a
frame, an expectation) belongs to the student. So the kernel only *observes*: the check drives
the answer under controlled schedules and load and, when its own verdict passed, hands its raw
observations (counts, values, orders, one entry per schedule or trial) to the runner through
:func:`autograder.checks.kit.report`. The host then calls ``autograder.judges.<face>.check_x``
on them, here, in a process that never runs student code. The judge holds the expectations
(the kernel's sandbox does not even mount this package), so a test passes only when

- the kernel ran the check to the end and it raised nothing (a kernel-side failure is always a
  failure: a student can only lie downwards there), and
- the judge found, in plain data the kernel sent, the outcomes a correct answer produces.

What crosses is plain data only, as the runner's encoder writes it
(:func:`autograder.kernel.runner.make_plain_encoder`), in the spirit of PrairieLearn's
``names_from_user``: named values cross from student code to tests, never objects. Missing,
extra, malformed or "not plain" observations, an unknown check and a judge that raises are all
a rejection, never a pass.

What remains (the README's threat model): code that recognises its test and knows the lesson
can send the observations a correct answer would produce. It cannot end, skip or sign a test,
and nothing it sends is trusted beyond being compared with the judge's expectations.
"""

from __future__ import annotations

import importlib
import math
import re
from collections.abc import Callable
from typing import Any


class Rejected(Exception):
    """The observations do not show a correct answer; the message says what the judge saw."""


class Malformed(Rejected):
    """The kernel's report is not the plain data the check sends (forged, cut or hostile)."""


class Refusal(str):
    """Why the judge refused a check's report (a str), and whether what the runner sent was
    malformed (``malformed``: not one report, as every passing run of a check sends, so the
    notebook forged, cut or planted it) rather than one report the judge does not accept."""

    malformed: bool = False

    def __new__(cls, reason: str, *, malformed: bool) -> Refusal:
        refusal = super().__new__(cls, reason)
        refusal.malformed = malformed
        return refusal


def expect(condition: bool, message: str) -> None:
    """Reject with ``message`` unless ``condition`` holds."""
    if condition is not True:
        raise Rejected(message)


def field(seen: dict, key: str, kind: type | tuple[type, ...]) -> Any:
    """``seen[key]``, which must be of exactly ``kind`` (bool is not an int here)."""
    if key not in seen:
        raise Malformed(f"the observation {key!r} is missing")
    value = seen[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if type(value) not in kinds:
        raise Malformed(f"the observation {key!r} is a {type(value).__name__}")
    if type(value) is float and not math.isfinite(value):
        raise Malformed(f"the observation {key!r} is not a finite number")
    return value


def items(seen: dict, key: str, kind: type | tuple[type, ...], *, at_least: int = 1,
          at_most: int = 1_000_000) -> list:
    """``seen[key]``: a list of ``at_least`` to ``at_most`` values of exactly ``kind``."""
    values = field(seen, key, list)
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not at_least <= len(values) <= at_most:
        raise Malformed(f"the observation {key!r} holds {len(values)} entries, not "
                        f"{at_least} to {at_most}")
    for value in values:
        if type(value) not in kinds:
            raise Malformed(f"an entry of {key!r} is a {type(value).__name__}")
    return values


def explored(seen: dict, graded: int, samples: int) -> list:
    """``seen["schedules"]``: one observation per schedule an ``explore`` run ran, which must
    be the graded search's length: ``graded`` schedules, or every schedule within its bound
    and then ``samples`` more, or every schedule there is (the kernel's
    :func:`autograder.checks.kit.explored_report`)."""
    ran = field(seen, "schedules_run", int)
    covered = field(seen, "covered", bool)
    bounded = field(seen, "bounded", int)
    expect(ran == graded or (covered and 0 < ran == bounded < graded)
           or (not covered and 0 < bounded and ran == bounded + samples < graded),
           f"{ran} schedules ran ({bounded} within the search's bound), not the graded "
           f"{graded} or the bound and {samples} more")
    return items(seen, "schedules", dict, at_least=ran, at_most=ran)


def fresh_versions(reads: list[tuple[int, float]], published: dict[int, float | None], *,
                   first: int, last: int, who: str) -> None:
    """One reader's ``(version, started)`` reads, in order: each of a version that was
    published (or ``first``), never older than a version whose publish had returned (its time
    in ``published``; None: not timed) before the read started, never going backwards, and
    the last one of ``last``. The rule of every lesson that publishes versions to readers."""
    seen = first
    for version, started in reads:
        expect(version == first or version in published,
               f"{who} got version {version}, which was never published")
        newest = max((v for v, at in published.items() if at is not None and at < started),
                     default=first)
        expect(version >= newest, f"{who} got version {version} after version {newest} was "
                                  "published")
        expect(version >= seen, f"{who}'s versions went back from {seen} to {version}")
        seen = version
    expect(seen == last, f"{who}'s last read got version {seen}, not the last published, "
                         f"{last}")


_DECODERS = ("list", "tuple", "dict")


def decode(encoded: Any, depth: int = 0) -> Any:
    """The value the runner's plain encoder wrote (``["list", [...]]``...), back as Python data.

    Raises:
        Malformed: anything the encoder cannot have written, or a "not plain" marker.
    """
    kind = type(encoded)
    if encoded is None or kind in (bool, int, float, str):
        return encoded
    if depth > 12 or kind is not list or len(encoded) != 2 or type(encoded[0]) is not str:
        raise Malformed("the report is not plain data")
    tag, body = encoded
    if tag == "not plain":
        raise Malformed(f"the check observed a {body!r}, not plain data")
    if tag not in _DECODERS or type(body) is not list:
        raise Malformed("the report is not plain data")
    if tag == "dict":
        decoded = {}
        for pair in body:
            if type(pair) is not list or len(pair) != 2:
                raise Malformed("the report is not plain data")
            key = decode(pair[0], depth + 1)
            if type(key) is not str:
                raise Malformed("an observation is named by something other than a str")
            decoded[key] = decode(pair[1], depth + 1)
        return decoded
    values = [decode(item, depth + 1) for item in body]
    return values if tag == "list" else tuple(values)


_NAME = re.compile(r"[a-z][a-z0-9_]*\Z")


def judge_of(face: str, check: str) -> Callable[[dict], None] | None:
    """The judge function of ``face.check`` (same name, in ``autograder.judges.<face>``, one
    module per lesson, named as the lesson's face), or None."""
    if not _NAME.match(face) or not _NAME.match(check) or not check.startswith("check_"):
        return None
    try:
        module = importlib.import_module(f"autograder.judges.{face}")
    except ModuleNotFoundError:
        return None
    found = getattr(module, check, None)
    return found if callable(found) else None


def verdict(face: str, check: str, encoded: Any) -> Refusal | None:
    """None when the judge accepts what the kernel observed for ``face.check``; else why not.

    Args:
        face: The lesson's face, as the hidden test names it (``"anatomy"``).
        check: The check it called (``"check_counter"``).
        encoded: What the runner sent for that call: the list of reports the check made,
            encoded as plain data. Exactly one report must be there.
    """
    judge = judge_of(face, check)
    if judge is None:
        return Refusal(f"the grader has no judge for {face}.{check}", malformed=True)
    # The runner always sends a list of the check's reports, and a passing check reports once:
    # anything else is not a run of the check (forged, cut or planted), so it is tampering.
    if type(encoded) is not list or len(encoded) != 2 or encoded[0] != "list" \
            or type(encoded[1]) is not list or len(encoded[1]) != 1:
        count = len(encoded[1]) if type(encoded) is list and len(encoded) == 2 \
            and type(encoded[1]) is list else 0
        return Refusal(f"the check must report its observations once, not {count} times, so "
                       "the test cannot pass", malformed=True)
    # Inside the one report, anything the judge cannot accept scores 0 and is shown to the
    # instructor, but never brands the notebook: a report a check wrote can only disagree with
    # the judge through a fault of the grader's, or a forger who already got this far.
    try:
        report = decode(encoded[1][0])
        if type(report) is not dict:
            raise Malformed("the report is not a dict of observations")
        judge(report)
    except Malformed as problem:
        return Refusal(f"the judge could not read what the check observed ({problem}), so "
                       "the test cannot pass", malformed=False)
    except Rejected as problem:
        return Refusal(f"the judge rejected what the check observed: {problem}",
                       malformed=False)
    except Exception as problem:  # noqa: BLE001 - a report that breaks the judge never passes
        return Refusal(f"the judge could not read what the check observed "
                       f"({type(problem).__name__}), so the test cannot pass", malformed=False)
    return None
