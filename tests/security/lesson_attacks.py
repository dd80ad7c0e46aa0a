"""Attacks on every lesson's grader, generated from the lessons themselves.

For each lesson the generator reads the calls its hidden tests make (the face, e.g. ``mutex``,
and its checks, e.g. ``check_metrics``: :func:`autograder.grading.cells.split_test`) and
writes one submission per technique: the demo class's racy answers with the attack added to an
answer cell. A new lesson adds its rows to the matrix without a line here.
"""

from __future__ import annotations

import sysconfig
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import nbformat

from autograder.course.answers import AnswerFile, fill_answers
from autograder.course.course import Course
from autograder.grading import cells
from autograder.grading.demo import demo_answers

NOOP = "lambda *args, **kwargs: None"
#: A file name inside the real site-packages folder that no package installed: what a student
#: would compile an answer under to make the race detector take it for library code.
FAKE_LIBRARY_FILE = str(Path(sysconfig.get_paths()["purelib"]) / "racelab_answer" / "answer.py")


@dataclass(frozen=True)
class Target:
    """What a lesson's hidden tests call: the face's notebook name, its module and checks."""

    face: str
    module: str
    checks: tuple[str, ...]


def targets(course: Course, lesson) -> list[Target]:
    """The faces and checks the lesson's hidden tests call, in the gradebook's own source."""
    source = course.root / "source" / lesson.name / f"{lesson.name}.ipynb"
    notebook = nbformat.read(source, as_version=4)
    imports = dict(_face_modules(cells.preload(notebook)))
    found: dict[str, list[str]] = {}
    for cell in notebook.cells:
        if cell.cell_type == "code" and cells.is_test(cell):
            for call in cells.split_test(cell.source)[1]:
                if "face" in call:
                    found.setdefault(call["face"], []).append(call["check"])
    return [Target(face, imports[face], tuple(dict.fromkeys(checks)))
            for face, checks in found.items()]


def _face_modules(statements: list[str]):
    for statement in statements:
        if statement.startswith("from autograder.checks import "):
            for name in statement.removeprefix("from autograder.checks import ").split(", "):
                yield name, f"autograder.checks.{name}"


def _each_check(target: Target, line: str) -> str:
    return "\n".join(line.format(face=target.face, check=check) for check in target.checks)


