"""What leaves the sandbox for the student: the executed notebook, feedback HTML, clean text.

The runner's report is data; :func:`executed_notebook` turns it into the notebook nbgrader
renders (each test cell as released, hidden tests removed, the outputs the run reported), and
:func:`write_feedback` records the scores in the job's gradebook copy and renders nbgrader's
feedback. :func:`scrub` removes grader and library frames, host paths, memory addresses and the
runner's cell file names from anything the notebook printed or raised; given the run's cells,
it names each cell and line the way the student knows them, with the line's code.
"""

from __future__ import annotations

import base64
import json
import re
import sys
from html import escape
from pathlib import Path

import nbformat

import autograder
from autograder.course.course import COURSE_ID, nbgrader_environment
from autograder.course.source import without_hidden_tests
from autograder.grading.cells import Plan, exercise_titles, grade_id, is_test
from autograder.grading.execute import Run
from autograder.grading.gradebook import record_scores
from autograder.grading.spec import Job, JobFolder, JobResult

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_PACKAGE_DIR = str(Path(autograder.__file__).resolve().parent.parent)


_GRADER_FRAME = re.compile(
    r'^\s*File "(?:' + "|".join(re.escape(p) for p in {sys.prefix, _PACKAGE_DIR, sys.base_prefix})
    + r')[^"]*", line \d+, in .*\n(?:\s{4,}\S.*\n)?(?:\s*[~^]+\s*\n)?', re.MULTILINE)


#: A place in one of the runner's cells as the race detector names it: ``<cell 11> line 11 in
#: increment``, ``<cell 11>, line 11, in increment`` or, in a stack, ``File "<cell 11>", line
#: 11, in increment``.
_CELL_PLACE = re.compile(
    r'(?:File "<cell (?P<file>\d+)>"|<cell (?P<cell>\d+)>)(?:,? line (?P<line>\d+))?'
    r"(?:,? in (?P<function>[\w<>.]+))?")
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def scrub(text: str, cells: list[dict] | None = None) -> str:
    """Text from the sandbox without grader or library frames, host paths, runner names or
    memory addresses (each address becomes ``#1``, ``#2``... in order of appearance, so two
    locks stay two). With the run's plan ``cells``, a place in a cell reads as the student
    knows it (see :func:`name_cells`)."""
    text = _GRADER_FRAME.sub("", _ANSI.sub("", text))
    for prefix in sorted({sys.prefix, _PACKAGE_DIR}, key=len, reverse=True):
        text = text.replace(prefix + "/", "").replace(prefix, "")
    addresses: dict[str, str] = {}
    text = _ADDRESS.sub(lambda m: f" #{addresses.setdefault(m[0], str(len(addresses) + 1))}",
                        text)
    if cells is not None:
        text = name_cells(text, cells)
    return re.sub(r"<(cell|grader test) \d+>", "a cell", text)


def cell_words(cell: dict) -> str:
    """How the student knows a plan cell: ``your answer cell ex_anatomy_counter (In [12])``."""
    if cell.get("kind") == "answer" and cell.get("grade_id"):
        return f"your answer cell {cell['grade_id']} ({cell.get('label', '')})"
    if cell.get("kind") == "test":
        return f"the test cell {cell.get('label', '')}"
    return f"your cell {cell.get('label', '')}"


def cell_line(cells: list[dict], filename: str, line: int) -> tuple[str, str] | None:
    """(how the student knows the cell, the line's code) for a runner file name such as
    ``<cell 11>``, or None for another file."""
    match = re.fullmatch(r"<cell (\d+)>", filename or "")
    if match is None or int(match[1]) >= len(cells):
        return None
    cell = cells[int(match[1])]
    lines = str(cell.get("source", "")).splitlines()
    code = lines[line - 1].strip() if 0 < line <= len(lines) else ""
    return cell_words(cell), code


def name_cells(text: str, cells: list[dict]) -> str:
    """``<cell 11> line 11 in increment`` as ``line 11 of your answer cell ex_anatomy_counter
    (In [12]), in increment (`self.value += by`)``: the race detector's places named by the
    student's own cell and code."""
    def named(match: re.Match) -> str:
        index = int(match["file"] or match["cell"])
        if index >= len(cells):
            return match[0]
        if match["line"] is None:
            return cell_words(cells[index])
        words, code = cell_line(cells, f"<cell {index}>", int(match["line"])) or ("", "")
        place = f"line {match['line']} of {words}" + (
            f", in {match['function']}" if match["function"] else "")
        return f"{place} (`{code}`)" if code else place

    return _CELL_PLACE.sub(named, text)


