"""Autograde submissions with nbgrader and report a row per student and assignment.

Grading one submission is :func:`grade_one`: the course (release + gradebook) and one
submitted notebook folder in, one :class:`GradeRow` out. ``grade_submissions`` runs it over a
class; a cluster can run the same job per submission.
"""

from __future__ import annotations

import csv
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

from autograder.pipeline.course import Course, nbgrader_environment

CELL_TIMEOUT_S = 120
"""Wall time one cell may take before nbgrader interrupts it (nbgrader's default is 30 s)."""


@dataclass(frozen=True)
class GradeRow:
    """One student's result on one assignment.

    Attributes:
        student: nbgrader student id (the submission folder's name).
        assignment: The lesson's assignment name.
        score: Points earned.
        max_score: Points available.
        status: ``graded``, ``not-submitted`` or ``error``.
        detail: Per-exercise points (``test_warmup_entry_point=0/2``) or the error.
    """

    student: str
    assignment: str
    score: float
    max_score: float
    status: str
    detail: str


def grade_submissions(submitted: Path, course: Course, out: Path) -> list[GradeRow]:
    """Autograde every submission against ``course`` and write ``out/grades.csv``.

    Args:
        submitted: Folder in nbgrader's layout ``<student>/<assignment>/<notebook>.ipynb``.
        course: The built course (release and gradebook), see :func:`make_course`.
        out: Output folder for ``grades.csv``.

    Returns:
        A row per student and assignment of the course, sorted by student then assignment.
    """
    students = sorted(p.name for p in submitted.iterdir() if p.is_dir())
    rows = [
        grade_one(course, student, lesson.name, submitted / student / lesson.name)
        for student in students
        for lesson in course.lessons
    ]
    write_csv(rows, out / "grades.csv")
    return rows


def grade_one(course: Course, student: str, assignment: str, folder: Path) -> GradeRow:
    """Autograde one student's folder for one assignment against ``course``."""
    max_score = _max_score(course, assignment)
    if not any(folder.glob("*.ipynb")):
        return GradeRow(student, assignment, 0.0, max_score, "not-submitted", "")
    target = course.root / "submitted" / student / assignment
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(folder, target)
    with nbgrader_environment():
        api = course.api(**{"ExecutePreprocessor.timeout": CELL_TIMEOUT_S})
        outcome = api.autograde(assignment, student, force=True, create=True)
    if not outcome["success"]:
        error = (outcome.get("error") or "").strip().splitlines()
        return GradeRow(student, assignment, 0.0, max_score, "error",
                        error[-1] if error else "nbgrader autograde failed")
    return _row_from_gradebook(course, student, assignment)


def _max_score(course: Course, assignment: str) -> float:
    from nbgrader.api import Gradebook

    with Gradebook(course.db_url) as gb:
        return float(gb.find_assignment(assignment).max_score)


def _row_from_gradebook(course: Course, student: str, assignment: str) -> GradeRow:
    from nbgrader.api import Gradebook

    with Gradebook(course.db_url) as gb:
        submission = gb.find_submission(assignment, student)
        parts = []
        for notebook in submission.notebooks:
            for grade in sorted(notebook.grades, key=lambda g: g.name):
                parts.append(f"{grade.name}={_fmt(grade.score)}/{_fmt(grade.max_score)}")
        return GradeRow(student, assignment, float(submission.score),
                        float(submission.max_score), "graded", " ".join(parts))


def write_csv(rows: list[GradeRow], path: Path) -> None:
    """Write ``rows`` to ``path`` with the header of :class:`GradeRow`'s fields."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(GradeRow.__dataclass_fields__))
        writer.writeheader()
        for row in rows:
            writer.writerow({**asdict(row), "score": _fmt(row.score),
                             "max_score": _fmt(row.max_score)})


def print_table(rows: list[GradeRow]) -> None:
    """Print a fixed-width table of scores for a terminal."""
    header = ("student", "assignment", "score", "status", "detail")
    lines = [(r.student, r.assignment, f"{_fmt(r.score)}/{_fmt(r.max_score)}", r.status,
              r.detail) for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(header, *lines, strict=False)]
    widths[-1] = 0
    for line in (header, *lines):
        print("  ".join(str(x).ljust(w) for x, w in zip(line, widths, strict=True)).rstrip())


def _fmt(value: float) -> str:
    return f"{value:g}"
