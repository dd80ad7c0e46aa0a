"""`racelab demo`: build the course and grade the bundled demo class in ``demo/``.

Each folder of ``demo/`` is a student. For every lesson, the student's submission is:
``<lesson>.ipynb`` submitted as it is, else the released notebook with the answer cells that
``<lesson>.py`` names replaced (see :func:`read_answers`), else the released notebook unfilled.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import nbformat

from autograder.pipeline.course import Course, make_course
from autograder.pipeline.grade import grade_submissions, print_table
from autograder.pipeline.job import Limits

_ANSWER_HEADER = re.compile(r"^# %% (?P<grade_id>[a-z][a-z0-9_]*)\s*$")


def read_answers(path: Path) -> dict[str, str]:
    """Read a demo answer file: ``# %% <grade_id>`` headers, each followed by a cell's source."""
    answers: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in path.read_text(encoding="utf-8").splitlines():
        match = _ANSWER_HEADER.match(line)
        if match:
            current = answers.setdefault(match["grade_id"], [])
        elif current is not None:
            current.append(line)
        elif line.strip() and not line.startswith("#"):
            raise ValueError(f"{path}: code before the first '# %% <grade_id>' header")
    return {gid: "\n".join(lines).strip("\n") for gid, lines in answers.items()}


def fill_answers(release: Path, answers: dict[str, str], target: Path) -> None:
    """Write ``release`` to ``target`` with the answer cells in ``answers`` replaced.

    Raises:
        KeyError: An answer names a grade_id that is not an answer cell of the notebook.
    """
    notebook = nbformat.read(release, as_version=4)
    answer_cells = {
        cell.metadata["nbgrader"]["grade_id"]: cell
        for cell in notebook.cells
        if cell.metadata.get("nbgrader", {}).get("solution")
    }
    for grade_id, source in answers.items():
        if grade_id not in answer_cells:
            raise KeyError(f"{grade_id!r} is not an answer cell of {release.name}")
        answer_cells[grade_id].source = source
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, target)


def make_submissions(demo_dir: Path, course: Course, submitted: Path) -> None:
    """Lay out the demo class in nbgrader's ``<student>/<assignment>/<notebook>.ipynb``."""
    if submitted.exists():
        shutil.rmtree(submitted)
    for student_dir in sorted(p for p in demo_dir.iterdir() if p.is_dir()):
        for lesson in course.lessons:
            target = submitted / student_dir.name / lesson.name / f"{lesson.name}.ipynb"
            as_is = student_dir / f"{lesson.name}.ipynb"
            answers = student_dir / f"{lesson.name}.py"
            target.parent.mkdir(parents=True, exist_ok=True)
            if as_is.exists():
                shutil.copyfile(as_is, target)
            else:
                filled = read_answers(answers) if answers.exists() else {}
                fill_answers(course.release_notebook(lesson), filled, target)


def run_demo(demo_dir: Path, solutions: Path, out: Path, *, workers: int | None = None,
             limits: Limits | None = None) -> int:
    """Grade the demo class into ``out`` and print the table; returns an exit code."""
    course = make_course(solutions, out / "course")
    make_submissions(demo_dir, course, out / "submitted")
    rows = grade_submissions(out / "submitted", course, out, workers=workers, limits=limits)
    print_table(rows)
    print(f"\ngrades: {out / 'grades.csv'}")
    return 0
