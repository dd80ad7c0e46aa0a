"""Read and validate a lesson source (`solutions/NN_name.py`) into an nbgrader source notebook.

A lesson source is a jupytext percent-format script whose cell headers carry nbgrader metadata.
This module is the only place that knows the source format; everything downstream sees an
``nbformat`` notebook with stable cell ids.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import jupytext
import nbformat

GRADE_ID = re.compile(r"^[a-z][a-z0-9_]*$")
NBGRADER_KEYS = {"grade", "grade_id", "locked", "points", "schema_version", "solution", "task"}
REQUIRED_KEYS = {"grade", "grade_id", "locked", "schema_version", "solution"}
MARKER_PAIRS = {
    "SOLUTION": ("### BEGIN SOLUTION", "### END SOLUTION"),
    "HIDDEN TESTS": ("### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"),
}
_CELL_HEADER = re.compile(r"^# %%")
_HIDDEN_TESTS = re.compile(r"### BEGIN HIDDEN TESTS\n?(.*?)### END HIDDEN TESTS\n?", re.DOTALL)


class SourceError(ValueError):
    """A lesson source that cannot become an nbgrader notebook; the message names file and cell."""


@dataclass(frozen=True)
class Lesson:
    """One lesson: a source file that becomes one nbgrader assignment with one notebook.

    Attributes:
        name: Assignment and notebook name, the source's stem (``01_warmup``).
        path: The jupytext source.
    """

    name: str
    path: Path


def find_lessons(solutions_dir: Path) -> list[Lesson]:
    """List the lesson sources in ``solutions_dir`` (``NN_name.py``), sorted by name."""
    return [
        Lesson(p.stem, p)
        for p in sorted(solutions_dir.glob("*.py"))
        if re.match(r"^\d\d_[a-z0-9_]+$", p.stem)
    ]


def read_lesson(lesson: Lesson) -> nbformat.NotebookNode:
    """Read a lesson source, validate its nbgrader metadata and return the source notebook.

    Cell ids are made stable (the grade_id, else ``cell-N``) so that regenerating the course
    changes nothing when the source did not change.

    Raises:
        SourceError: Bad cell metadata, a duplicate grade_id, unbalanced or misplaced markers.
    """
    text = lesson.path.read_text(encoding="utf-8")
    notebook = jupytext.reads(text, fmt="py:percent")
    lines = _cell_lines(text, len(notebook.cells))
    seen: dict[str, str] = {}
    for index, cell in enumerate(notebook.cells):
        _validate_cell(cell, _Where(lesson.path, index, lines[index] if lines else None), seen)
        cell.metadata.pop("lines_to_next_cell", None)
        cell.metadata.pop("cell_marker", None)
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        cell["id"] = grade_id or f"cell-{index}"
    if not seen:
        raise SourceError(f"{lesson.path}: no nbgrader cells; a lesson needs graded exercises")
    notebook.metadata.pop("jupytext", None)
    notebook.metadata["language_info"] = kernel_language_info()
    nbformat.validate(notebook)
    return notebook


def hidden_tests(source: str) -> list[str]:
    """The text inside each hidden-test block of a cell (or a whole lesson source)."""
    return _HIDDEN_TESTS.findall(source)


def without_hidden_tests(source: str, replacement: str = "") -> str:
    """A cell's source with each hidden-test block (markers included) replaced."""
    return _HIDDEN_TESTS.sub(replacement, source)


def kernel_language_info() -> dict:
    """The ``language_info`` the course's kernel reports when a notebook opens.

    JupyterLab writes the kernel's ``language_info`` into the notebook it opens and marks it
    modified unless the notebook already holds exactly that value; a lesson carries it so that
    it opens unmodified. ``version`` is this Python's (the one ``make setup`` puts in ``.venv``).
    """
    from ipykernel.ipkernel import IPythonKernel

    return dict(IPythonKernel.language_info)


def _cell_lines(text: str, n_cells: int) -> list[int] | None:
    """Line number of each cell's header, when the headers map one-to-one onto the cells."""
    body_start = 0
    lines = text.splitlines()
    if lines and lines[0].strip() == "# ---":
        for number, line in enumerate(lines[1:], start=1):
            if line.strip() == "# ---":
                body_start = number + 1
                break
    headers = [
        n + 1 for n, line in enumerate(lines) if n >= body_start and _CELL_HEADER.match(line)
    ]
    return headers if len(headers) == n_cells else None


