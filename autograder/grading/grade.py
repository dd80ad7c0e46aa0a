"""`racelab grade`: autograde a class in parallel, resumably, into grades, feedback and gradebook.

Each (student, assignment) is one :mod:`autograder.grading.job` run in its own process, with
its own folder under ``OUT/jobs``. A finished job leaves ``result.json``; a re-run after an
interruption skips every job whose result is there and whose inputs did not change, so no grade
is lost or duplicated. The parent then writes ``OUT/grades.csv``, ``OUT/feedback/`` and the
nbgrader gradebook ``OUT/gradebook.db`` from the results alone, and records the grades in the
class's gradebook (see :mod:`autograder.grading.gradebook`) when asked to.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from concurrent.futures import Executor, ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path

from autograder.course.course import Course
from autograder.grading import gradebook
from autograder.grading.job import executed_path
from autograder.grading.spec import Job, JobFolder, JobResult, Limits, Status
from autograder.grading.untrusted import UntrustedFileError, read_untrusted


@dataclass(frozen=True)
class GradeRow:
    """One student's result on one assignment (a row of ``grades.csv``).

    Attributes:
        student: nbgrader student id (the submission folder's name).
        assignment: The lesson's assignment name.
        score: Points earned.
        max_score: Points available.
        status: A :class:`~autograder.grading.spec.Status` value.
        detail: Points per test cell, then the first grader note when the status is not graded.
    """

    student: str
    assignment: str
    score: float
    max_score: float
    status: str
    detail: str


def plan_jobs(submitted: Path, course: Course, out: Path, limits: Limits) -> list[Job]:
    """One job per student folder and lesson; a missing notebook gets no job (not-submitted)."""
    jobs = []
    for student in student_folders(submitted):
        for lesson in course.lessons:
            notebook = submitted / student / lesson.name / f"{lesson.name}.ipynb"
            if os.path.lexists(notebook):  # a link or a FIFO is planned: its job says what it is
                jobs.append(Job(student, lesson.name, os.path.abspath(notebook),
                                str(course.release_notebook(lesson).resolve()),
                                str(course.root.resolve()),
                                str((out / "jobs" / student / lesson.name).resolve()), limits))
    return jobs


def student_folders(submitted: Path) -> list[str]:
    """The student folders of ``submitted``, sorted (a symbolic link is nobody's folder)."""
    return sorted(p.name for p in submitted.iterdir() if p.is_dir() and not p.is_symlink())


def grade_submissions(submitted: Path, course: Course, out: Path, *, workers: int | None = None,
                      limits: Limits | None = None, progress: bool = True,
                      record_in_course: bool = False, cluster: str | None = None
                      ) -> list[GradeRow]:
    """Grade every submission in ``submitted`` against ``course``; write everything to ``out``.

    Args:
        submitted: Folder in nbgrader's layout ``<student>/<assignment>/<notebook>.ipynb``.
        course: The built course (release and gradebook template), see ``make_course``.
        out: Output folder: ``grades.csv``, ``feedback/``, ``gradebook.db``, ``jobs/``.
        workers: Parallel grading processes (default: the number of CPU cores).
        limits: Per-kernel limits.
        progress: Show a progress bar with ETA on stderr.
        record_in_course: Also record the grades in ``course`` itself, as Formgrader and
            ``racelab release-feedback`` read them: its gradebook, ``autograded/`` (the
            executed notebooks) and ``feedback/``. A course with a ``gradebook_url`` always
            has its grades recorded in that gradebook.
        cluster: Grade on a Dask cluster instead of local processes: a running scheduler's
            address, or ``local:N`` for N single-threaded local workers started for the run
            (``workers`` is then unused). See :mod:`autograder.grading.cluster`.

    Returns:
        A row per student folder and lesson, sorted by student then assignment.
    """
    limits = limits or Limits()
    jobs = plan_jobs(submitted, course, out, limits)
    results = _run_all(jobs, workers or os.cpu_count() or 1, progress, cluster)
    students = student_folders(submitted)
    rows = []
    for student in students:
        for lesson in course.lessons:
            result = results.get((student, lesson.name))
            rows.append(_row(result) if result else
                        GradeRow(student, lesson.name, 0.0,
                                 gradebook.max_score(course, lesson.name),
                                 Status.NOT_SUBMITTED.value, ""))
    write_csv(rows, out / "grades.csv")
    gradebook.write_class_gradebook(course, out / "gradebook.db", results.values())
    _collect_feedback(jobs, results, out / "feedback")
    if record_in_course or course.gradebook_url:
        stamps = {(job.student, job.assignment): _submission_stamps(job) for job in jobs}
        gradebook.record_grades(course, results.values(),
                                {key: _submitted_at(found) for key, found in stamps.items()})
        if record_in_course:
            _record_in_course(course, jobs, results, stamps)
    return rows


def _fingerprint(job: Job) -> str:
    digest = hashlib.sha256()
    try:
        digest.update(read_untrusted(job.submission))
    except UntrustedFileError as error:
        digest.update(str(error).encode())
    digest.update(Path(job.release).read_bytes())
    # What in the gradebook decides the grade, not its bytes: each build gives its rows new
    # random ids, and recording grades in it changes it too.
    digest.update(gradebook.assignment_digest(Path(job.course) / "gradebook.db",
                                              job.assignment).encode())
    for source in sorted((Path(job.course) / "source" / job.assignment).rglob("*")):
        if source.is_file():
            digest.update(source.name.encode() + b"\0" + source.read_bytes())
    digest.update(json.dumps(asdict(job.limits), sort_keys=True).encode())
    return digest.hexdigest()


def _finished(job: Job) -> JobResult | None:
    """The stored result of ``job`` when it exists and was made from the same inputs."""
    done = JobFolder(Path(job.workdir)).done
    if not done.exists():
        return None
    stored = json.loads(done.read_text(encoding="utf-8"))
    if stored.get("fingerprint") != _fingerprint(job):
        return None
    return JobResult(**stored["result"])


def _executor(workers: int, cluster: str | None) -> Executor:
    """Local threads (each job in its own process), or a Dask cluster (see ``cluster``)."""
    if cluster is None:
        return ThreadPoolExecutor(max_workers=max(1, workers))
    from autograder.grading.cluster import ClusterExecutor

    return ClusterExecutor(cluster)


def _run_all(jobs: list[Job], workers: int, progress: bool,
             cluster: str | None = None) -> dict[tuple[str, str], JobResult]:
    from tqdm import tqdm

    results = {}
    todo = []
    for job in jobs:
        stored = _finished(job)
        if stored is None:
            todo.append(job)
        else:
            results[(job.student, job.assignment)] = stored
    bar = tqdm(total=len(jobs), initial=len(jobs) - len(todo), unit="notebook",
               desc="grading", disable=not progress, file=sys.stderr)
    with _executor(workers, cluster) as pool:
        run = run_in_process if cluster is None else run_in_interpreter
        futures = {pool.submit(run, job): job for job in todo}
        for future in as_completed(futures):
            job = futures[future]
            result = future.result()
            results[(job.student, job.assignment)] = result
            if result.status != Status.WORKER_LOST:  # never graded: the next run grades it
                _mark_finished(job, result)
            bar.update(1)
    bar.close()
    return results


def _mark_finished(job: Job, result: JobResult) -> None:
    done = JobFolder(Path(job.workdir)).done
    tmp = done.with_suffix(".tmp")
    tmp.write_text(json.dumps({"fingerprint": _fingerprint(job), "result": asdict(result)},
                              indent=1), encoding="utf-8")
    tmp.replace(done)  # atomic: a result is either wholly there or not at all


#: A job process's start: ``autograder.grading.job``'s main, without ``rfc3987_syntax``.
#: jsonschema (under nbformat) builds a Lark grammar for its "iri" format checker on import
#: when that package is installed: 0.8 s of every job's 3 s start, for a format no notebook
#: or gradebook uses.
_JOB_MAIN = ("import sys; sys.modules.setdefault('rfc3987_syntax', None); "
             "from autograder.grading.job import main; sys.exit(main(sys.argv[1:]))")

#: Seconds a job server may take to fork a job (it forks at once unless it is gone).
FORK_WITHIN_S = 120
#: Seconds a killed job may take to be reported ended.
KILLED_WITHIN_S = 30


class JobServerLost(RuntimeError):
    """The job server ended before it reported the job's end."""


@dataclass
class _Forked:
    """One job the server forked: its pid once forked, its exit code once ended."""

    started: threading.Event = field(default_factory=threading.Event)
    ended: threading.Event = field(default_factory=threading.Event)
    pid: int | None = None
    code: int | None = None


class JobServer:
    """A job server (:func:`autograder.grading.job.serve`): each job a fork of one process
    that imported the grader once, instead of a new interpreter that imports it again.

    A forked job is as fresh as a new interpreter: the server runs no job itself, only
    imports; each fork has its own session, killed whole at the job's timeout.
    """

    def __init__(self) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-c", _JOB_MAIN, "--serve"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, start_new_session=True)
        self._lock = threading.Lock()
        self._requests = 0
        self._by_id: dict[int, _Forked] = {}
        self._by_pid: dict[int, _Forked] = {}
        self.lost = False
        threading.Thread(target=self._read_replies, name="racelab-job-server",
                         daemon=True).start()

    def run(self, spec: Path, log: Path, timeout: float) -> int | None:
        """Fork the job of ``spec`` (its output into ``log``) and wait for its end.

        Returns:
            Its exit code (negative: killed by that signal), or None when it ran over
            ``timeout`` seconds and was killed.

        Raises:
            JobServerLost: the server ended first (the job, if forked, is killed).
        """
        forked = _Forked()
        with self._lock:
            if self.lost:
                raise JobServerLost("the job server has ended")
            self._requests += 1
            self._by_id[self._requests] = forked
            request = {"id": self._requests, "spec": str(spec), "log": str(log)}
            try:
                self._process.stdin.write(json.dumps(request).encode() + b"\n")
                self._process.stdin.flush()
            except OSError as exc:
                self.lost = True
                raise JobServerLost(f"the job server has ended ({exc})") from exc
        if not forked.started.wait(FORK_WITHIN_S) or forked.pid is None:
            raise JobServerLost("the job server did not fork the job")
        if forked.ended.wait(timeout) and forked.code is not None:
            return forked.code
        with contextlib.suppress(ProcessLookupError):
            os.killpg(forked.pid, signal.SIGKILL)
        if not forked.ended.wait(KILLED_WITHIN_S) or forked.code is None:
            raise JobServerLost("the job server ended while the job ran")
        return None

    def close(self) -> None:
        """End the server (a job it forked still finishes)."""
        with contextlib.suppress(OSError):
            self._process.stdin.close()
        self._process.wait()

    def _read_replies(self) -> None:
        for line in self._process.stdout:
            reply = json.loads(line)
            with self._lock:
                if "id" in reply:
                    forked = self._by_id.pop(reply["id"])
                    forked.pid = reply["pid"]
                    self._by_pid[forked.pid] = forked
                    forked.started.set()
                else:
                    forked = self._by_pid.pop(reply["pid"])
                    forked.code = reply["exit"]
                    forked.ended.set()
        with self._lock:
            self.lost = True
            for forked in [*self._by_id.values(), *self._by_pid.values()]:
                forked.started.set()
                forked.ended.set()


_server: JobServer | None = None
_server_lock = threading.Lock()


def job_server() -> JobServer:
    """This process's job server, started on first use (and again if it ended)."""
    global _server  # noqa: PLW0603 - one server per grading process, shared by its runs
    with _server_lock:
        if _server is None or _server.lost:
            _server = JobServer()
        return _server


def run_in_process(job: Job) -> JobResult:
    """Run ``job`` in a fresh process (forked by :func:`job_server`; a new interpreter if the
    server is gone), killing it (and its kernel) at the job timeout."""
    return _run(job, forked=True)


def run_in_interpreter(job: Job) -> JobResult:
    """Run ``job`` in a new Python interpreter, killing it (and its kernel) at the job timeout:
    what a cluster's worker does, where the job process names its job in its command line."""
    return _run(job, forked=False)


def _run(job: Job, *, forked: bool) -> JobResult:
    folder = JobFolder(Path(job.workdir))
    folder.workdir.parent.mkdir(parents=True, exist_ok=True)
    spec = folder.spec
    spec.write_text(job.to_json(), encoding="utf-8")
    log = folder.log
    code: int | None
    try:
        if not forked:
            raise JobServerLost("a new interpreter was asked for")
        code = job_server().run(spec, log, job.limits.job_timeout_s)
    except JobServerLost:
        code = _run_interpreter(spec, log, job.limits.job_timeout_s)
    if code is None:
        return _failed(job, Status.TIMEOUT,
                       f"grading this notebook took over {job.limits.job_timeout_s} s")
    result_file = folder.result
    if code != 0 or not result_file.exists():
        return _failed(job, Status.KERNEL_DIED,
                       f"the grader crashed on this notebook (exit {code}); see {log}")
    return JobResult(**json.loads(result_file.read_text(encoding="utf-8")))


def _run_interpreter(spec: Path, log: Path, timeout: float) -> int | None:
    """Run the job of ``spec`` in a new interpreter; its exit code, or None at the timeout."""
    with log.open("wb") as handle:
        process = subprocess.Popen([sys.executable, "-c", _JOB_MAIN, str(spec)],
                                   stdout=handle, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        try:
            return process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            return None


def _failed(job: Job, status: Status, reason: str) -> JobResult:
    return JobResult(job.student, job.assignment, Path(job.submission).stem, status.value,
                     detail=reason, notes=[reason])


def _row(result: JobResult) -> GradeRow:
    return GradeRow(result.student, result.assignment, result.score, result.max_score,
                    result.status, result.detail)


_SUBMISSION_STAMPS = ("timestamp.txt", "submission_secret.txt")


def _record_in_course(course: Course, jobs: list[Job], results,
                      stamps: dict[tuple[str, str], dict[str, bytes]]) -> None:
    """Executed notebooks, feedback and each submission's ``stamps`` into the course's folders
    (the grades are recorded in its gradebook by :func:`gradebook.record_grades`)."""
    for job in jobs:
        result = results[(job.student, job.assignment)]
        where = Path(job.student) / job.assignment / result.notebook
        executed = executed_path(job, result.notebook)
        html = JobFolder(Path(job.workdir)).feedback
        feedback = course.root / "feedback" / where.with_suffix(".html")
        copies = [(executed, course.root / "autograded" / where.with_suffix(".ipynb")),
                  (html, feedback)]
        for name, stamp in stamps[(job.student, job.assignment)].items():
            feedback.parent.mkdir(parents=True, exist_ok=True)
            (feedback.parent / name).write_bytes(stamp)
        for source, target in copies:
            if source.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, target)


def _submission_stamps(job: Job) -> dict[str, bytes]:
    """The stamps nbgrader left beside the submission (release-feedback matches by them)."""
    stamps = {}
    for name in _SUBMISSION_STAMPS:
        try:
            stamps[name] = read_untrusted(Path(job.submission).parent / name, limit=4096)
        except UntrustedFileError:
            continue
    return stamps


def _submitted_at(stamps: dict[str, bytes]) -> datetime | None:
    """The submission's time from its ``timestamp.txt``, parsed as nbgrader parses it."""
    from nbgrader.utils import parse_utc

    text = stamps.get("timestamp.txt", b"").decode("utf-8", "replace").strip()
    try:
        return parse_utc(text) if text else None
    except (ValueError, OverflowError):
        return None


def _collect_feedback(jobs: list[Job], results, feedback_dir: Path) -> None:
    for job in jobs:
        result = results[(job.student, job.assignment)]
        html = JobFolder(Path(job.workdir)).feedback
        if html.exists():
            target = feedback_dir / job.student / job.assignment / f"{result.notebook}.html"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(html, target)


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
