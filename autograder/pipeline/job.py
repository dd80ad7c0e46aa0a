"""Grade one submission: one student's notebook for one assignment, as a pure, isolated job.

Inputs: the submitted notebook, the course's release notebook and gradebook template (see
:class:`Job`). Outputs, all inside the job's own folder: ``result.json`` (a :class:`JobResult`)
and ``feedback.html``. Nothing outside the job folder is written, so jobs run in parallel
processes here, or on a cluster's workers, and a re-run never loses or duplicates a grade.

Run as ``python -m autograder.pipeline.job JOB_JSON``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat

from autograder.lesson import GRADING_ENV
from autograder.pipeline import cell_marks, sandbox
from autograder.pipeline.course import COURSE_ID, nbgrader_environment

TAMPER_PHRASE = "the race detector's own tools were replaced"
"""Text the harness puts in a check's message when code under test replaced its tools."""

#: Cells that killed the kernel a notebook may have skipped before it scores 0 as a whole.
MAX_DEADLY_CELLS = 3

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_HIDDEN = re.compile(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS\n?", re.DOTALL)


@dataclass(frozen=True)
class Limits:
    """What one grading kernel may use.

    Attributes:
        cell_timeout_s: Wall time of one cell before the kernel is interrupted.
        memory_mb: Resident memory of the kernel before it is killed.
        output_lines: Stream output lines kept per cell.
        job_timeout_s: Wall time of the whole job before it is killed (by the caller).
        sandbox: Run the kernel in bubblewrap (refuse to grade when it is missing).
    """

    cell_timeout_s: int = 120
    memory_mb: int = 3000
    output_lines: int = 1000
    job_timeout_s: int = 1200
    sandbox: bool = True


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
        peak_rss_mb: Peak resident memory of the grading kernel.
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


def _structure(release: nbformat.NotebookNode) -> _Structure:
    tests: dict[str, tuple[str, float]] = {}
    answers: dict[str, list[str]] = {}
    pending: list[str] = []
    for cell in release.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution") and cell.cell_type == "code":
            pending.append(meta["grade_id"])
            answers[meta["grade_id"]] = []
        elif meta.get("grade") and not meta.get("solution"):
            tests[meta["grade_id"]] = (cell.source, float(meta["points"]))
            for answer in pending:  # a test grades the answer cells since the previous test
                answers[answer].append(meta["grade_id"])
            pending = []
    return _Structure(tests, answers)


def _read_submission(path: Path) -> nbformat.NotebookNode:
    try:
        notebook = nbformat.read(path, as_version=4)
        nbformat.validate(notebook)
    except Exception as exc:  # noqa: BLE001 - any unreadable notebook gets the same status
        raise ValueError(f"{path.name} is not a valid notebook ({type(exc).__name__}: "
                         f"{str(exc).splitlines()[0] if str(exc) else ''})") from None
    return notebook


def _grade(job: Job, submitted: nbformat.NotebookNode, release: nbformat.NotebookNode,
           structure: _Structure, result: JobResult, workdir: Path) -> None:
    present = {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in submitted.cells}
    missing = [gid for gid in (*structure.tests, *structure.answers) if gid not in present]
    edited = [gid for gid, (source, _) in structure.tests.items()
              if gid in present and present[gid].source != source]
    if missing:
        result.status = "missing-cells"
        result.notes.append("These graded cells were deleted and score 0: " + ", ".join(missing))
    if edited:
        result.status = "tampered" if not missing else result.status
        result.notes.append("These read-only test cells were edited; the grader restored them "
                            "from the gradebook before running: " + ", ".join(edited))
    course = _job_course(job, workdir)
    target = course / "submitted" / job.student / job.assignment / f"{result.notebook}.ipynb"
    target.parent.mkdir(parents=True)
    nbformat.write(submitted, target)
    autograded = course / "autograded" / job.student / job.assignment / target.name
    deadly: list[str] = []
    while True:
        outcome, peak = _autograde(job, course, deadly)
        result.peak_rss_mb = max(result.peak_rss_mb, round(peak, 1))
        if outcome["success"] and autograded.exists():
            break
        cell = _deadly_cell(outcome, workdir, deadly)
        if cell is None or len(deadly) >= MAX_DEADLY_CELLS:
            _fail_whole(result, structure, outcome, peak, job.limits)
            return
        deadly.append(cell)
        result.notes.append(
            f"The kernel died while it ran {_describe_cell(cell, submitted, course, job)} "
            f"({_kernel_death(outcome)}). The grader ran the notebook again in a new kernel "
            "with that cell replaced by an error: the tests that depend on it score 0, the "
            "rest is graded as usual.")
    if deadly and result.status == "graded":
        result.status = "kernel-died"
    executed = nbformat.read(autograded, as_version=4)
    scores = _gradebook_scores(course, job, result.notebook)
    _explain_failures(executed, scores)
    _zero_broken_answers(executed, structure, scores, result)
    _tamper_in_outputs(executed, result)
    result.cells = {gid: list(scores.get(gid, (0.0, pts, "cell deleted")))
                    for gid, (_, pts) in structure.tests.items()}
    for gid in missing:
        if gid in result.cells:
            result.cells[gid] = [0.0, result.cells[gid][1], "cell deleted"]
    result.score = sum(score for score, _, _ in result.cells.values())
    result.detail = _detail(result)
    _write_feedback(course, job, executed, autograded, result, workdir)


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


def _marks_file(workdir: Path) -> Path:
    return workdir / "marks" / "last-cell"


def _kernel_death(outcome: dict) -> str | None:
    """Why the kernel died (killed at the memory cap, crashed or exited), or None if it did not."""
    error = f"{outcome.get('error') or ''}\n{outcome.get('log') or ''}"
    if "MemoryCapExceeded: " in error:
        return error.split("MemoryCapExceeded: ", 1)[1].splitlines()[0]
    if "DeadKernelError" in error or "Kernel died" in error:
        return "the kernel died (the notebook exited or crashed)"
    return None


def _deadly_cell(outcome: dict, workdir: Path, skipped: list[str]) -> str | None:
    """The digest of the cell the kernel died in, when it died (not a timeout) in a new one."""
    if _kernel_death(outcome) is None:
        return None
    cell = cell_marks.last_started(_marks_file(workdir))
    return None if cell is None or cell in skipped else cell


def _describe_cell(digest: str, submitted: nbformat.NotebookNode, course: Path, job: Job) -> str:
    """Name the cell with ``digest``: a test cell (as graded, hidden tests included) or yours."""
    source = course / "source" / job.assignment
    graded_cells = [cell for path in sorted(source.glob("*.ipynb"))
                    for cell in nbformat.read(path, as_version=4).cells]
    for cell in [*graded_cells, *submitted.cells]:
        if cell.cell_type == "code" and cell_marks.digest(cell.source) == digest:
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("grade") and not meta.get("solution"):
                return f"the test cell {meta['grade_id']}"
            if meta.get("solution"):
                return f"your answer cell {meta['grade_id']}"
            first = next((line for line in cell.source.splitlines() if line.strip()), "")
            return f"the cell that starts `{first.strip()[:60]}`"
    return "a cell"


def _autograde(job: Job, course: Path, deadly: list[str]) -> tuple[dict, float]:
    """Run nbgrader autograde on the job's course; returns (nbgrader outcome, peak kernel MB).

    Cells whose digest is in ``deadly`` run as an error (they killed an earlier kernel).
    """
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config

    workdir = course.parent
    kernel_dir = course / "autograded" / job.student / job.assignment
    cfg = Config()
    cfg.CourseDirectory.root = str(course)
    cfg.CourseDirectory.course_id = COURSE_ID
    cfg.CourseDirectory.db_url = f"sqlite:///{course / 'gradebook.db'}"
    cfg.Execute.timeout = job.limits.cell_timeout_s
    cfg.LimitOutput.max_lines = job.limits.output_lines
    marks = _marks_file(workdir)
    marks.parent.mkdir(parents=True, exist_ok=True)
    marks.unlink(missing_ok=True)
    kernel_env = {GRADING_ENV: "1", **cell_marks.skip_environment(marks, deadly)}
    env_overrides = {"JUPYTER_RUNTIME_DIR": str(workdir / "runtime"),
                     "JUPYTER_DATA_DIR": str(workdir / "jupyter"), **kernel_env}
    (workdir / "runtime").mkdir(exist_ok=True)
    if job.limits.sandbox:
        kernel_dir.mkdir(parents=True, exist_ok=True)
        sandbox.install_kernelspec(workdir / "jupyter", kernel_dir,
                                   sandbox.kernel_environment(kernel_env),
                                   writable=(marks.parent,))
        cfg.Execute.kernel_name = sandbox.KERNEL_NAME
    else:
        env_overrides["PYTHONSTARTUP"] = sandbox.kernel_environment()["PYTHONSTARTUP"]
    with _environ(env_overrides), nbgrader_environment(), _MemoryWatch(job.limits) as watch:
        api = NbGraderAPI(coursedir=CourseDirectory(config=cfg), config=cfg)
        outcome = api.autograde(job.assignment, job.student, force=True, create=True)
    if watch.killed:
        outcome = {"success": False, "error": f"MemoryCapExceeded: {watch.killed}"}
    return outcome, watch.peak_mb


@contextlib.contextmanager
def _environ(values: dict[str, str]):
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


class _MemoryWatch:
    """Samples the kernels this process started; kills one that passes the memory cap."""

    def __init__(self, limits: Limits):
        self.cap_mb = limits.memory_mb
        self.peak_mb = 0.0
        self.killed = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="memory-watch", daemon=True)

    def __enter__(self) -> _MemoryWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        import psutil

        me = psutil.Process()
        while not self._stop.wait(0.2):
            for child in me.children(recursive=True):
                try:
                    rss = child.memory_info().rss / 2**20
                except psutil.Error:
                    continue
                self.peak_mb = max(self.peak_mb, rss)
                if rss > self.cap_mb:
                    self.killed = f"the kernel used {rss:.0f} MB, over the {self.cap_mb} MB cap"
                    with contextlib.suppress(psutil.Error):
                        child.kill()