def executed_notebook(submitted: nbformat.NotebookNode, release: nbformat.NotebookNode,
                       plan: Plan, run: Run) -> nbformat.NotebookNode:
    """The submission with each test cell as released and every cell's outputs from the run."""
    executed = nbformat.from_dict(json.loads(json.dumps(submitted)))
    released = {grade_id(c): c for c in release.cells if is_test(c)}
    for cell in executed.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        gid = grade_id(cell)
        if gid in released and cell.cell_type == "code":
            cell.metadata["nbgrader"] = dict(released[gid].metadata["nbgrader"])
    for index, position in enumerate(plan.positions):
        cell = executed.cells[position]
        if plan.cells[index]["kind"] == "test":
            cell.source = without_hidden_tests(plan.cells[index]["graded"],
                                               "# (hidden tests ran here)\n")
        cell.execution_count = index + 1
        cell.outputs = _outputs(run.ended.get(index), index + 1, plan.cells)
    return executed


def _outputs(event: dict | None, count: int, cells: list[dict] | None = None) -> list:
    if event is None:
        return []
    outputs = []
    for name in ("out", "err"):
        if event.get(name):
            outputs.append(nbformat.v4.new_output(
                "stream", name="stdout" if name == "out" else "stderr", text=scrub(event[name])))
    for png in event.get("figures", []):
        if isinstance(png, bytes) and png.startswith(b"\x89PNG"):
            outputs.append(nbformat.v4.new_output(
                "display_data", data={"image/png": base64.b64encode(png).decode()}))
    if event.get("result") is not None:
        outputs.append(nbformat.v4.new_output(
            "execute_result", data={"text/plain": scrub(event["result"])}, execution_count=count))
    error = event.get("error")
    if error:
        lines = [f"{error.get('ename', 'Error')}: {error.get('evalue', '')}"]
        if error.get("where"):
            lines.append(f"(raised in {error['where']})")
        outputs.append(nbformat.v4.new_output(
            "error", ename=str(error.get("ename", "Error")),
            evalue=scrub(str(error.get("evalue", "")), cells),
            traceback=[scrub(x, cells) for x in lines]))
    return outputs


def _errors(cell: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]


def error_text(cell: nbformat.NotebookNode) -> str:
    """The last error a cell raised, as ``Name: message`` without terminal colours; or ""."""
    errors = _errors(cell)
    if not errors:
        return ""
    name, value = errors[-1].get("ename", ""), errors[-1].get("evalue", "")
    return _ANSI.sub("", f"{name}: {value}" if value else name)


def write_executed(executed: nbformat.NotebookNode, autograded: Path, notes: list[str]) -> None:
    """Write the executed notebook, the grader's notes first (what Validate and feedback read)."""
    if notes:
        note = nbformat.v4.new_markdown_cell(
            "**Grader notes**\n\n" + "\n".join(f"- {n}" for n in notes))
        note.id = "racelab-grader-notes"
        executed.cells.insert(0, note)
    autograded.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(executed, autograded)


_REMOTE_SCRIPT = re.compile(r"<script[^>]*\bsrc=[\"']https?://[^>]*>\s*</script>", re.IGNORECASE)
_WRAP_STYLE = ("<style>/* Race Lab: long lines wrap */ pre, .output_text pre "
               "{ white-space: pre-wrap; overflow-wrap: anywhere; }</style>")


def readable_offline(html: str) -> str:
    """nbgrader's feedback HTML with nothing fetched from the internet and long lines wrapped.

    Its only remote resource is MathJax from a CDN (the lessons' feedback has no formulas).
    """
    html = _REMOTE_SCRIPT.sub("", html)
    return html.replace("</head>", _WRAP_STYLE + "\n</head>", 1)


def with_exercise_titles(html: str, titles: dict[str, str]) -> str:
    """nbgrader's feedback summary with each test cell named by its exercise's title (nbgrader
    calls every one "Test cell")."""
    for gid, title in titles.items():
        html = html.replace(f'<a href="#{gid}">Test cell</a>',
                            f'<a href="#{gid}">{escape(title)}</a>')
    return html


def write_feedback(course: Path, job: Job, result: JobResult, workdir: Path,
                   release: nbformat.NotebookNode) -> None:
    """Record the scores in the job's gradebook copy and render nbgrader's feedback HTML from
    the executed notebook (see :func:`write_executed`) into ``workdir/feedback.html``."""
    from nbgrader.api import Gradebook
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config

    db_url = f"sqlite:///{course / 'gradebook.db'}"
    with nbgrader_environment(), Gradebook(db_url) as gb:
        record_scores(gb, result)
    cfg = Config()
    cfg.CourseDirectory.root = str(course)
    cfg.CourseDirectory.course_id = COURSE_ID
    cfg.CourseDirectory.db_url = db_url
    with nbgrader_environment():
        api = NbGraderAPI(coursedir=CourseDirectory(config=cfg), config=cfg)
        outcome = api.generate_feedback(job.assignment, job.student, force=True)
    html = course / "feedback" / job.student / job.assignment / f"{result.notebook}.html"
    if outcome["success"] and html.exists():
        titles = exercise_titles(release)
        page = with_exercise_titles(readable_offline(html.read_text(encoding="utf-8")), titles)
        JobFolder(workdir).feedback.write_text(page, encoding="utf-8")
    else:
        result.notes.append("feedback could not be generated")


