"""`racelab new-lesson`: the scaffold builds and grades as it says, and every lesson has its parts.

The scaffold is tried in a scratch copy of the repository (the ``autograder`` package, lessons,
demo class and tests), so nothing here writes into the repository itself.
"""

import csv
import os
import shutil
import subprocess
import sys

import nbformat
import pytest

from autograder.course.scaffold import FILES
from autograder.course.source import find_lessons
from autograder.grading import cells
from tests.conftest import REPO

pytestmark = pytest.mark.timeout(900)

PROBE = "99_probe"


def racelab(clone, *args, check=True):
    env = {**os.environ, "PYTHONPATH": str(clone)}
    return subprocess.run([sys.executable, "-m", "autograder.cli", *args], cwd=clone, env=env,
                          capture_output=True, text=True, check=check)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    clone = tmp_path_factory.mktemp("scratch") / "repo"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for part in ("autograder", "solutions", "demo", "tests", "notebooks"):
        shutil.copytree(REPO / part, clone / part, ignore=ignore)
    shutil.copy(REPO / "pyproject.toml", clone)
    made = racelab(clone, "new-lesson", PROBE)
    return {"clone": clone, "made": made}


def test_new_lesson_writes_every_part_of_a_lesson(scratch):
    clone = scratch["clone"]
    written = scratch["made"].stdout
    for target in FILES.values():
        path = target.format(lesson=PROBE, face="probe")
        assert (clone / path).is_file() and f"wrote {path}" in written
    assert f"grades ({len(FILES)} files)" in (REPO / "README.md").read_text(), (
        "the scaffold's file count is stated in the README's Add a lesson")


def test_new_lesson_refuses_a_taken_number_or_a_bad_name_and_writes_nothing(scratch):
    clone = scratch["clone"]
    before = sorted(p.name for p in (clone / "solutions").iterdir())
    for name in (PROBE, "99_other", "9_short", "99_Capital"):
        refused = racelab(clone, "new-lesson", name, check=False)
        assert refused.returncode == 2 and "racelab new-lesson:" in refused.stderr
    assert sorted(p.name for p in (clone / "solutions").iterdir()) == before


def test_the_scaffolded_lesson_builds_and_grades_as_the_scaffold_says(scratch, tmp_path):
    clone = scratch["clone"]
    racelab(clone, "build")
    notebook = nbformat.read(clone / "notebooks" / f"{PROBE}.ipynb", as_version=4)
    assert [cells.grade_id(c) for c in notebook.cells if cells.grade_id(c)] == [
        "ex_probe_tally", "test_probe_tally"]
    demo = tmp_path / "demo"
    for student in ("correct", "racy", "empty"):
        (demo / student).mkdir(parents=True)
        (demo / student / "ONLY").write_text(PROBE)
        if student != "empty":
            shutil.copy(clone / "demo" / student / f"{PROBE}.py", demo / student)
    out = tmp_path / "out"
    racelab(clone, "demo", "--demo-dir", str(demo), "--out", str(out), "--workers", "2")
    with open(out / "grades.csv", newline="") as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)
                if row["assignment"] == PROBE}
    assert {s: (r["status"], float(r["score"])) for s, r in rows.items()} == {
        "correct": ("graded", 2.0), "racy": ("graded", 0.0), "empty": ("graded", 0.0)}


def test_the_scaffolded_lessons_validity_tests_pass(scratch):
    clone = scratch["clone"]
    env = {**os.environ, "PYTHONPATH": str(clone)}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:randomly",
                          "-p", "no:cacheprovider", "tests/checks/test_probe.py"],
                         cwd=clone, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-3000:]
    assert " passed" in run.stdout and "failed" not in run.stdout


@pytest.mark.parametrize("lesson", find_lessons(REPO / "solutions"), ids=lambda lesson: lesson.name)
def test_every_lesson_has_the_parts_the_scaffold_makes(lesson):
    faces = {call["face"] for call in cells.split_test(lesson.path.read_text())[1]}
    assert len(faces) == 1, f"{lesson.name}: hidden tests call {faces}, not one checks package"
    face = faces.pop()
    for part in ("__init__.py", "settings.py", "grading.py"):
        assert (REPO / "autograder" / "checks" / face / part).is_file(), f"{face}/{part}"
    assert (REPO / "autograder" / "judges" / f"{face}.py").is_file(), f"judges/{face}.py"
    assert (REPO / "tests" / "checks" / f"test_{face}.py").is_file()
    for student in ("correct", "racy"):
        assert (REPO / "demo" / student / f"{lesson.name}.py").is_file(), f"{student}"