def _fail_whole(result: JobResult, structure: _Structure, outcome: dict, peak: float,
                limits: Limits) -> None:
    error = f"{outcome.get('error') or ''}\n{outcome.get('log') or ''}"
    death = _kernel_death(outcome)
    if death is not None:
        result.status, reason = "kernel-died", death
    elif "Timeout" in error or "UnresponsiveKernel" in error:
        result.status = "timeout"
        reason = f"a cell ran over {limits.cell_timeout_s} s and the kernel did not recover"
    else:
        result.status = "kernel-died"
        lines = [line for line in error.strip().splitlines() if line.strip()]
        reason = lines[-1] if lines else "nbgrader could not run the notebook"
    result.notes.append(f"Grading stopped: {reason}. Every exercise of this notebook scores 0.")
    result.cells = {gid: [0.0, pts, reason] for gid, (_, pts) in structure.tests.items()}
    result.score = 0.0
    result.detail = reason


def _gradebook_scores(course: Path, job: Job, notebook: str) -> dict[str, tuple]:
    from nbgrader.api import Gradebook

    scores = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        submitted = gb.find_submission_notebook(notebook, job.assignment, job.student)
        for grade in submitted.grades:
            scores[grade.name] = (float(grade.score), float(grade.max_score),
                                  "passed" if grade.score == grade.max_score else "failed")
    return scores