#: Technique -> code added at the end of the lesson's first answer cell, from its targets.
TECHNIQUES: dict[str, Callable[[list[Target]], str]] = {
    "face_attribute": lambda ts: "\n".join(
        _each_check(t, "{face}.{check} = " + NOOP) for t in ts),
    "face_rebound": lambda ts: "import types as _types\n" + "\n".join(
        f"{t.face} = _types.SimpleNamespace(**{{c: {NOOP} for c in {t.checks!r}}})"
        for t in ts),
    "face_proxy": lambda ts: (
        "class _Lenient:\n"
        "    def __init__(self, real):\n        object.__setattr__(self, '_real', real)\n"
        "    def __getattr__(self, name):\n"
        "        if name.startswith('check_'):\n            return " + NOOP + "\n"
        "        return getattr(object.__getattribute__(self, '_real'), name)\n"
        + "\n".join(f"{t.face} = _Lenient({t.face})" for t in ts)),
    "sys_modules": lambda ts: "import sys as _sys, types as _types\n" + "\n".join(
        f"_fake = _types.ModuleType({t.module!r})\n"
        + _each_check(t, "_fake.{check} = " + NOOP)
        + f"\n_sys.modules[{t.module!r}] = _fake\n{t.face} = _fake" for t in ts),
    "reload": lambda ts: "import importlib as _importlib\n" + "\n".join(
        _each_check(t, "vars({face})['{check}'] = " + NOOP)
        + f"\n_importlib.reload({t.face})" for t in ts),
    "code": lambda ts: "\n".join(
        _each_check(t, "{face}.{check}.__code__ = (" + NOOP + ").__code__") for t in ts),
    "defaults": lambda ts: "\n".join(
        f"for _value in list(vars({t.face}).values()):\n"
        "    _kw = getattr(_value, '__kwdefaults__', None)\n"
        "    if isinstance(_kw, dict):\n"
        "        _kw.update({k: 1 for k, v in _kw.items() if type(v) is int})\n"
        "        _value.__kwdefaults__ = _kw" for t in ts),
    "globals": lambda ts: "\n".join(
        _each_check(t, "_g = {face}.{check}.__globals__\n"
                       "for _k in [k for k in _g if k.startswith(('require', 'smoke', 'plain',"
                       " 'grade_against', 'run_'))] + ['require']:"
                       "\n    _g[_k] = lambda *a, **k: a[0] if a else None") for t in ts),
    "frames_through_the_harness": lambda ts: (
        "from autograder.harness import tamper as _tamper\n"
        "_seen = []\nfor _frame in _tamper.current_frames().values():\n"
        "    while _frame is not None:\n"
        "        _seen.append(sorted(_frame.f_locals))\n        _frame = _frame.f_back\n"
        "print('frames seen:', _seen)"),
    "frames_through_the_standard_library": lambda ts: (
        "import traceback as _traceback\n"
        "_stack = _traceback.StackSummary.extract(_traceback.walk_stack(None),"
        " capture_locals=True)\nprint('locals seen:', [f.locals for f in _stack])"),
    "one_shot_builtin": lambda ts: (
        "import builtins as _builtins\n_real_isinstance = _builtins.isinstance\n"
        "def _once(*args):\n    _builtins.isinstance = _real_isinstance\n    return True\n"
        "_builtins.isinstance = _once"),
    "one_shot_numpy": lambda ts: (
        "import numpy as _np\n_real = {n: getattr(_np, n) for n in "
        "('allclose', 'array_equal', 'isclose')}\n"
        "def _once(*args, **kwargs):\n"
        "    for _n, _f in _real.items():\n        setattr(_np, _n, _f)\n    return True\n"
        "for _n in _real:\n    setattr(_np, _n, _once)"),
    "planted_observations": lambda ts: (
        "from autograder.checks.kit import verdict as _verdict\n"
        "_sink = _verdict.OBSERVATION_SINK\n"
        "try:\n"
        "    _reports = _sink.__kwdefaults__['_function'].__self__\n"
        "    _reports.append({'forged': True})\n"
        "except Exception as _refused:\n"
        "    print('refused:', _refused)\n"
        "_sink({'forged': True})"),
    "forged_report": lambda ts: (
        "from autograder.harness import tamper as _tamper\n"
        "for _frame in _tamper.current_frames().values():\n"
        "    while _frame is not None:\n"
        "        _send = _frame.f_locals.get('send')\n"
        "        if callable(_send):\n"
        "            for _i in range(400):\n"
        "                _send({'t': 'start', 'cell': _i})\n"
        "                _send({'t': 'end', 'cell': _i, 'error': None, 'result': None,"
        " 'tamper': [], 'integrity': [], 'tamper_before': [], 'values': [], 'out': '',"
        " 'err': '', 'figures': []})\n"
        "            _send({'t': 'done'})\n"
        "            import os as _os\n            _os._exit(0)\n"
        "        _frame = _frame.f_back"),
}

#: Techniques a lesson may shrug off without a trace: a library the lesson's checks never call
#: is not guarded, so patching it changes nothing they conclude (the score must still not rise).
HARMLESS_WHEN_UNUSED = frozenset({"one_shot_numpy"})

#: Techniques that wrap every answer cell rather than adding to the first one.
WRAPPING = {
    "fake_library_file_name": lambda source: (
        f"{source}\nexec(compile({source!r}, {FAKE_LIBRARY_FILE!r}, 'exec'))"),
}


def answer_ids(release: nbformat.NotebookNode) -> list[str]:
    """The release's answer cells' grade ids, in order."""
    return [cells.grade_id(c) for c in release.cells
            if c.cell_type == "code" and cells.is_solution(c) and not cells.is_grade(c)]


def write_attacks(course: Course, demo: Path, submitted: Path) -> dict[str, str]:
    """Write ``racy`` and one ``<technique>`` student per technique for every lesson into
    nbgrader's layout under ``submitted``; return student -> technique."""
    students = {"racy": ""}
    for lesson in course.lessons:
        release_path = course.release_notebook(lesson)
        release = nbformat.read(release_path, as_version=4)
        racy = demo_answers(demo, "racy", lesson.name)
        ids = answer_ids(release)
        released = {cells.grade_id(c): c.source for c in release.cells}
        answers = {gid: racy.answers.get(gid, released[gid]) for gid in ids}
        lesson_targets = targets(course, lesson)

        def write(student: str, changed: dict[str, str], lesson=lesson, release=release_path,
                  racy=racy) -> None:
            target = submitted / student / lesson.name / f"{lesson.name}.ipynb"
            fill_answers(release, AnswerFile({**racy.answers, **changed}, racy.edits,
                                             racy.deletions), target)

        write("racy", {})
        for name, technique in TECHNIQUES.items():
            first = ids[0]
            write(name, {first: f"{answers[first]}\n\n{technique(lesson_targets)}\n"})
            students[name] = name
        for name, wrap in WRAPPING.items():
            write(name, {gid: wrap(source) for gid, source in answers.items()})
            students[name] = name
    return students
