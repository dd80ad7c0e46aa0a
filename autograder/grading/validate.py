"""`racelab validate`: the grader's own verdict on one notebook, for students and CI.

It runs exactly the grading job (sandboxed runner, hidden tests restored from the gradebook,
answer cells that raise or hang scoring 0) on one notebook and returns a :class:`Verdict`: each
test's points, and for a failing test the check's explanation and the interleaving figure it
displayed, read from the notebook the grader executed (never test code, so hidden tests stay
hidden). ``racelab validate`` prints it; JupyterLab's Validate button shows it
(:mod:`autograder.lab`). The exit code is 1 unless every test passes.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat

from autograder.course.course import lesson_course
from autograder.grading.cells import exercise_titles, preload
from autograder.grading.execute import ReadyRunner, RunLimits, start_runner
from autograder.grading.feedback import error_text
from autograder.grading.job import executed_path, run_job
from autograder.grading.spec import Job, Limits, Status

STUDENT = "validate"
"""The student id the verdict's grading job runs under (as in ``racelab validate``)."""

NOT_ANSWERED = ("not answered yet: replace `raise NotImplementedError()` in the answer cell "
                "with your answer")
"""What every verdict says about an exercise whose answer cell is still the placeholder."""

VALIDATE_LIMIT_S = 600
"""Wall time of one whole validation: every run of the notebook stops well before it."""


@dataclass
class CellVerdict:
    """One test cell's outcome.

    Attributes:
        grade_id: The test cell's grade_id.
        score: Points earned.
        points: Points available.
        reason: The grader's reason (``passed``, ``failed``, or why an answer scored 0).
        explanation: The error the check raised (``AssertionError: ...``), when it raised.
        figures: PNG images (base64) the test cell displayed, e.g. the failing interleaving.
        title: The exercise's title in the notebook (its heading), or "".
    """

    grade_id: str
    score: float
    points: float
    reason: str
    explanation: str = ""
    figures: list[str] = field(default_factory=list)
    title: str = ""

    @property
    def passed(self) -> bool:
        """True when the test earned all its points."""
        return self.score == self.points

    @property
    def name(self) -> str:
        """How the student knows the exercise: its title, else its test's grade id."""
        return self.title or self.grade_id

    def why(self) -> str:
        """The one explanation of a failure, worded once for every place that shows it."""
        text = self.explanation or self.reason
        if "NotImplementedError" in text:
            return NOT_ANSWERED
        return text


