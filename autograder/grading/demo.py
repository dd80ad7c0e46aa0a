"""`racelab demo`: build the course and grade the bundled demo class in ``demo/``.

Each folder of ``demo/`` is a student. For every lesson, the student's submission is:
``<lesson>.ipynb`` submitted as it is, else the released notebook changed as ``<lesson>.py``
says (an answer file: see :mod:`autograder.course.answers`), else the released notebook
unfilled. A folder with an ``ONLY`` file submits just the lessons it names.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from autograder.course.answers import AnswerFile, fill_answers, read_answers
from autograder.course.course import Course, make_course
from autograder.grading.grade import grade_submissions, print_table
from autograder.grading.spec import Limits


def demo_answers(demo_dir: Path, student: str, lesson: str) -> AnswerFile:
    """A demo student's changes to ``lesson``, with its base student's answers underneath."""
    path = demo_dir / student / f"{lesson}.py"
    if not path.exists():
        return AnswerFile()
    own = read_answers(path)
    if own.base is None:
        return own
    base = demo_answers(demo_dir, own.base, lesson)
    return AnswerFile({**base.answers, **own.answers}, {**base.edits, **own.edits},
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
             limits: Limits | None = None, cluster: str | None = None) -> int:
    """Grade the demo class into ``out``, print the table and write the class report
    (``out/report``, see :mod:`autograder.grading.report`); returns an exit code.

    ``cluster`` grades on a Dask cluster (see ``grade_submissions``)."""
    course = make_course(solutions, out / "course")
    make_submissions(demo_dir, course, out / "submitted")
    rows = grade_submissions(out / "submitted", course, out, workers=workers, limits=limits,
                             cluster=cluster)
    print_table(rows)
    print(f"\ngrades: {out / 'grades.csv'}")
    from autograder.grading.report import print_summary, write_report

    print_summary(write_report(out))
    return 0
