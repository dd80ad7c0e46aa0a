"""Grade one submission: one student's notebook for one assignment, as a pure, isolated job.

Inputs: the submitted notebook, the course's release notebook and gradebook template (see
:class:`Job`). Outputs, all inside the job's own folder: ``result.json`` (a :class:`JobResult`)
and ``feedback.html``. Nothing outside the job folder is written, so jobs run in parallel
processes here, or on a cluster's workers, and a re-run never loses or duplicates a grade.

The notebook's code runs in the sandboxed runner (:mod:`autograder.pipeline.execute`), never
in a folder the host reads back: the job compares the submission's graded cells with the
release (deleted, duplicated, edited or retyped test cells), runs the student's cells with each
test cell as the gradebook holds it, scores each test from the runner's signed report, and only
then writes the executed notebook, the gradebook and nbgrader's feedback in its own folder.

Run as ``python -m autograder.pipeline.job JOB_JSON``.
"""

from __future__ import annotations

import ast
import base64
import json
import re
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat

import autograder
from autograder.pipeline.course import COURSE_ID, nbgrader_environment
from autograder.pipeline.execute import Run, RunLimits, run_cells

TAMPER_PHRASE = "the race detector's own tools were replaced"
"""Text the harness puts in a check's message when code under test replaced its tools."""

#: Cells that killed the runner or timed out that a notebook may have skipped before it scores
#: 0 as a whole.
MAX_DEADLY_CELLS = 3

#: Seconds of a job's time limit kept for writing the gradebook and feedback after the runs.
JOB_MARGIN_S = 30

#: Statuses, most important first: a notebook with several findings shows the first.
STATUS_ORDER = ("invalid-notebook", "tampered", "kernel-died", "timeout", "missing-cells",
                "graded")

