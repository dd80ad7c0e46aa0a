"""`racelab demo`: build the course and grade the bundled demo class in ``demo/``.

Each folder of ``demo/`` is a student. For every lesson, the student's submission is:
``<lesson>.ipynb`` submitted as it is, else the released notebook changed as ``<lesson>.py``
says (see :class:`DemoAnswers`), else the released notebook unfilled. A folder with an ``ONLY``
file submits just the lessons it names.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from autograder.pipeline.course import Course, make_course
from autograder.pipeline.grade import grade_submissions, print_table
from autograder.pipeline.source import Lesson, read_lesson
from autograder.pipeline.spec import Limits

_HEADER = re.compile(r"^# %% (?:(?P<action>edit|delete) )?(?P<grade_id>[a-z][a-z0-9_]*)\s*$")
_BASE = re.compile(r"^# base: (?P<student>[A-Za-z0-9_-]+)\s*$")


@dataclass
class DemoAnswers:
    """What a demo student changes in a released notebook.

    Attributes:
        answers: Answer cells' new sources by grade_id (``# %% <grade_id>``).
        edits: Any cell's new source by grade_id, read-only test cells too: tampering
            (``# %% edit <grade_id>``).
        deletions: grade_ids of cells the student deleted (``# %% delete <grade_id>``).
        base: Another demo student whose answers this file starts from (``# base: <student>``).
    """

    answers: dict[str, str] = field(default_factory=dict)
    edits: dict[str, str] = field(default_factory=dict)
    deletions: list[str] = field(default_factory=list)
    base: str | None = None


def read_answers(path: Path) -> DemoAnswers:
    """Read a demo answer file (see :class:`DemoAnswers` for its headers)."""
    found = DemoAnswers()
    cells: dict[tuple[str, str], list[str]] = {}
    current: list[str] | None = None
    for line in path.read_text(encoding="utf-8").splitlines():
        header, base = _HEADER.match(line), _BASE.match(line)
        if header:
            action = header["action"] or "answer"
            if action == "delete":
                found.deletions.append(header["grade_id"])
                current = None
            else:
                current = cells.setdefault((action, header["grade_id"]), [])
        elif base and current is None and not cells:
            found.base = base["student"]
        elif current is not None:
            current.append(line)
        elif line.strip() and not line.startswith("#"):
            raise ValueError(f"{path}: code before the first '# %% <grade_id>' header")
    for (action, gid), lines in cells.items():
        target = found.answers if action == "answer" else found.edits
        target[gid] = "\n".join(lines).strip("\n")
    return found


def solution_answers(lesson: Lesson) -> dict[str, str]:
    """The instructor's answer cells of ``lesson`` by grade_id, as a student would submit them."""
    return {
        cell.metadata["nbgrader"]["grade_id"]: cell.source
        for cell in read_lesson(lesson).cells
        if cell.metadata.get("nbgrader", {}).get("solution") and cell.cell_type == "code"
    }


def fill_answers(release: Path, answers: dict[str, str] | DemoAnswers, target: Path) -> None:
    """Write ``release`` to ``target`` with the answer cells replaced (and any edits/deletions).

    Raises:
        KeyError: A grade_id that is not an answer cell (for answers) or not a cell at all.
    """
    changes = answers if isinstance(answers, DemoAnswers) else DemoAnswers(answers=answers)
    notebook = nbformat.read(release, as_version=4)
    graded = {cell.metadata["nbgrader"]["grade_id"]: cell for cell in notebook.cells
              if "nbgrader" in cell.metadata}
    for grade_id, source in changes.answers.items():
        if not graded.get(grade_id, {}).get("metadata", {}).get("nbgrader", {}).get("solution"):
            raise KeyError(f"{grade_id!r} is not an answer cell of {release.name}")
        graded[grade_id].source = source
    for grade_id, source in changes.edits.items():
        if grade_id not in graded:
            raise KeyError(f"{grade_id!r} is not a graded cell of {release.name}")
        graded[grade_id].source = source
    for grade_id in changes.deletions:
        if grade_id not in graded:
            raise KeyError(f"{grade_id!r} is not a graded cell of {release.name}")
    notebook.cells = [c for c in notebook.cells
                      if c.metadata.get("nbgrader", {}).get("grade_id") not in changes.deletions]
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, target)


def demo_answers(demo_dir: Path, student: str, lesson: str) -> DemoAnswers:
    """A demo student's changes to ``lesson``, with its base student's answers underneath."""
    path = demo_dir / student / f"{lesson}.py"
    if not path.exists():
        return DemoAnswers()
    own = read_answers(path)
    if own.base is None:
        return own
    base = demo_answers(demo_dir, own.base, lesson)
    return DemoAnswers({**base.answers, **own.answers}, {**base.edits, **own.edits},
                       [*base.deletions, *own.deletions])


def make_submissions(demo_dir: Path, course: Course, submitted: Path) -> None:
    """Lay out the demo class in nbgrader's ``<student>/<assignment>/<notebook>.ipynb``."""
    if submitted.exists():
        shutil.rmtree(submitted)
    for student_dir in sorted(p for p in demo_dir.iterdir() if p.is_dir()):
        for lesson in course.lessons:
            target = submitted / student_dir.name / lesson.name / f"{lesson.name}.ipynb"
            as_is = student_dir / f"{lesson.name}.ipynb"
            only = student_dir / "ONLY"
            if only.exists() and lesson.name not in only.read_text().split():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if as_is.exists():
                shutil.copyfile(as_is, target)
            else:
                changes = demo_answers(demo_dir, student_dir.name, lesson.name)
                fill_answers(course.release_notebook(lesson), changes, target)


def run_demo(demo_dir: Path, solutions: Path, out: Path, *, workers: int | None = None,
             limits: Limits | None = None) -> int:
    """Grade the demo class into ``out`` and print the table; returns an exit code."""
    course = make_course(solutions, out / "course")
    make_submissions(demo_dir, course, out / "submitted")
    rows = grade_submissions(out / "submitted", course, out, workers=workers, limits=limits)
    print_table(rows)
    print(f"\ngrades: {out / 'grades.csv'}")
    return 0
