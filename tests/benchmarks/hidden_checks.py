"""A lesson's hidden tests on changed answer cells, in a child process, as the runner runs them.

The mutation benchmark grades each mutant through the whole grader (a job, a sandboxed runner,
nbgrader). ``make test`` runs a subset of those mutants here instead, at a fraction of the
cost: many mutants of one lesson in one child Python process that imported TensorFlow once.
For each one, :func:`hidden_outcomes` builds the plan the grader builds
(:func:`autograder.grading.cells.make_plan`: the notebook's code cells in order, the lesson's
own demonstrations that nothing graded reads left out, each test cell as the gradebook holds
it), runs it in a fresh ``__main__`` that holds the lesson's trusted imports
(:func:`~autograder.grading.cells.preload`) and makes each hidden call as the runner does: the
check, taken from those imports, is handed the notebook's names; what it observed crosses as
plain data to the host's judge (:func:`tests.checks.grading_runs.judged`); an answer's return
value is compared with the constant the test expects. Not here: the sandbox, the seal and
the audit hook (the attack tests cover them), and nbgrader's bookkeeping.
"""

from __future__ import annotations

import builtins
import contextlib
import copy
import io
import sys
import types
from collections.abc import Sequence

from autograder.checks.child import Crashed, run_in_children
from autograder.course.source import grade_id, read_lesson
from autograder.grading import cells
from autograder.kernel import magics
from autograder.kernel.runner import make_plain_encoder
from tests.checks.grading_runs import REPO, judged, solution_lesson

PASSED = "passed"


def hidden_outcomes(lesson_name: str, replaced: dict[str, str]) -> dict[str, str]:
    """Run ``lesson_name``'s graded plan with the answer cells in ``replaced`` changed.

    Args:
        lesson_name: The lesson, e.g. ``"02_mutex"``.
        replaced: Answer grade_id -> the cell's source to run instead of the solution's.

    Returns:
        Test grade_id -> :data:`PASSED`, or the failure as ``"Error: message"``, for each
        test cell up to the first that lost.
    """
    release = read_lesson(solution_lesson(lesson_name))
    submitted = copy.deepcopy(release)
    for cell in submitted.cells:
        if grade_id(cell) in replaced:
            cell.source = replaced[grade_id(cell)]
    graded = {grade_id(c): c.source for c in release.cells if cells.is_test(c)}
    plan = cells.make_plan(submitted, graded, cells.structure(release), set(), release)
    notebook = types.ModuleType("__main__")
    scope = notebook.__dict__
    scope["__builtins__"] = builtins
    shell = magics.GradingShell(scope)
    scope["get_ipython"] = lambda: shell
    exec("\n".join(cells.preload(release)), scope)
    faces = dict(scope)
    outcomes: dict[str, str] = {}
    main = sys.modules["__main__"]
    sys.modules["__main__"] = notebook
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            _run(plan, scope, faces, outcomes)
        finally:
            sys.modules["__main__"] = main
    return outcomes


def _run(plan: cells.Plan, scope: dict, faces: dict, outcomes: dict[str, str]) -> None:
    """Run the plan's cells in ``scope`` up to the first lost test; record each test cell's
    outcome in ``outcomes``.

    A lost test already decides the verdict (killed): the cells after it are not run.
    """
    for cell in plan.cells:
        try:
            exec(compile(magics.to_python(cell["source"]), cell["label"], "exec"), scope)
            if cell["kind"] == "test":
                for call, expected in zip(cell["hidden"], cell["expected"], strict=True):
                    _call(call, expected, scope, faces)
        except BaseException as error:  # noqa: BLE001 - every failure is a lost test
            if cell["kind"] == "test":
                outcomes[cell["grade_id"]] = f"{type(error).__name__}: {error}"[:300]
                return
        else:
            if cell["kind"] == "test":
                outcomes[cell["grade_id"]] = PASSED


def _call(call: dict, expected: object, scope: dict, faces: dict) -> None:
    args = [scope[value] if kind == "name" else value for kind, value in call["args"]]
    if "face" in call:
        judged(getattr(faces[call["face"]], call["check"]), *args, **(call.get("kwargs") or {}))
        return
    got = make_plain_encoder()(scope[call["answer"]](*args))
    assert ["equals", got] == expected, f"{call['answer']} returned {got!r}, not {expected!r}"


def grade_in_child(lesson_name: str, variants: Sequence[dict[str, str]], *,
                   trial_timeout_s: float = 60.0) -> list[dict[str, str] | Crashed]:
    """:func:`hidden_outcomes` of each variant (answer grade_id -> source), in order, in child
    processes: one for the lesson, a new one after a variant that hung or crashed its child."""
    return run_in_children(hidden_outcomes, [(lesson_name, dict(v)) for v in variants],
                           trial_timeout_s=trial_timeout_s, path=[str(REPO)])
