"""What one grading job is: its inputs and limits (:class:`Job`) and result (:class:`JobResult`).

Both are plain JSON-serialisable records, so a job can be written to a file, run in another
process (``python -m autograder.grading.job JOB_JSON``) or on another machine, and its result
read back by the class grader (:mod:`autograder.grading.grade`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path


class Status(StrEnum):
    """A graded notebook's status, as ``grades.csv``, the README and the tests name it.

    When a notebook has several findings, the first of :data:`PRECEDENCE` is its status.
    """

    GRADED = "graded"
    TIMEOUT = "timeout"
    KERNEL_DIED = "kernel-died"
    INVALID_NOTEBOOK = "invalid-notebook"
    TAMPERED = "tampered"
    MISSING_CELLS = "missing-cells"
    NOT_SUBMITTED = "not-submitted"
    WORKER_LOST = "worker-lost"
    GRADER_ERROR = "grader-error"


PRECEDENCE = (Status.NOT_SUBMITTED, Status.GRADER_ERROR, Status.WORKER_LOST,
              Status.INVALID_NOTEBOOK, Status.TAMPERED,
              Status.KERNEL_DIED, Status.TIMEOUT, Status.MISSING_CELLS, Status.GRADED)
"""Statuses, most important first."""


@dataclass(frozen=True)
class JobFolder:
    """The files of one grading job: its folder, and the records the class grader keeps beside
    it (``<workdir>.job.json`` and so on). Every module names them through this type.

    Attributes:
        workdir: The job's own folder (``OUT/jobs/<student>/<assignment>``).
    """

    workdir: Path

    @property
    def result(self) -> Path:
        """The job's :class:`JobResult`, written last and atomically."""
        return self.workdir / "result.json"

    @property
    def feedback(self) -> Path:
        """nbgrader's feedback page for the student."""
        return self.workdir / "feedback.html"

    @property
    def runner_log(self) -> Path:
        """The runner's standard error when grading stopped (for the grader's log only)."""
        return self.workdir / "runner.log"

    @property
    def spec(self) -> Path:
        """The :class:`Job` as JSON, what the job's process reads."""
        return self.workdir.parent / f"{self.workdir.name}.job.json"

    @property
    def log(self) -> Path:
        """The job process's own output."""
        return self.workdir.parent / f"{self.workdir.name}.log"

    @property
    def done(self) -> Path:
        """The finished job's result and fingerprint (what a resumed run skips)."""
        return self.workdir.parent / f"{self.workdir.name}.done.json"

    def returned(self) -> list[Path]:
        """The job folder's own records a cluster worker sends back to the head."""
        return [self.result, self.feedback, self.runner_log]


@dataclass(frozen=True)
class Limits:
    """What one grading kernel may use.

    Attributes:
        cell_timeout_s: Wall time of one cell before the kernel is interrupted.
        memory_mb: Memory of the whole sandbox (every process and its ``/tmp``) before it is
            stopped.
        job_timeout_s: Wall time of the whole job before it is killed (by the caller); one run
            of the notebook is stopped a little before it.
        sandbox: Run the notebook in bubblewrap (refuse to grade when it is missing).
        max_processes: Processes the notebook may run at once.
    """

    cell_timeout_s: int = 120
    memory_mb: int = 3000
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
        feedback: Render nbgrader's feedback HTML and record the gradebook (Validate, which
            reads only the executed notebook, skips both).
    """

    student: str
    assignment: str
    submission: str
    release: str
    course: str
    workdir: str
    limits: Limits = field(default_factory=Limits)
    feedback: bool = True

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
        status: A :class:`Status` value.
        score: Points earned.
        max_score: Points available.
        cells: Per test cell: ``{grade_id: [score, max_score, reason]}``.
        detail: One line for the grades table.
        notes: What the grader tells the student (also put into the feedback).
        seconds: Wall time of the job.
        peak_rss_mb: Peak memory of the grading sandbox (processes plus ``/tmp``).
        signatures: Per test that scored less than its points: its failure signature (kind,
            the answer's steps that broke it, a hash; see :mod:`autograder.grading.signatures`).
            Information for the class report, never a score; empty in results written before
            signatures existed.
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
    signatures: dict[str, dict] = field(default_factory=dict)


def set_status(result: JobResult, status: Status) -> None:
    """Keep the more important of the result's status and ``status`` (see PRECEDENCE)."""
    if PRECEDENCE.index(Status(status)) < PRECEDENCE.index(Status(result.status)):
        result.status = Status(status).value
