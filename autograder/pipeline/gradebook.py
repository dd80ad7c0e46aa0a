"""The class's nbgrader gradebook: what in it decides a grade.

A course's ``gradebook.db`` (SQLite, written by ``nbgrader generate_assignment``) is the
template every grading job copies. Its bytes change on every build (nbgrader gives each row a
random id) and whenever grades are recorded in it, so a job's fingerprint reads what in it
decides a grade, as data: :func:`assignment_digest`.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from autograder.pipeline.course import Course

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
