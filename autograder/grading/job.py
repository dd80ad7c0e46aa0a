"""Grade one submission: one student's notebook for one assignment, as a pure, isolated job.

Inputs: the submitted notebook, the course's release notebook and gradebook template (see
:class:`Job`). Outputs, all inside the job's own folder: ``result.json`` (a :class:`JobResult`)
and ``feedback.html``. Nothing outside the job folder is written, so jobs run in parallel
processes here, or on a cluster's workers, and a re-run never loses or duplicates a grade.

The notebook's code runs in the sandboxed runner (:mod:`autograder.grading.execute`), never
in a folder the host reads back. The job compares the submission's graded cells with the release
(:mod:`~autograder.grading.cells`), runs the student's cells with each test cell as the
gradebook holds it, grades it again without a cell that stopped the run (never re-running that
cell), scores each test from the runner's signed report (:mod:`~autograder.grading.scoring`),
and only then writes the executed notebook, the gradebook and nbgrader's feedback in its own
folder (:mod:`~autograder.grading.feedback`).

Run as ``python -m autograder.grading.job JOB_JSON``, or as forks of one job server
(:func:`serve`: ``python -m autograder.grading.job --serve``), which imports the grader once
and forks a fresh process per job instead of starting an interpreter for each.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import sys
import time
import traceback
from dataclasses import asdict
from pathlib import Path

import nbformat

from autograder.course.course import COURSE_ID
from autograder.grading import cells as graded_cells
from autograder.grading import scoring, signatures
from autograder.grading.cells import Structure
from autograder.grading.execute import ReadyRunner, RunLimits, run_cells
from autograder.grading.feedback import executed_notebook, write_executed, write_feedback
from autograder.grading.spec import Job, JobFolder, JobResult, Status, set_status

#: Cells that stopped the runner (crash, exit, limit) or timed out that a notebook may have
#: skipped before it scores 0 as a whole.
MAX_DEADLY_CELLS = 3

#: Seconds of a job's time limit kept for writing the gradebook and feedback after the runs.
JOB_MARGIN_S = 30


def run_job(job: Job, ready: ReadyRunner | None = None) -> JobResult:
    """Grade one notebook; write ``result.json`` and ``feedback.html`` into ``job.workdir``.

    Args:
        job: What to grade, where, under which limits.
        ready: A runner started for this job before it came (Validate's): its first run, if
            it fits (:meth:`~autograder.grading.execute.ReadyRunner.fits`); stopped either way.
    """
    started = time.monotonic()
    workdir = Path(job.workdir)
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    notebook_name = Path(job.submission).stem
    release = nbformat.read(job.release, as_version=4)
    structure = graded_cells.structure(release)
    result = JobResult(job.student, job.assignment, notebook_name, Status.GRADED.value,
                       max_score=sum(p for _, p in structure.tests.values()))
    try:
        submitted = graded_cells.read_submission(Path(job.submission))
    except ValueError as exc:
        if ready is not None:
            ready.close()
        set_status(result, Status.INVALID_NOTEBOOK)
        result.detail = str(exc)
        result.notes.append(f"Your notebook could not be read: {exc}")
        result.cells = {gid: [0.0, pts, "notebook unreadable"]
                        for gid, (_, pts) in structure.tests.items()}
        result.signatures = signatures.failure_signatures(result)
    else:
        _grade(job, submitted, release, structure, result, workdir, ready)
    result.seconds = round(time.monotonic() - started, 2)
    final = JobFolder(workdir).result
    partial = final.with_suffix(".json.tmp")
    partial.write_text(json.dumps(asdict(result), indent=1), encoding="utf-8")
    partial.replace(final)
    return result


def _grade(job: Job, submitted: nbformat.NotebookNode, release: nbformat.NotebookNode,
           structure: Structure, result: JobResult, workdir: Path,
           ready: ReadyRunner | None) -> None:
    missing, duplicated = graded_cells.check_cells(submitted, release, structure, result)
    probes = graded_cells.environment_probes(submitted, structure)
    if probes:
        result.notes.append(
            "Flagged for the instructor (not scored): an answer reads facts of its environment "
            f"({', '.join(probes)}) that differ between the lab and the grading sandbox; an "
            "answer that behaves differently when graded would be misconduct.")
    course = _job_course(job, workdir)
    plan = graded_cells.make_plan(
        submitted, graded_cells.graded_sources(course, job.assignment, result.notebook),
        structure, missing, release)
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
        run = run_cells(plan.cells, graded_cells.preload(release), limits, workdir, ready)
        ready = None
        result.peak_rss_mb = max(result.peak_rss_mb, round(run.peak_mb, 1))
        if run.stopped == "grader-error":
            scoring.fail_whole(result, structure, run)
            result.signatures = signatures.failure_signatures(result)
            JobFolder(workdir).runner_log.write_text(run.stderr, encoding="utf-8")
            return
        if run.finished or run.stopped == "report":
            break
        cell = run.running
        if cell is None or cell in skipped or len(skipped) >= MAX_DEADLY_CELLS \
                or run.stopped == "run-timeout":
            scoring.fail_whole(result, structure, run)
            result.signatures = signatures.failure_signatures(result)
            JobFolder(workdir).runner_log.write_text(run.stderr, encoding="utf-8")
            return
        skipped[cell] = "timeout" if run.stopped == "timeout" else "died"
        plan.cells[cell]["skip_reason"] = run.reason
        set_status(result, Status.TIMEOUT if run.stopped == "timeout" else Status.KERNEL_DIED)
        restarts.append(
            f"Grading stopped while it ran {_cell_name(plan.cells[cell])}: {run.reason}. The "
            "grader ran the notebook again in a new sandbox with that cell replaced by an "
            "error: the tests that depend on it score 0, the rest is graded as usual.")
    if run.noise:
        set_status(result, Status.TAMPERED)
        result.notes.append(f"The notebook wrote {run.noise} line(s) into the grader's own "
                            "report channel; they were ignored.")
    if not run.finished:
        set_status(result, Status.TAMPERED)
        result.notes.append(f"Grading stopped: {run.reason}; the tests that had not run "
                            "score 0.")
    scores = scoring.score_tests(plan, run, structure, result)
    scoring.zero_broken_answers(plan, run, structure, scores, result)
    result.notes.extend(restarts)
    for gid in duplicated:
        for test in structure.answers.get(gid, [gid] if gid in structure.tests else []):
            scores[test] = (0.0, structure.tests[test][1], f"the graded cell {gid} appears "
                            "more than once")
    result.cells = {gid: list(scores.get(gid, (0.0, pts, "cell deleted")))
                    for gid, (_, pts) in structure.tests.items()}
    result.score = sum(score for score, _, _ in result.cells.values())
    result.detail = scoring.detail(result)
    result.signatures = signatures.failure_signatures(result, plan, run, structure)
    executed = executed_notebook(submitted, release, plan, run)
    write_executed(executed, executed_path(job, result.notebook), result.notes)
    if job.feedback:
        write_feedback(course, job, result, workdir, release)


def executed_path(job: Job, notebook: str) -> Path:
    """Where the job writes the executed notebook (what Validate and the feedback read)."""
    return (Path(job.workdir) / "course" / "autograded" / job.student / job.assignment
            / f"{notebook}.ipynb")


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


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``python -m autograder.grading.job JOB_JSON`` (or ``--serve``)."""
    args = sys.argv[1:] if argv is None else argv
    if args == ["--serve"]:
        serve()
        return 0
    job = Job.from_json(Path(args[0]).read_text(encoding="utf-8"))
    run_job(job)
    return 0


#: What a forked job would otherwise import on its first steps (the feedback's nbgrader and
#: nbconvert above all): imported once by the server, before any job.
SERVER_PRELOAD = ("nbgrader.api", "nbgrader.apps", "nbgrader.coursedir", "nbconvert",
                  "traitlets.config")


def serve() -> None:
    """Fork one job process per request and report its pid and its exit; never returns.

    Requests are lines on stdin, ``{"id": N, "spec": JOB_JSON_PATH, "log": LOG_PATH}``;
    replies are lines on stdout, ``{"id": N, "pid": PID}`` as soon as the job process exists
    and ``{"pid": PID, "exit": CODE}`` when it ends (a negative code: killed by that signal).
    Each job process is a fork of this one, which runs no job itself: it starts as a fresh
    interpreter would, with the grader already imported, in a session of its own (its starter
    kills the whole group at the job's timeout), its output in ``LOG_PATH``. The server is
    single-threaded, so a fork never inherits a lock another thread held. It exits when stdin
    closes; a job still running then finishes on its own.
    """
    import importlib

    for name in SERVER_PRELOAD:
        importlib.import_module(name)
    wakeup_read, wakeup_write = os.pipe()
    os.set_blocking(wakeup_write, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wakeup_write)
    requests = sys.stdin.buffer.raw
    pending = b""
    while True:
        ready, _, _ = select.select([requests, wakeup_read], [], [])
        if wakeup_read in ready:
            os.read(wakeup_read, 4096)
        _report_exits()
        if requests not in ready:
            continue
        chunk = os.read(requests.fileno(), 65536)
        if not chunk:
            os._exit(0)
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            request = json.loads(line)
            pid = os.fork()
            if pid == 0:
                os.close(wakeup_read)
                os.close(wakeup_write)
                _forked_job(request["spec"], request["log"])
            _reply({"id": request["id"], "pid": pid})


def _reply(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def _report_exits() -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        _reply({"pid": pid, "exit": os.waitstatus_to_exitcode(status)})


def _forked_job(spec: str, log: str) -> None:
    """In a forked job process: run the job as ``main`` would, output in ``log``; never returns."""
    os.setsid()
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    devnull = os.open(os.devnull, os.O_RDONLY)
    output = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(devnull, 0)
    os.dup2(output, 1)
    os.dup2(output, 2)
    os.close(devnull)
    os.close(output)
    code = 1
    try:
        code = main([spec])
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    except BaseException:  # noqa: BLE001 - reported in the job's log, as an interpreter would
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