@dataclass
class Verdict:
    """The grader's verdict on one notebook.

    Attributes:
        lesson: The lesson (assignment) name.
        status: The grading job's status (graded, timeout, kernel-died, tampered, ...).
        score: Points earned.
        max_score: Points available.
        ok: True exactly when ``racelab validate`` exits 0: graded, and every point earned.
        tests: Per test cell, in notebook order.
        notes: What the grader tells the student.
    """

    lesson: str
    status: str
    score: float
    max_score: float
    ok: bool
    tests: list[CellVerdict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def score_line(self) -> str:
        """``Score 5/8``, with the grading status when the notebook was not simply graded."""
        line = f"Score {self.score:g}/{self.max_score:g}"
        return line if self.status == Status.GRADED else f"{line} ({self.status})"

    def to_json(self) -> str:
        """Serialise the verdict."""
        return json.dumps(asdict(self), indent=1)

    @classmethod
    def from_json(cls, text: str) -> Verdict:
        """Parse a verdict written by :meth:`to_json`."""
        data = json.loads(text)
        data["tests"] = [CellVerdict(**t) for t in data.get("tests", [])]
        return cls(**data)


class NotALesson(ValueError):
    """The notebook is not named after a lesson of the course (``NN_name.ipynb``)."""


def ready_runner(solutions: Path, lesson_name: str, scratch: Path, *,
                 sandbox: bool = True) -> ReadyRunner:
    """A runner for the next validation of ``lesson_name``, started now: its sandbox made and
    the lesson's imports (TensorFlow's above all) done before the notebook comes.

    Args:
        solutions: The lesson sources.
        lesson_name: The lesson, e.g. ``01_warmup``.
        scratch: A folder that lasts as long as the runner (its sandbox's ``/etc``).
        sandbox: As :func:`grade_notebook`'s.
    """
    course = lesson_course(solutions, lesson_name, scratch / "course")
    release = nbformat.read(course.release_notebook(course.lessons[0]), as_version=4)
    return start_runner(preload(release), RunLimits(sandbox=sandbox), scratch)


def grade_notebook(notebook: Path, solutions: Path, *, sandbox: bool = True,
                   ready: ReadyRunner | None = None) -> Verdict:
    """Grade ``notebook`` exactly as ``racelab validate`` does and return the verdict.

    Args:
        notebook: A lesson notebook, named after its lesson (``01_warmup.ipynb``).
        solutions: The lesson sources (``solutions/``), which hold the hidden tests.
        sandbox: Run the notebook in bubblewrap, as the grader does.
        ready: A runner made ready for this lesson (:func:`ready_runner`); used for the first
            run if it fits, stopped either way.

    Raises:
        NotALesson: No lesson source matches the notebook's name.
        SourceError, BuildError: The lesson source could not be built into a course.
    """
    lesson_name = notebook.stem
    if not (solutions / f"{lesson_name}.py").exists():
        if ready is not None:
            ready.close()
        raise NotALesson(f"{notebook.name} is not a lesson of this course: Validate grades "
                         f"notebooks named after a lesson (no {lesson_name}.py in {solutions})")
    with tempfile.TemporaryDirectory(prefix="racelab-lab-validate-") as tmp:
        course = lesson_course(solutions, lesson_name, Path(tmp) / "course")
        lesson = course.lessons[0]
        titles = exercise_titles(nbformat.read(course.release_notebook(lesson), as_version=4))
        job = Job(STUDENT, lesson_name, str(notebook.resolve()),
                  str(course.release_notebook(lesson)), str(course.root),
                  str(Path(tmp) / "job"), Limits(sandbox=sandbox, job_timeout_s=VALIDATE_LIMIT_S),
                  feedback=False)
        result = run_job(job, ready)
        executed = executed_path(job, result.notebook)
        outputs = _test_outputs(executed)
    tests = []
    for gid, (score, points, reason) in result.cells.items():
        explanation, figures = outputs.get(gid, ("", []))
        tests.append(CellVerdict(gid, float(score), float(points), reason,
                                 explanation if score != points else "",
                                 figures if score != points else [], titles.get(gid, "")))
    ok = result.status == Status.GRADED and result.score == result.max_score
    return Verdict(lesson_name, result.status, float(result.score), float(result.max_score), ok,
                   tests, list(result.notes))


def _test_outputs(executed: Path) -> dict[str, tuple[str, list[str]]]:
    """Per graded cell of the executed notebook: its last error as text, and its PNG figures."""
    if not executed.exists():  # grading stopped before the executed notebook was written
        return {}
    notebook = nbformat.read(executed, as_version=4)
    found = {}
    for cell in notebook.cells:
        meta = cell.metadata.get("nbgrader", {})
        if not meta.get("grade") or cell.cell_type != "code":
            continue
        explanation = error_text(cell)
        figures = [o["data"]["image/png"] for o in cell.get("outputs", [])
                   if o.get("output_type") in ("display_data", "execute_result")
                   and "image/png" in o.get("data", {})]
        found[meta["grade_id"]] = (explanation, figures)
    return found


def validate_notebook(notebook: Path, solutions: Path, *, sandbox: bool = True) -> int:
    """Grade ``notebook``, print the verdict for a terminal and return the exit code."""
    try:
        verdict = grade_notebook(notebook, solutions, sandbox=sandbox)
    except NotALesson as exc:
        print(f"racelab validate: {exc}")
        return 2
    for test in verdict.tests:
        mark = "PASS" if test.passed else "FAIL"
        print(f"{mark}  {test.grade_id}  {test.score:g}/{test.points:g}  {test.title}".rstrip())
        if not test.passed:
            print(f"      {test.why()}")
    for note in verdict.notes:
        print(f"note: {note}")
    print(f"{verdict.status}: {verdict.score:g}/{verdict.max_score:g}")
    return 0 if verdict.ok else 1
