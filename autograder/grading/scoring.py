"""Scores from the runner's report: each test's points and reason, and the notebook's status.

A test scores its points only when the runner reported it finished, raised nothing, found the
grader's names intact and saw no escape hatch tried since the previous test, and the host's
judge accepted what each hidden check observed (:func:`score_tests`); an answer cell that
raised, timed out or tried to change the grader zeroes the tests that grade it
(:func:`zero_broken_answers`).
"""

from __future__ import annotations

from autograder.grading.cells import Plan, Structure
from autograder.grading.execute import Run
from autograder.grading.feedback import scrub
from autograder.grading.spec import JobResult, Status, set_status
from autograder.judges import Refusal, verdict
from autograder.kernel import protocol
from autograder.kernel.runner import make_plain_encoder

TAMPER_PHRASE = protocol.TOOLS_REPLACED
"""Text the harness puts in a check's message when code under test replaced its tools."""


#: The status of a run the host stopped, by why it stopped it (any other stop: kernel-died).
_STOPS = {"timeout": Status.TIMEOUT, "run-timeout": Status.TIMEOUT,
          "grader-error": Status.GRADER_ERROR}


def fail_whole(result: JobResult, structure: Structure, run: Run) -> None:
    """Score every test 0: the notebook could not be run to the end (``run`` says why)."""
    set_status(result, _STOPS.get(run.stopped, Status.KERNEL_DIED))
    reason = run.reason or "the notebook could not be run"
    result.notes.append(f"Grading stopped: {reason}. Every exercise of this notebook scores 0.")
    result.cells = {gid: [0.0, pts, reason] for gid, (_, pts) in structure.tests.items()}
    result.score = 0.0
    result.detail = reason


def _error_reason(error: dict, cells: list[dict] | None = None) -> str:
    text = f"{error.get('ename', '')}: {error.get('evalue', '')}".rstrip(": ")
    where = f" ({error['where']})" if error.get("where") else ""
    return scrub(text + where, cells)


def _wrong_values(cell: dict, event: dict) -> bool:
    """Whether an answer a hidden test called returned other than the judge expects (the
    expectations never left the host: see :func:`~autograder.grading.cells.split_test`)."""
    if event.get("error"):
        return False
    got = event.get("values")
    expected = cell.get("expected") or []
    if not isinstance(got, list) or len(got) != len(expected):
        return bool(expected)
    encode = make_plain_encoder()
    return any(want is not None and repr(value) != repr(encode(want[1]))
               for value, want in zip(got, expected, strict=True))


def _judged(cell: dict, event: dict) -> Refusal | None:
    """Why the judge refuses this test's hidden checks (the first refusal), or None.

    Every ``face.check_x(...)`` call of the test must have sent back what it observed, and the
    host's judge (:mod:`autograder.judges`) must accept it: the kernel never decides a pass.
    """
    if event.get("error"):
        return None
    calls = [call for call in cell.get("hidden") or [] if "face" in call]
    got = event.get("values")
    if not calls:
        return None
    if not isinstance(got, list) or len(got) != len(cell.get("hidden") or []):
        return Refusal("the kernel did not send what the hidden checks observed, so the test "
                       "cannot pass", malformed=True)
    for call, value in zip(cell["hidden"], got, strict=True):
        if "face" in call:
            refused = verdict(call["face"], call["check"], value)
            if refused is not None:
                return Refusal(f"{call['face']}.{call['check']}: {refused}",
                               malformed=refused.malformed)
    return None


def _refuse(gid: str, points: float, refused: Refusal, scores: dict,
            result: JobResult) -> None:
    """Score a test 0 whose check passed in the kernel but whose report the judge refused.

    A missing or extra report is not what any passing run of the check sends: the notebook
    forged, cut or planted it, so the notebook is ``tampered``. One report the judge does not
    accept after a passing check means the kernel's check and the judge disagree (or the report
    was rewritten with care): the test scores 0 and the instructor is told.
    """
    if refused.malformed:
        set_status(result, Status.TAMPERED)
        scores[gid] = (0.0, points, f"tampered: {scrub(refused)}")
        result.notes.append(f"{gid}: the check passed in the notebook's process, but "
                            f"{scrub(refused)}; that test scored 0.")
        return
    scores[gid] = (0.0, points, scrub(refused))
    result.notes.append(f"Flagged for the instructor: {gid}: the check passed in the "
                        f"notebook's process, but {scrub(refused)}; that test scored 0.")