#: Lesson imports the runner executes itself before any student code (the test cells' names).
_PRELOADED_PACKAGES = ("autograder", "tensorflow", "keras", "numpy", "matplotlib")

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_HIDDEN = re.compile(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS\n?", re.DOTALL)


@dataclass(frozen=True)
class Limits:
    """What one grading kernel may use.

    Attributes:
        cell_timeout_s: Wall time of one cell before the kernel is interrupted.
        memory_mb: Memory of the whole sandbox (every process and its ``/tmp``) before it is
            stopped.
        output_lines: Kept for compatibility (output is capped by characters per cell).
        job_timeout_s: Wall time of the whole job before it is killed (by the caller); one run
            of the notebook is stopped a little before it.
        sandbox: Run the notebook in bubblewrap (refuse to grade when it is missing).
        max_processes: Processes the notebook may run at once.
    """

    cell_timeout_s: int = 120
    memory_mb: int = 3000
    output_lines: int = 1000
    job_timeout_s: int = 1200
    sandbox: bool = True
    max_processes: int = 64


@dataclass(frozen=True)
class Job:
    """Everything one grading job needs; JSON-serialisable.

    Attributes:
        student: nbgrader student id.
        assignment: Assignment (lesson) name.
        submission: The submitted notebook.
        release: The notebook students were given (for detecting edited or deleted cells).
        course: The built course directory (its ``gradebook.db`` and ``source/`` are copied).
        workdir: The job's own folder; everything the job writes goes here.
        limits: Resource limits.
    """

    student: str
    assignment: str
    submission: str
    release: str
    course: str
    workdir: str
    limits: Limits = field(default_factory=Limits)

    @classmethod
    def from_json(cls, text: str) -> Job:
        """Parse a job written by :meth:`to_json`."""
        data = json.loads(text)
        data["limits"] = Limits(**data.get("limits", {}))
        return cls(**data)

    def to_json(self) -> str:
        """Serialise the job."""
        return json.dumps(asdict(self), indent=1)


@dataclass
class JobResult:
    """What grading one notebook produced.

    Attributes:
        student: nbgrader student id.
        assignment: Assignment name.
        notebook: Notebook name (without ``.ipynb``).
        status: graded, timeout, kernel-died, invalid-notebook, tampered, missing-cells.
        score: Points earned.
        max_score: Points available.
        cells: Per test cell: ``{grade_id: [score, max_score, reason]}``.
        detail: One line for the grades table.
        notes: What the grader tells the student (also put into the feedback).
        seconds: Wall time of the job.
        peak_rss_mb: Peak memory of the grading sandbox (processes plus ``/tmp``).
    """

    student: str
    assignment: str
    notebook: str
    status: str
    score: float = 0.0
    max_score: float = 0.0
    cells: dict[str, list] = field(default_factory=dict)
    detail: str = ""
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    peak_rss_mb: float = 0.0


def run_job(job: Job) -> JobResult:
    """Grade one notebook; write ``result.json`` and ``feedback.html`` into ``job.workdir``."""
    started = time.monotonic()
    workdir = Path(job.workdir)
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    notebook_name = Path(job.submission).stem
    release = nbformat.read(job.release, as_version=4)
    structure = _structure(release)
    result = JobResult(job.student, job.assignment, notebook_name, "graded",
                       max_score=sum(p for _, p in structure.tests.values()))
    try:
        submitted = _read_submission(Path(job.submission))
    except ValueError as exc:
        result.status = "invalid-notebook"
        result.detail = str(exc)
        result.notes.append(f"Your notebook could not be read: {exc}")
        result.cells = {gid: [0.0, pts, "notebook unreadable"]
                        for gid, (_, pts) in structure.tests.items()}
    else:
        _grade(job, submitted, release, structure, result, workdir)
    result.seconds = round(time.monotonic() - started, 2)
    partial = workdir / "result.json.tmp"
    partial.write_text(json.dumps(asdict(result), indent=1), encoding="utf-8")
    partial.replace(workdir / "result.json")
    return result


@dataclass(frozen=True)
class _Structure:
    """The release notebook's graded cells: tests with points, and which answers they grade."""

    tests: dict[str, tuple[str, float]]  # test grade_id -> (source, points)
    answers: dict[str, list[str]]  # answer grade_id -> test grade_ids that grade it


def _grade_id(cell: nbformat.NotebookNode) -> str | None:
    return cell.metadata.get("nbgrader", {}).get("grade_id")


def _is_test(cell: nbformat.NotebookNode) -> bool:
    from nbgrader.utils import is_grade, is_solution

    return is_grade(cell) and not is_solution(cell)


def _structure(release: nbformat.NotebookNode) -> _Structure:
    from nbgrader.utils import is_solution

    tests: dict[str, tuple[str, float]] = {}
    answers: dict[str, list[str]] = {}
    pending: list[str] = []
    for cell in release.cells:
        if is_solution(cell) and cell.cell_type == "code":
            pending.append(_grade_id(cell))
            answers[_grade_id(cell)] = []
        elif _is_test(cell):
            tests[_grade_id(cell)] = (cell.source, float(cell.metadata["nbgrader"]["points"]))
            for answer in pending:  # a test grades the answer cells since the previous test
                answers[answer].append(_grade_id(cell))
            pending = []
    return _Structure(tests, answers)


def _read_submission(path: Path) -> nbformat.NotebookNode:
    try:
        if path.stat().st_size > 64 * 2**20:
            raise ValueError("larger than 64 MB")
        notebook = nbformat.read(path, as_version=4)
        nbformat.validate(notebook)
    except Exception as exc:  # noqa: BLE001 - any unreadable notebook gets the same status
        raise ValueError(f"{path.name} is not a valid notebook ({type(exc).__name__}: "
                         f"{str(exc).splitlines()[0] if str(exc) else ''})") from None
    return notebook


def _set_status(result: JobResult, status: str) -> None:
    """Keep the more important of the current status and ``status`` (see STATUS_ORDER)."""
    if STATUS_ORDER.index(status) < STATUS_ORDER.index(result.status):
        result.status = status


@dataclass
class _Plan:
    """What the runner runs: the student's code cells, with each test cell as graded."""

    cells: list[dict]
    positions: list[int]  # plan cell -> index of the cell in the submitted notebook
    tests: dict[str, int]  # test grade_id -> plan cell


def _check_cells(submitted: nbformat.NotebookNode, release: nbformat.NotebookNode,
                 structure: _Structure, result: JobResult) -> tuple[set[str], set[str]]:
    """Compare the submission's graded cells with the release.

    Returns:
        The graded cells that are missing (deleted, or no longer code cells) and the grade ids
        that appear more than once (their exercise scores 0).
    """
    released = {_grade_id(c): c for c in release.cells if _grade_id(c)}
    seen: dict[str, int] = {}
    retyped, edited, changed, unknown = [], [], [], []
    for cell in submitted.cells:
        gid = _grade_id(cell)
        if not gid:
            continue
        seen[gid] = seen.get(gid, 0) + 1
        if gid not in released:
            if cell.metadata.get("nbgrader", {}).get("grade"):
                unknown.append(gid)
            continue
        if cell.cell_type != released[gid].cell_type:
            retyped.append(gid)
        elif gid in structure.tests and cell.source != structure.tests[gid][0]:
            edited.append(gid)
        if _grading_metadata(cell) != _grading_metadata(released[gid]):
            changed.append(gid)
    duplicated = {gid for gid, n in seen.items() if n > 1 and gid in released}
    missing = {gid for gid in (*structure.tests, *structure.answers)
               if gid not in seen or gid in retyped}
    if missing:
        _set_status(result, "missing-cells")
        result.notes.append("These graded cells were deleted and score 0: "
                            + ", ".join(sorted(missing)))
    findings = [("were turned into another kind of cell (they score 0)", retyped),
                ("appear more than once (their exercise scores 0)", duplicated),
                ("were edited; the grader ran them as the gradebook holds them", edited),
                ("had their grading metadata changed (points, grade or solution flags); the "
                 "gradebook's metadata was used", changed),
                ("are not in the lesson but claim points (they were ignored)", unknown)]
    for what, gids in findings:
        if gids:
            _set_status(result, "tampered")
            names = ", ".join(sorted(set(gids)))
            result.notes.append(f"These graded cells {what}: {names}")
    return missing, duplicated


def _grading_metadata(cell: nbformat.NotebookNode) -> dict:
    meta = cell.metadata.get("nbgrader", {})
    return {key: meta.get(key) for key in ("grade", "solution", "points", "grade_id", "locked",
                                           "task")}


def _plan(submitted: nbformat.NotebookNode, graded: dict[str, str], structure: _Structure,
          missing: set[str]) -> _Plan:
    plan = _Plan([], [], {})
    count = 0
    for position, cell in enumerate(submitted.cells):
        if cell.cell_type != "code":
            continue
        count += 1
        gid = _grade_id(cell)
        if gid in structure.tests:
            if gid in plan.tests or gid in missing:
                continue
            plan.tests[gid] = len(plan.cells)
            entry = {"kind": "test", "source": graded[gid], "label": gid, "grade_id": gid}
        else:
            kind = "answer" if gid in structure.answers else "code"
            entry = {"kind": kind, "source": cell.source, "label": f"In [{count}]",
                     "grade_id": gid}
        plan.cells.append(entry)
        plan.positions.append(position)
    return plan


def _graded_sources(course: Path, assignment: str, notebook: str) -> dict[str, str]:
    """Each test cell's source as the gradebook's source notebook holds it (hidden tests too)."""
    source = nbformat.read(course / "source" / assignment / f"{notebook}.ipynb", as_version=4)
    return {_grade_id(c): c.source for c in source.cells if _is_test(c)}


def _preload(release: nbformat.NotebookNode) -> list[str]:
    """The import statements of the lesson's own cells that name the grader or TensorFlow."""
    from nbgrader.utils import is_grade, is_solution

    statements = []
    for cell in release.cells:
        if cell.cell_type != "code" or is_grade(cell) or is_solution(cell):
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue
        for node in tree.body:
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if names and all(n.split(".")[0] in _PRELOADED_PACKAGES for n in names):
                statements.append(ast.unparse(node))
    return list(dict.fromkeys(statements))


def _grade(job: Job, submitted: nbformat.NotebookNode, release: nbformat.NotebookNode,
           structure: _Structure, result: JobResult, workdir: Path) -> None:
    missing, duplicated = _check_cells(submitted, release, structure, result)
    course = _job_course(job, workdir)
    plan = _plan(submitted, _graded_sources(course, job.assignment, result.notebook), structure,
                 missing)
    deadline = time.monotonic() + job.limits.job_timeout_s - JOB_MARGIN_S
    skipped: dict[int, str] = {}
    restarts: list[str] = []
    while True:
        for index, cell in enumerate(plan.cells):
            cell["skip"] = skipped.get(index)
        limits = RunLimits(cell_timeout_s=job.limits.cell_timeout_s,
                           run_timeout_s=max(1.0, deadline - time.monotonic()),
                           memory_mb=job.limits.memory_mb, sandbox=job.limits.sandbox,
                           max_processes=job.limits.max_processes)
        run = run_cells(plan.cells, _preload(release), limits, workdir)
        result.peak_rss_mb = max(result.peak_rss_mb, round(run.peak_mb, 1))
        if run.finished or run.stopped == "report":
            break
        cell = run.running
        if cell is None or cell in skipped or len(skipped) >= MAX_DEADLY_CELLS \
                or run.stopped == "run-timeout":
            _fail_whole(result, structure, run)
            (workdir / "runner.log").write_text(run.stderr, encoding="utf-8")
            return
        skipped[cell] = "timeout" if run.stopped == "timeout" else "died"
        plan.cells[cell]["skip_reason"] = run.reason
        _set_status(result, "timeout" if run.stopped == "timeout" else "kernel-died")
        restarts.append(
            f"Grading stopped while it ran {_cell_name(plan.cells[cell])}: {run.reason}. The "
            "grader ran the notebook again in a new sandbox with that cell replaced by an "
            "error: the tests that depend on it score 0, the rest is graded as usual.")
    if run.noise:
        _set_status(result, "tampered")
        result.notes.append(f"The notebook wrote {run.noise} line(s) into the grader's own "
                            "report channel; they were ignored.")
    if not run.finished:
        _set_status(result, "tampered")
        result.notes.append(f"Grading stopped: {run.reason}; the tests that had not run "
                            "score 0.")
    scores = _score_tests(plan, run, structure, result)
    _zero_broken_answers(plan, run, structure, scores, result)
    result.notes.extend(restarts)
    for gid in duplicated:
        for test in structure.answers.get(gid, [gid] if gid in structure.tests else []):
            scores[test] = (0.0, structure.tests[test][1], f"the graded cell {gid} appears "
                            "more than once")
    result.cells = {gid: list(scores.get(gid, (0.0, pts, "cell deleted")))
                    for gid, (_, pts) in structure.tests.items()}
    result.score = sum(score for score, _, _ in result.cells.values())
    result.detail = _detail(result)
    executed = _executed_notebook(submitted, release, plan, run)
    autograded = course / "autograded" / job.student / job.assignment / f"{result.notebook}.ipynb"
    autograded.parent.mkdir(parents=True, exist_ok=True)
    _write_feedback(course, job, executed, autograded, result, workdir)


def _cell_name(cell: dict) -> str:
    if cell["kind"] == "test":
        return f"the test cell {cell['label']}"
    if cell["kind"] == "answer":
        return f"your answer cell {cell['grade_id']} ({cell['label']})"
    return f"your cell {cell['label']}"


def _job_course(job: Job, workdir: Path) -> Path:
    """A private nbgrader course for this job: config, source and a copy of the gradebook."""
    course = workdir / "course"
    shutil.copytree(Path(job.course) / "source" / job.assignment,
                    course / "source" / job.assignment)
    shutil.copyfile(Path(job.course) / "gradebook.db", course / "gradebook.db")
    (course / "nbgrader_config.py").write_text(
        f"c = get_config()  # noqa: F821\nc.CourseDirectory.course_id = {COURSE_ID!r}\n",
        encoding="utf-8")
    return course


def _fail_whole(result: JobResult, structure: _Structure, run: Run) -> None:
    status = {"timeout": "timeout", "run-timeout": "timeout"}.get(run.stopped, "kernel-died")
    result.status = status if result.status != "tampered" else result.status
    reason = run.reason or "the notebook could not be run"
    result.notes.append(f"Grading stopped: {reason}. Every exercise of this notebook scores 0.")
    result.cells = {gid: [0.0, pts, reason] for gid, (_, pts) in structure.tests.items()}
    result.score = 0.0
    result.detail = reason


_PACKAGE_DIR = str(Path(autograder.__file__).resolve().parent.parent)


_GRADER_FRAME = re.compile(
    r'^\s*File "(?:' + "|".join(re.escape(p) for p in {sys.prefix, _PACKAGE_DIR, sys.base_prefix})
    + r')[^"]*", line \d+, in .*\n(?:\s{4,}\S.*\n)?(?:\s*[~^]+\s*\n)?', re.MULTILINE)


def scrub(text: str) -> str:
    """Text from the sandbox without grader or library frames, host paths or runner names."""
    text = _GRADER_FRAME.sub("", _ANSI.sub("", text))
    for prefix in sorted({sys.prefix, _PACKAGE_DIR}, key=len, reverse=True):
        text = text.replace(prefix + "/", "").replace(prefix, "")
    return re.sub(r"<(cell|grader test) \d+>", "a cell", text)


def _error_reason(error: dict) -> str:
    text = f"{error.get('ename', '')}: {error.get('evalue', '')}".rstrip(": ")
    where = f" ({error['where']})" if error.get("where") else ""
    return scrub(text + where)


def _score_tests(plan: _Plan, run: Run, structure: _Structure,
                 result: JobResult) -> dict[str, tuple]:
    """Each test cell's (score, points, reason) from the runner's report of it."""
    scores = {}
    for gid, index in plan.tests.items():
        points = structure.tests[gid][1]
        event = run.ended.get(index)
        tried = [*(event or {}).get("tamper_before", []), *(event or {}).get("tamper", [])]
        if event is None:
            scores[gid] = (0.0, points, "the test did not run to the end")
        elif event.get("integrity") or tried:
            _set_status(result, "tampered")
            what = "; ".join([*event.get("integrity", []), *tried][:5])
            scores[gid] = (0.0, points, f"tampered: {scrub(what)}")
            result.notes.append(f"{gid}: the notebook changed or reached into the grader "
                                f"({scrub(what)}); that test scored 0.")
        elif event.get("error"):
            reason = _error_reason(event["error"])
            if TAMPER_PHRASE in reason:
                _set_status(result, "tampered")
                result.notes.append(f"{gid}: the grader's tools were replaced by the notebook; "
                                    "that check scored 0.")
            scores[gid] = (0.0, points, reason)
        else:
            scores[gid] = (points, points, "passed")
    return scores


def _zero_broken_answers(plan: _Plan, run: Run, structure: _Structure,
                         scores: dict[str, tuple], result: JobResult) -> None:
    """An answer cell that raised or timed out scores 0 on every test that grades it."""
    for index, cell in enumerate(plan.cells):
        error = (run.ended.get(index) or {}).get("error")
        if cell["kind"] != "answer" or not error:
            continue
        gid = cell["grade_id"]
        name = error.get("ename")
        if name == "CellTimeoutError":
            reason = f"answer cell {gid} did not finish within the time limit (a deadlock?)"
            _set_status(result, "timeout")
        elif name == "TamperingError":
            reason = f"answer cell {gid} tried to change the grader's tools: " \
                     f"{scrub(error.get('evalue', ''))}"
            _set_status(result, "tampered")
        elif name == "NotImplementedError":
            reason = f"answer cell {gid} is not answered yet"
        elif name == "KernelDiedInThisCell":
            reason = f"answer cell {gid} stopped the grading process: {error.get('evalue', '')}"
        else:
            reason = f"answer cell {gid} raised {_error_reason(error)}"
        for test in structure.answers[gid]:
            _, points, _ = scores.get(test, (0.0, structure.tests[test][1], ""))
            scores[test] = (0.0, points, reason)
        result.notes.append(f"{reason}; {', '.join(structure.answers[gid]) or 'no test'} "
                            "scored 0.")


def _executed_notebook(submitted: nbformat.NotebookNode, release: nbformat.NotebookNode,
                       plan: _Plan, run: Run) -> nbformat.NotebookNode:
    """The submission with each test cell as released and every cell's outputs from the run."""
    executed = nbformat.from_dict(json.loads(json.dumps(submitted)))
    released = {_grade_id(c): c for c in release.cells if _is_test(c)}
    for cell in executed.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        gid = _grade_id(cell)
        if gid in released and cell.cell_type == "code":
            cell.metadata["nbgrader"] = dict(released[gid].metadata["nbgrader"])
    for index, position in enumerate(plan.positions):
        cell = executed.cells[position]
        if plan.cells[index]["kind"] == "test":
            cell.source = _HIDDEN.sub("# (hidden tests ran here)\n", plan.cells[index]["source"])
        cell.execution_count = index + 1
        cell.outputs = _outputs(run.ended.get(index), index + 1)
    return executed


def _outputs(event: dict | None, count: int) -> list:
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
            evalue=scrub(str(error.get("evalue", ""))), traceback=[scrub(x) for x in lines]))
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