def _errors(cell: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]


def error_text(cell: nbformat.NotebookNode) -> str:
    """The last error a cell raised, as ``Name: message`` without terminal colours; or ""."""
    errors = _errors(cell)
    if not errors:
        return ""
    name, value = errors[-1].get("ename", ""), errors[-1].get("evalue", "")
    return _ANSI.sub("", f"{name}: {value}" if value else name)


def _explain_failures(executed: nbformat.NotebookNode, scores: dict[str, tuple]) -> None:
    """Give each failed test the error its cell raised as the reason (the check's message)."""
    for cell in executed.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in scores and scores[gid][2] == "failed" and error_text(cell):
            scores[gid] = (*scores[gid][:2], error_text(cell))


def _zero_broken_answers(executed: nbformat.NotebookNode, structure: _Structure,
                         scores: dict[str, tuple], result: JobResult) -> None:
    """An answer cell that raised or timed out scores 0 on every test that grades it."""
    for cell in executed.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid not in structure.answers or not _errors(cell):
            continue
        error = _errors(cell)[-1]
        if error.get("ename") == "CellTimeoutError":
            reason = f"answer cell {gid} did not finish within the time limit (a deadlock?)"
            result.status = "timeout" if result.status == "graded" else result.status
        elif error.get("ename") == "TamperingError":
            reason = f"answer cell {gid} tried to change the grader's tools: {error.get('evalue')}"
            result.status = "tampered"
        elif error.get("ename") == "NotImplementedError":
            reason = f"answer cell {gid} is not answered yet"
        else:
            reason = f"answer cell {gid} raised {error.get('ename')}: {error.get('evalue', '')}"
        for test in structure.answers[gid]:
            _, points, _ = scores.get(test, (0.0, structure.tests[test][1], ""))
            scores[test] = (0.0, points, reason)
        result.notes.append(f"{reason}; {', '.join(structure.answers[gid]) or 'no test'} "
                            "scored 0.")


