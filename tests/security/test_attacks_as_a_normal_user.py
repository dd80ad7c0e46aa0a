"""The same attacks graded by a grader that is not root (``racelab grade`` as uid 65534).

When the suite itself runs as a normal user, every test in ``test_attacks.py`` already grades
as one; as root this file drops to ``nobody`` for one class of a few attacks, so both cases run.
A checkout ``nobody`` cannot reach (a clone under ``mktemp -d``, mode 0700) is shown to it at
its own path, in a mount namespace of the grader's own (:func:`shown_at_its_own_path`).
"""

import csv
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from autograder.course.answers import fill_answers
from autograder.course.course import make_course
from tests.conftest import REPO
from tests.security.attacks import ATTACKS, PROBES, SOLUTION
from tests.security.test_attacks import ADD, FIXTURES, HONEST_SCORE, LESSON, answer

pytestmark = pytest.mark.timeout(900)

NOBODY = 65534
CHOSEN = ("rebind_check_in_module", "walk_frames_with_getframe", "gc_walk_for_the_key",
          "os_exit", "forged_report_lines")


def readable_by_nobody(path: Path) -> bool:
    """Whether uid 65534 can reach ``path`` (every folder above it lets others through)."""
    for folder in [path, *path.parents]:
        if not os.stat(folder).st_mode & 0o001:
            return False
    return True


@pytest.fixture(scope="module")
def graded_as_nobody():
    if os.geteuid() != 0:
        pytest.skip("the suite already runs as a normal user: test_attacks.py grades as one")
    hidden = not (readable_by_nobody(Path(sys.prefix)) and readable_by_nobody(REPO))
    root = Path(tempfile.mkdtemp(prefix="racelab-nobody-", dir="/tmp"))
    top = hidden_ancestor(REPO)
    if hidden and not (Path(sys.prefix).is_relative_to(REPO) and shutil.which("unshare")
                       and top is not None and not root.is_relative_to(top)):
        shutil.rmtree(root)
        pytest.skip(f"uid {NOBODY} cannot read the checkout or its .venv here, and they "
                    "cannot be shown to it at their own path")
    try:
        yield grade_as_nobody(root, through_a_view=hidden)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def hidden_ancestor(path: Path) -> Path | None:
    """The highest folder above ``path`` that uid 65534 cannot pass through, if any."""
    closed = [folder for folder in path.parents if not os.stat(folder).st_mode & 0o001]
    return closed[-1] if closed else None


def shown_at_its_own_path(checkout: Path, stash: Path, command: list[str]) -> list[str]:
    """``command`` run in a mount namespace of its own in which ``checkout`` is reachable at its
    own path: the closed folder above it is covered by an empty tmpfs (mode 755) holding only
    the path down to a bind mount of the checkout. Its venv's scripts, whose first lines name
    the venv by that path, then run too."""
    top = hidden_ancestor(checkout)
    stash.mkdir(mode=0o755)
    script = ('mount --bind "$1" "$2" && mount -t tmpfs -o mode=755 tmpfs "$3" && '
              'mkdir -p "$1" && mount --bind "$2" "$1" && shift 3 && exec "$@"')
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh",
            str(checkout), str(stash), str(top), *command]


def grade_as_nobody(root: Path, *, through_a_view: bool = False) -> dict:
    root.chmod(0o755)
    solutions = root / "solutions"
    solutions.mkdir()
    shutil.copy(FIXTURES / f"{LESSON}.py", solutions)
    scratch = make_course(solutions, root / "scratch")
    release = scratch.release_notebook(scratch.lessons[0])
    submitted = root / "submitted"
    honest = submitted / "honest" / LESSON / f"{LESSON}.ipynb"
    fill_answers(release, {"ex_guarded_add": ADD, "ex_guarded_counter": SOLUTION}, honest)
    for name in CHOSEN:
        fill_answers(release, {"ex_guarded_add": ADD, "ex_guarded_counter": answer(
            ATTACKS[name][0])}, submitted / name / LESSON / f"{LESSON}.ipynb")
    secret = root / "root-only.txt"
    secret.write_text("root only")
    secret.chmod(0o600)
    probe = (PROBES.replace("PATHS", repr([str(secret), "/etc/shadow", str(honest)]))
             .replace("WRITES", repr([str(honest)])).replace("ADDRESSES", "[]"))
    fill_answers(release, {"ex_guarded_add": ADD, "ex_guarded_counter": answer(probe)},
                 submitted / "probe" / LESSON / f"{LESSON}.ipynb")
    for path in [root, *root.rglob("*")]:
        if path != secret:
            path.chmod(0o755 if path.is_dir() else 0o644)
    out = root / "out"
    out.mkdir()
    os.chown(out, NOBODY, NOBODY)
    before = honest.read_bytes()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(out),
           "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONDONTWRITEBYTECODE": "1"}
    command = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
               sys.executable, "-m", "autograder.cli", "grade", str(submitted), "--out", str(out),
               "--solutions", str(solutions), "--workers", "2", "--cell-timeout", "20",
               "--memory-mb", "1200"]
    if through_a_view:
        command = shown_at_its_own_path(REPO, root / "checkout", command)
    finished = subprocess.run(command, capture_output=True, text=True, timeout=800, env=env,
                              cwd=out)
    assert finished.returncode == 0, finished.stderr[-3000:]
    with (out / "grades.csv").open() as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    return {"rows": rows, "honest_before": before, "honest": honest}


def test_honest_student_keeps_full_marks_under_a_normal_user(graded_as_nobody):
    row = graded_as_nobody["rows"]["honest"]
    assert (row["status"], float(row["score"])) == ("graded", 5.0), row["detail"]


@pytest.mark.parametrize("name", (*CHOSEN, "probe"))
def test_attack_gains_nothing_under_a_normal_user(graded_as_nobody, name):
    row = graded_as_nobody["rows"][name]
    assert float(row["score"]) <= HONEST_SCORE, row["detail"]
    if name in ATTACKS:
        assert row["status"] in ATTACKS[name][1], row["detail"]


def test_other_students_files_are_untouched_under_a_normal_user(graded_as_nobody):
    assert graded_as_nobody["honest"].read_bytes() == graded_as_nobody["honest_before"]