def _detail(result: JobResult) -> str:
    parts = [f"{gid}={score:g}/{pts:g}" for gid, (score, pts, _) in result.cells.items()]
    if result.status != "graded" and result.notes:
        parts.append("| " + result.notes[0])
    return " ".join(parts)


def _write_feedback(course: Path, job: Job, executed: nbformat.NotebookNode, autograded: Path,
                    result: JobResult, workdir: Path) -> None:
    """Record the scores in the job's gradebook copy and render nbgrader's feedback HTML."""
    from nbgrader.api import Gradebook, MissingEntry
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config

    db_url = f"sqlite:///{course / 'gradebook.db'}"
    with nbgrader_environment(), Gradebook(db_url) as gb:
        gb.update_or_create_student(job.student)
        gb.update_or_create_submission(job.assignment, job.student)
        for gid, (score, _, _) in result.cells.items():
            try:
                grade = gb.find_grade(gid, result.notebook, job.assignment, job.student)
            except MissingEntry:
                continue
            grade.auto_score = score
            grade.manual_score = None
            grade.needs_manual_grade = False
        gb.db.commit()
    if result.notes:
        note = nbformat.v4.new_markdown_cell(
            "**Grader notes**\n\n" + "\n".join(f"- {n}" for n in result.notes))
        note.id = "racelab-grader-notes"
        executed.cells.insert(0, note)
    nbformat.write(executed, autograded)
    cfg = Config()
    cfg.CourseDirectory.root = str(course)
    cfg.CourseDirectory.course_id = COURSE_ID
    cfg.CourseDirectory.db_url = db_url
    with nbgrader_environment():
        api = NbGraderAPI(coursedir=CourseDirectory(config=cfg), config=cfg)
        outcome = api.generate_feedback(job.assignment, job.student, force=True)
    html = course / "feedback" / job.student / job.assignment / f"{result.notebook}.html"
    if outcome["success"] and html.exists():
        shutil.copyfile(html, workdir / "feedback.html")
    else:
        result.notes.append("feedback could not be generated")


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``python -m autograder.pipeline.job JOB_JSON``."""
    args = sys.argv[1:] if argv is None else argv
    job = Job.from_json(Path(args[0]).read_text(encoding="utf-8"))
    run_job(job)
    return 0


if __name__ == "__main__":
    sys.exit(main())
