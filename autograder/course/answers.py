"""Answer files: a student's answers as ``# %% <grade_id>`` cells, filled into a release.

An answer file (``demo/<student>/<lesson>.py``, the validity tests' answers) changes a released
notebook: ``# %% <grade_id>`` replaces an answer cell, ``# %% edit <grade_id>`` replaces any
graded cell (tampering), ``# %% delete <grade_id>`` deletes one, and a ``# base: <student>``
line starts from another student's answers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbgrader import utils

from autograder.course.source import Lesson, grade_id, read_lesson

_HEADER = re.compile(r"^# %% (?:(?P<action>edit|delete) )?(?P<grade_id>[a-z][a-z0-9_]*)\s*$")
_BASE = re.compile(r"^# base: (?P<student>[A-Za-z0-9_-]+)\s*$")


@dataclass
class AnswerFile:
    """What an answer file changes in a released notebook.

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


def read_answers(path: Path) -> AnswerFile:
    """Read an answer file (see :class:`AnswerFile` for its headers)."""
    found = AnswerFile()
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
        grade_id(cell): cell.source
        for cell in read_lesson(lesson).cells
        if utils.is_solution(cell) and cell.cell_type == "code"
    }


def fill_answers(release: Path, answers: dict[str, str] | AnswerFile, target: Path) -> None:
    """Write ``release`` to ``target`` with the answer cells replaced (and any edits/deletions).

    Raises:
        KeyError: A grade_id that is not an answer cell (for answers) or not a cell at all.
    """
    changes = answers if isinstance(answers, AnswerFile) else AnswerFile(answers=answers)
    notebook = nbformat.read(release, as_version=4)
    graded = {grade_id(cell): cell for cell in notebook.cells if grade_id(cell)}
    for gid, source in changes.answers.items():
        if gid not in graded or not utils.is_solution(graded[gid]):
            raise KeyError(f"{gid!r} is not an answer cell of {release.name}")
        graded[gid].source = source
    for gid, source in changes.edits.items():
        if gid not in graded:
            raise KeyError(f"{gid!r} is not a graded cell of {release.name}")
        graded[gid].source = source
    for gid in changes.deletions:
        if gid not in graded:
            raise KeyError(f"{gid!r} is not a graded cell of {release.name}")
    notebook.cells = [c for c in notebook.cells if grade_id(c) not in changes.deletions]
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, target)
