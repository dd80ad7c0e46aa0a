"""Grading pipeline figures: racelab vs plain nbgrader, 1 vs N workers, repeatability.

Prints, measured in one run on this machine:
- one whole-course submission (the demo's ``correct`` student): ``racelab`` job time against
  plain ``nbgrader autograde`` of the same notebooks, as a ratio;
- the demo class with 1 worker and with N workers: wall time, speed-up, peak kernel memory;
- the demo class graded R times: whether ``grades.csv`` is identical every time.

Usage: ``.venv/bin/python benchmarks/grading_bench.py [--repeats R] [--workers N]``
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from autograder.course.course import make_course  # noqa: E402
from autograder.grading.demo import make_submissions  # noqa: E402
from autograder.grading.grade import grade_submissions  # noqa: E402
from autograder.grading.spec import JobResult  # noqa: E402


def plain_nbgrader(course_root: Path, submitted: Path, student: str) -> float:
    """Seconds for ``nbgrader autograde`` of one student's every assignment, as documented."""
    course = Path(tempfile.mkdtemp(prefix="plain-")) / "course"
    shutil.copytree(course_root, course)
    shutil.rmtree(course / "submitted", ignore_errors=True)
    shutil.copytree(submitted / student, course / "submitted" / student)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    started = time.monotonic()
    for assignment in sorted(p.name for p in (course / "submitted" / student).iterdir()):
        subprocess.run([str(Path(sys.executable).parent / "nbgrader"), "autograde", assignment,
                        "--student", student, "--create", "--force"], cwd=course, env=env,
                       check=False, capture_output=True)
    return time.monotonic() - started


def grade_once(course, submitted: Path, out: Path, workers: int) -> tuple[float, list]:
    if out.exists():
        shutil.rmtree(out)
    started = time.monotonic()
    rows = grade_submissions(submitted, course, out, workers=workers, progress=False)
    return time.monotonic() - started, rows


def peak_memory(out: Path) -> float:
    import json

    peaks = []
    for done in out.glob("jobs/*/*.done.json"):
        peaks.append(JobResult(**json.loads(done.read_text())["result"]).peak_rss_mb)
    return max(peaks, default=0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--class-only", action="store_true",
                        help="skip the comparison with plain nbgrader")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="racelab-bench-"))
    course = make_course(REPO / "solutions", work / "course")
    submitted = work / "submitted"
    make_submissions(REPO / "demo", course, submitted)
    one = work / "one"
    (one / "correct").parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(submitted / "correct", one / "correct")

    if not args.class_only:
        racelab_s, _ = grade_once(course, one, work / "out-one", 1)
        plain_s = plain_nbgrader(course.root, submitted, "correct")
        print("one whole-course submission (student 'correct', all lessons)")
        print(f"  racelab grade, 1 worker   {racelab_s:7.1f} s")
        print(f"  plain nbgrader autograde  {plain_s:7.1f} s")
        print(f"  ratio racelab/plain       {racelab_s / plain_s:7.2f}")

    serial_s, _ = grade_once(course, submitted, work / "out-serial", 1)
    serial_peak = peak_memory(work / "out-serial")
    parallel_s, _ = grade_once(course, submitted, work / "out-parallel", args.workers)
    print(f"demo class ({sum(1 for p in submitted.iterdir())} students)")
    print(f"  1 worker                  {serial_s:7.1f} s, peak kernel {serial_peak:.0f} MB")
    print(f"  {args.workers} workers                 {parallel_s:7.1f} s, peak kernel "
          f"{peak_memory(work / 'out-parallel'):.0f} MB")
    print(f"  speed-up                  {serial_s / parallel_s:7.2f}x")

    outs = [work / "out-serial", work / "out-parallel"]  # the two runs above count as repeats
    for k in range(max(0, args.repeats - len(outs))):
        grade_once(course, submitted, work / f"out-repeat-{k}", args.workers)
        outs.append(work / f"out-repeat-{k}")
    digests = {hashlib.sha256((out / "grades.csv").read_bytes()).hexdigest() for out in outs}
    verdict = "identical" if len(digests) == 1 else f"{len(digests)} different"
    print(f"demo class graded {len(outs)} times (1 and {args.workers} workers): "
          f"{verdict} grades.csv")
    first = (outs[0] / "grades.csv").read_text().splitlines()
    for out in outs[1:]:
        for row in sorted(set((out / "grades.csv").read_text().splitlines()) ^ set(first)):
            print(f"  differs ({out.name}): {row}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
