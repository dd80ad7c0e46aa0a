"""`racelab validate`: the grader's own verdict on one notebook, for students and CI.

It runs exactly the grading job (sandboxed kernel, hidden tests restored from the gradebook,
answer cells that raise or hang scoring 0) and prints each test's points and the grader's
notes. The exit code is 1 unless every test passes.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from autograder.pipeline.course import make_course
from autograder.pipeline.job import Job, Limits, run_job


def validate_notebook(notebook: Path, solutions: Path, *, sandbox: bool = True) -> int:
    """Grade ``notebook`` (named after its lesson) and print the verdict; returns the exit code."""
    lesson_name = notebook.stem
    if not (solutions / f"{lesson_name}.py").exists():
        print(f"racelab validate: {notebook.name} is not a lesson of this course "
              f"(no {solutions / (lesson_name + '.py')})")
        return 2
    with tempfile.TemporaryDirectory(prefix="racelab-validate-") as tmp:
        course = make_course(solutions, Path(tmp) / "course", only=lesson_name)
        lesson = course.lessons[0]
        job = Job("validate", lesson_name, str(notebook.resolve()),
                  str(course.release_notebook(lesson)), str(course.root),
                  str(Path(tmp) / "job"), Limits(sandbox=sandbox))
        result = run_job(job)
    for gid, (score, points, reason) in result.cells.items():
        mark = "PASS" if score == points else "FAIL"
        print(f"{mark}  {gid}  {score:g}/{points:g}  {reason if mark == 'FAIL' else ''}".rstrip())
    for note in result.notes:
        print(f"note: {note}")
    print(f"{result.status}: {result.score:g}/{result.max_score:g}")
    ok = result.status == "graded" and result.score == result.max_score
    return 0 if ok else 1