def score_tests(plan: Plan, run: Run, structure: Structure,
                 result: JobResult) -> dict[str, tuple]:
    """Each test cell's (score, points, reason) from the runner's report of it."""
    scores = {}
    for gid, index in plan.tests.items():
        points = structure.tests[gid][1]
        event = run.ended.get(index)
        tried = [*(event or {}).get("tamper_before", []), *(event or {}).get("tamper", [])]
        if event is None:
            scores[gid] = (0.0, points, "the test did not run to the end")
        elif event.get("integrity") or tried:
            set_status(result, Status.TAMPERED)
            what = "; ".join([*event.get("integrity", []), *tried][:5])
            scores[gid] = (0.0, points, f"tampered: {scrub(what)}")
            result.notes.append(f"{gid}: the notebook changed or reached into the grader "
                                f"({scrub(what)}); that test scored 0.")
        elif _wrong_values(plan.cells[index], event):
            scores[gid] = (0.0, points, "a hidden test failed: the answer returned another value")
        elif refused := _judged(plan.cells[index], event):
            _refuse(gid, points, refused, scores, result)
        elif event.get("error"):
            reason = _error_reason(event["error"], plan.cells)
            if TAMPER_PHRASE in reason:
                set_status(result, Status.TAMPERED)
                result.notes.append(f"{gid}: the grader's tools were replaced by the notebook; "
                                    "that check scored 0.")
            scores[gid] = (0.0, points, reason)
        else:
            scores[gid] = (points, points, "passed")
    return scores


def zero_broken_answers(plan: Plan, run: Run, structure: Structure,
                         scores: dict[str, tuple], result: JobResult) -> None:
    """An answer cell that raised or timed out scores 0 on every test that grades it."""
    for index, cell in enumerate(plan.cells):
        error = (run.ended.get(index) or {}).get("error")
        if cell["kind"] != "answer" or not error:
            continue
        gid = cell["grade_id"]
        name = error.get("ename")
        if name == "CellTimeoutError":
            reason = f"answer cell {gid} did not finish within the time limit (a deadlock?)"
            set_status(result, Status.TIMEOUT)
        elif name == "TamperingError":
            reason = f"answer cell {gid} tried to change the grader's tools: " \
                     f"{scrub(error.get('evalue', ''))}"
            set_status(result, Status.TAMPERED)
        elif name == "NotImplementedError":
            reason = f"answer cell {gid} is not answered yet"
        elif name == "KernelDiedInThisCell":
            reason = f"answer cell {gid} stopped the grading process: {error.get('evalue', '')}"
        else:
            reason = f"answer cell {gid} raised {_error_reason(error, plan.cells)}"
        for test in structure.answers[gid]:
            _, points, _ = scores.get(test, (0.0, structure.tests[test][1], ""))
            scores[test] = (0.0, points, reason)
        result.notes.append(f"{reason}; {', '.join(structure.answers[gid]) or 'no test'} "
                            "scored 0.")


def detail(result: JobResult) -> str:
    """The grades table's line: points per test, then the first note unless graded (or, when
    graded, a flag for the instructor)."""
    parts = [f"{gid}={score:g}/{pts:g}" for gid, (score, pts, _) in result.cells.items()]
    flagged = [note for note in result.notes if note.startswith("Flagged for the instructor")]
    findings = [note for note in result.notes if note not in flagged]
    if result.status != Status.GRADED and findings:
        parts.append("| " + findings[0])
    elif flagged:
        parts.append("| " + flagged[0])
    return " ".join(parts)


