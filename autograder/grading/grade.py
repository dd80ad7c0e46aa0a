"""`racelab grade`: autograde a class in parallel, resumably, into grades, feedback and gradebook.

Each (student, assignment) is one :mod:`autograder.grading.job` run in its own process, with
its own folder under ``OUT/jobs``. A finished job leaves ``result.json``; a re-run after an
interruption skips every job whose result is there and whose inputs did not change, so no grade
is lost or duplicated. The parent then writes ``OUT/grades.csv``, ``OUT/feedback/`` and the
nbgrader gradebook ``OUT/gradebook.db`` from the results alone, and records the grades in the
class's gradebook (see :mod:`autograder.grading.gradebook`) when asked to.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
from concurrent.futures import Executor, ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass
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
        futures = {pool.submit(run_in_process, job): job for job in todo}
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


def run_in_process(job: Job) -> JobResult:
    """Run ``job`` in a fresh Python process, killing it (and its kernel) at the job timeout."""
    folder = JobFolder(Path(job.workdir))
    folder.workdir.parent.mkdir(parents=True, exist_ok=True)
    spec = folder.spec
    spec.write_text(job.to_json(), encoding="utf-8")
    log = folder.log
    with log.open("wb") as handle:
        process = subprocess.Popen([sys.executable, "-c", _JOB_MAIN, str(spec)],
                                   stdout=handle, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        try:
            process.wait(timeout=job.limits.job_timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            return _failed(job, Status.TIMEOUT,
                           f"grading this notebook took over {job.limits.job_timeout_s} s")
    result_file = folder.result
    if process.returncode != 0 or not result_file.exists():
        return _failed(job, Status.KERNEL_DIED,
                       f"the grader crashed on this notebook (exit {process.returncode}); "
                       f"see {log}")
    return JobResult(**json.loads(result_file.read_text(encoding="utf-8")))


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