def _tamper_in_outputs(executed: nbformat.NotebookNode, result: JobResult) -> None:
    for cell in executed.cells:
        for error in _errors(cell):
            if TAMPER_PHRASE in error.get("evalue", ""):
                result.status = "tampered"
                gid = cell.metadata.get("nbgrader", {}).get("grade_id", "a cell")
                result.notes.append(f"{gid}: the grader's tools were replaced by the notebook; "
                                    "that check scored 0.")


def _detail(result: JobResult) -> str:
    parts = [f"{gid}={score:g}/{pts:g}" for gid, (score, pts, _) in result.cells.items()]
    if result.status != "graded" and result.notes:
        parts.append("| " + result.notes[0])
    return " ".join(parts)


def _write_feedback(course: Path, job: Job, executed: nbformat.NotebookNode, autograded: Path,
                    result: JobResult, workdir: Path) -> None:
    """Feedback HTML through nbgrader, with hidden test source removed and grader notes added."""
    from nbgrader.api import Gradebook
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for gid, (score, _, _) in result.cells.items():
            try:
                grade = gb.find_grade(gid, result.notebook, job.assignment, job.student)
            except Exception:  # noqa: BLE001 - a deleted cell has no grade row
                continue
            if grade.score != score:
                grade.manual_score = score
                grade.needs_manual_grade = False
        gb.db.commit()
    for cell in executed.cells:
        if cell.metadata.get("nbgrader", {}).get("grade") and cell.cell_type == "code":
            cell.source = _HIDDEN.sub("# (hidden tests ran here)\n", cell.source)
    if result.notes:
        note = nbformat.v4.new_markdown_cell(
            "**Grader notes**\n\n" + "\n".join(f"- {n}" for n in result.notes))
        note.id = "racelab-grader-notes"
        executed.cells.insert(0, note)
    nbformat.write(executed, autograded)
    cfg = Config()
    cfg.CourseDirectory.root = str(course)
    cfg.CourseDirectory.course_id = COURSE_ID
    cfg.CourseDirectory.db_url = f"sqlite:///{course / 'gradebook.db'}"
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
