"""The class's nbgrader gradebook: what in it decides a grade, and recording a run's grades.

A course's ``gradebook.db`` (SQLite, written by ``nbgrader generate_assignment``) is the
template every grading job copies. Its bytes change on every build (nbgrader gives each row a
random id) and whenever grades are recorded in it, so a job's fingerprint reads what in it
decides a grade, as data: :func:`assignment_digest`.

The class's grades go to :attr:`Course.db_url <autograder.course.course.Course.db_url>`:
that same SQLite file, or a server database (``racelab grade --gradebook-url
postgresql+psycopg://...``, one database per course, since nbgrader's queries do not filter by
course). :func:`record_grades` copies the lessons' assignments, notebooks and cells from the
template into a server gradebook, then records every result, all in one transaction.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from pathlib import Path

from autograder.course.course import Course, nbgrader_environment
from autograder.grading.spec import JobResult

_DIGESTS: dict[tuple, str] = {}


def assignment_content(gradebook: Path, assignment: str) -> dict | None:
    """What in an SQLite gradebook decides ``assignment``'s grades, read without writing to it.

    Args:
        gradebook: An nbgrader SQLite gradebook file.
        assignment: The assignment's name.

    Returns:
        The assignment's name, due date and max score, and per notebook its grade, solution,
        task and source cells (names, points, types, sources and checksums), sorted; no row
        ids, students or grades. None when the gradebook has no such assignment.
    """
    from nbgrader.api import Assignment
    from sqlalchemy import create_engine
    from sqlalchemy.orm import Session

    engine = create_engine(f"sqlite:///file:{gradebook.resolve()}?mode=ro&uri=true")
    try:
        with Session(engine) as session:
            found = session.query(Assignment).filter_by(name=assignment).one_or_none()
            return None if found is None else _assignment_dict(found)
    finally:
        engine.dispose()


def _assignment_dict(assignment) -> dict:
    notebooks = {}
    for nb in assignment.notebooks:
        notebooks[nb.name] = {
            "grade_cells": sorted((c.name, c.max_score, c.cell_type) for c in nb.grade_cells),
            "solution_cells": sorted(c.name for c in nb.solution_cells),
            "task_cells": sorted((c.name, c.max_score, c.cell_type) for c in nb.task_cells),
            "source_cells": sorted((c.name, c.cell_type, bool(c.locked), c.source or "",
                                    c.checksum or "") for c in nb.source_cells),
        }
    duedate = assignment.duedate.isoformat() if assignment.duedate else None
    return {"name": assignment.name, "duedate": duedate,
            "max_score": float(assignment.max_score or 0), "notebooks": notebooks}


def assignment_digest(gradebook: Path, assignment: str) -> str:
    """A digest of :func:`assignment_content`, the same for every build of the same lesson.

    Kept per file version (its inode, size and modification time), since every job's
    fingerprint asks for it twice.
    """
    stat = os.stat(gradebook)
    key = (str(gradebook.resolve()), stat.st_ino, stat.st_size, stat.st_mtime_ns, assignment)
    if key not in _DIGESTS:
        content = assignment_content(gradebook, assignment)
        _DIGESTS[key] = hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()
    return _DIGESTS[key]


def max_score(course: Course, assignment: str) -> float:
    """The points ``assignment`` is worth, from the course's gradebook template."""
    content = assignment_content(course.root / "gradebook.db", assignment)
    return content["max_score"] if content else 0.0


def record_grades(course: Course, results: Iterable[JobResult],
                  submitted_at: Mapping[tuple[str, str], datetime | None]) -> None:
    """Record ``results`` in the class's gradebook (``course.db_url``), in one transaction.

    A server gradebook first gets the course's assignments, notebooks and cells, copied from
    the template; the template already has them.

    Args:
        course: The course; its ``db_url`` is the gradebook written.
        results: The jobs' results.
        submitted_at: Each (student, assignment)'s submission time, when known.
    """
    from nbgrader.api import Gradebook

    with nbgrader_environment(), Gradebook(course.db_url) as gb, one_transaction(gb):
        if course.gradebook_url:
            with Gradebook(course.template_url) as template:
                copy_assignments(template, gb, [lesson.name for lesson in course.lessons])
        for result in results:
            record_scores(gb, result,
                          submitted_at=submitted_at.get((result.student, result.assignment)))


@contextlib.contextmanager
def one_transaction(gb) -> Iterator[None]:
    """Make everything done on the open ``Gradebook`` ``gb`` inside this block one transaction.

    nbgrader commits after each call; here its commits only flush, and the block commits once
    at its end, or rolls everything back when it raises.
    """
    session = gb.db
    real_commit = session.commit
    session.commit = session.flush
    try:
        yield
    except BaseException:
        session.rollback()
        raise
    finally:
        del session.commit
    real_commit()


def copy_assignments(source, target, names: Iterable[str]) -> None:
    """Create or update in ``target`` the assignments ``names`` of ``source`` (open
    ``Gradebook`` objects), with their notebooks and cells, as ``generate_assignment`` would."""
    for name in names:
        assignment = source.find_assignment(name)
        target.update_or_create_assignment(name, duedate=assignment.duedate)
        for nb in assignment.notebooks:
            target.update_or_create_notebook(nb.name, name)
            for cell in nb.grade_cells:
                target.update_or_create_grade_cell(cell.name, nb.name, name,
                                                   max_score=cell.max_score,
                                                   cell_type=cell.cell_type)
            for cell in nb.solution_cells:
                target.update_or_create_solution_cell(cell.name, nb.name, name)
            for cell in nb.task_cells:
                target.update_or_create_task_cell(cell.name, nb.name, name,
                                                  max_score=cell.max_score,
                                                  cell_type=cell.cell_type)
            for cell in nb.source_cells:
                target.update_or_create_source_cell(cell.name, nb.name, name,
                                                    cell_type=cell.cell_type,
                                                    locked=cell.locked, source=cell.source,
                                                    checksum=cell.checksum)


def record_scores(gb, result: JobResult, *, submitted_at: datetime | None = None) -> None:
    """Write ``result``'s test scores into an open nbgrader ``Gradebook`` and commit.

    Args:
        gb: The open gradebook.
        result: The job's result.
        submitted_at: The submission's time (its ``timestamp.txt``), as ``nbgrader
            autograde`` records it: Formgrader lists a submission as graded only when the
            gradebook's time matches the submitted folder's.
    """
    from nbgrader.api import MissingEntry

    # Formgrader lists students as "last, first": show the student id rather than "None, None".
    gb.update_or_create_student(result.student, last_name=result.student, first_name="")
    stamp = {} if submitted_at is None else {"timestamp": submitted_at}
    gb.update_or_create_submission(result.assignment, result.student, **stamp)
    for gid, (score, _, _) in result.cells.items():
        try:
            grade = gb.find_grade(gid, result.notebook, result.assignment, result.student)
        except MissingEntry:
            continue
        grade.auto_score = score
        grade.manual_score = None
        grade.needs_manual_grade = False
    gb.db.commit()


def write_class_gradebook(course: Course, path: Path, results: Iterable[JobResult]) -> None:
    """Record every result in a copy of the course's gradebook at ``path`` (for Formgrader):
    written beside it and moved into place whole."""
    import shutil

    from nbgrader.api import Gradebook

    tmp = path.with_suffix(".tmp")
    shutil.copyfile(course.root / "gradebook.db", tmp)
    with nbgrader_environment(), Gradebook(f"sqlite:///{tmp.resolve()}") as gb:
        for result in results:
            record_scores(gb, result)
    tmp.replace(path)