@dataclass(frozen=True)
class _Where:
    """Where a cell stands in its source, to name it in errors."""

    path: Path
    index: int
    header_line: int | None

    def at(self, offset: int = 0) -> str:
        """The cell's header (offset 0) or its ``offset``-th source line, as ``file:line``."""
        if self.header_line is None:
            return f"{self.path}, cell {self.index + 1}" + (f", line {offset}" if offset else "")
        return f"{self.path}:{self.header_line + offset}"

    def __str__(self) -> str:
        return self.at()


def _validate_cell(cell: nbformat.NotebookNode, where: _Where, seen: dict[str, str]) -> None:
    if "incorrectly_encoded_metadata" in cell.metadata:
        raise SourceError(
            f"{where}: cell metadata is not valid JSON: "
            f"{cell.metadata['incorrectly_encoded_metadata']!r}"
        )
    meta = cell.metadata.get("nbgrader")
    if meta is None:
        _check_markers(cell.source, where, allowed=())
        return
    if not isinstance(meta, dict):
        raise SourceError(f"{where}: nbgrader metadata must be a JSON object")
    unknown = set(meta) - NBGRADER_KEYS
    missing = REQUIRED_KEYS - set(meta)
    if unknown or missing:
        raise SourceError(
            f"{where}: nbgrader metadata "
            + (f"has unknown keys {sorted(unknown)} " if unknown else "")
            + (f"lacks {sorted(missing)}" if missing else "")
        )
    if meta["schema_version"] != 3:
        raise SourceError(f"{where}: nbgrader schema_version must be 3")
    for key in ("grade", "locked", "solution", "task"):
        if key in meta and not isinstance(meta[key], bool):
            raise SourceError(f"{where}: nbgrader {key!r} must be true or false")
    grade_id = meta["grade_id"]
    if not isinstance(grade_id, str) or not GRADE_ID.match(grade_id):
        raise SourceError(f"{where}: grade_id {grade_id!r} is not snake_case")
    if grade_id in seen:
        raise SourceError(f"{where}: duplicate grade_id {grade_id!r} (first at {seen[grade_id]})")
    seen[grade_id] = str(where)
    if meta["grade"]:
        points = meta.get("points")
        if isinstance(points, bool) or not isinstance(points, (int, float)) or points <= 0:
            raise SourceError(f"{where}: graded cell {grade_id!r} needs positive 'points'")
        if cell.cell_type != "code" and not meta["solution"]:
            raise SourceError(f"{where}: test cell {grade_id!r} must be a code cell")
    allowed = []
    if meta["solution"]:
        allowed.append("SOLUTION")
    if meta["grade"] and not meta["solution"]:
        allowed.append("HIDDEN TESTS")
    if meta["solution"] and cell.cell_type == "code" and "### BEGIN SOLUTION" not in cell.source:
        raise SourceError(f"{where}: answer cell {grade_id!r} has no ### BEGIN SOLUTION region")
    _check_markers(cell.source, where, allowed=tuple(allowed))


def _check_markers(source: str, where: _Where, allowed: tuple[str, ...]) -> None:
    for kind, (begin, end) in MARKER_PAIRS.items():
        open_at: int | None = None
        for number, line in enumerate(source.splitlines(), start=1):
            stripped = line.strip()
            if stripped not in (begin, end):
                continue
            if kind not in allowed:
                raise SourceError(
                    f"{where.at(number)}: {stripped!r} is not allowed in this kind of cell"
                )
            if stripped == begin:
                if open_at is not None:
                    raise SourceError(f"{where.at(number)}: {begin!r} is nested in another")
                open_at = number
            else:
                if open_at is None:
                    raise SourceError(f"{where.at(number)}: {end!r} has no {begin!r} before it")
                open_at = None
        if open_at is not None:
            raise SourceError(f"{where.at(open_at)}: {begin!r} is never closed")


def grade_id(cell: nbformat.NotebookNode) -> str | None:
    """The cell's nbgrader grade_id, or None for a cell nbgrader does not track."""
    meta = cell.metadata.get("nbgrader")
    gid = meta.get("grade_id") if isinstance(meta, dict) else None
    return gid if isinstance(gid, str) else None
