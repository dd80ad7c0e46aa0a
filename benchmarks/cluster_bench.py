"""Grading on a Dask cluster against local processes: the demo class, each way, on 2 workers.

Prints, measured in one run on this machine:
- ``--workers N`` locally (threads, a process per job): wall time;
- ``--cluster`` on a local cluster of N single-threaded workers already running: wall time;
- ``--cluster local:N`` (the cluster started and closed by the run): wall time;
- the cluster's overhead per job, ``(cluster - local) * N / jobs`` (each worker grades
  ``jobs / N`` notebooks one after another), and the cluster's start and stop;
- whether the three runs' ``grades.csv`` rows (student to status) are identical.

Usage: ``.venv/bin/python benchmarks/cluster_bench.py [--workers N] [--lessons 00_anatomy ...]
[--students correct racy empty] [--repeats R]`` (default: the whole demo class, every lesson).
"""

from __future__ import annotations

import argparse
import csv
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from autograder.course.course import make_course  # noqa: E402
from autograder.grading.cluster import ALLOWED_FAILURES  # noqa: E402
from autograder.grading.demo import make_submissions  # noqa: E402
from autograder.grading.grade import grade_submissions  # noqa: E402


def setup(work: Path, lessons: list[str], students: list[str]):
    """The course of ``lessons`` and the demo ``students``' submissions (all when empty)."""
    solutions = work / "solutions"
    solutions.mkdir(parents=True)
    for source in sorted((REPO / "solutions").glob("[0-9][0-9]_*.py")):
        if not lessons or source.stem in lessons:
            shutil.copy(source, solutions)
    course = make_course(solutions, work / "course")
    demo = work / "demo"
    for folder in sorted(p for p in (REPO / "demo").iterdir() if p.is_dir()):
        if not students or folder.name in students:
            shutil.copytree(folder, demo / folder.name)
    make_submissions(demo, course, work / "submitted")
    return course, work / "submitted"


def timed(course, submitted: Path, out: Path, **how) -> tuple[float, list[tuple], int]:
    """Seconds to grade the class into a fresh ``out``, its rows, and how many jobs ran."""
    if out.exists():
        shutil.rmtree(out)
    started = time.monotonic()
    grade_submissions(submitted, course, out, progress=False, **how)
    seconds = time.monotonic() - started
    with (out / "grades.csv").open(newline="") as handle:
        rows = [(r["student"], r["assignment"], r["score"], r["status"])
                for r in csv.DictReader(handle)]
    return seconds, rows, len(list(out.glob("jobs/*/*.done.json")))


def main() -> None:
    import dask
    from distributed import LocalCluster

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--lessons", nargs="*", default=[], help="lesson names (default: all)")
    parser.add_argument("--students", nargs="*", default=[], help="demo students (default: all)")
    parser.add_argument("--repeats", type=int, default=1, help="runs of each way (median)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="racelab-cluster-bench-"))
    course, submitted = setup(work, args.lessons, args.students)
    n = args.workers

    local, cluster, started, grades = [], [], [], set()
    with dask.config.set({ALLOWED_FAILURES: 0}):
        running = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                               memory_limit=0, dashboard_address=":0")
    try:
        for k in range(args.repeats):
            seconds, rows, jobs = timed(course, submitted, work / f"local-{k}", workers=n)
            local.append(seconds)
            grades.add(tuple(rows))
            seconds, rows, _ = timed(course, submitted, work / f"cluster-{k}",
                                     cluster=running.scheduler_address)
            cluster.append(seconds)
            grades.add(tuple(rows))
            seconds, rows, _ = timed(course, submitted, work / f"started-{k}",
                                     cluster=f"local:{n}")
            started.append(seconds)
            grades.add(tuple(rows))
    finally:
        running.close()

    local_s, cluster_s, started_s = (statistics.median(x) for x in (local, cluster, started))
    print(f"{jobs} notebooks ({len(list(submitted.iterdir()))} students), {n} workers, "
          f"median of {args.repeats}")
    print(f"  local --workers {n}             {local_s:7.1f} s")
    print(f"  --cluster (running, {n} workers) {cluster_s:7.1f} s")
    print(f"  --cluster local:{n}             {started_s:7.1f} s")
    print(f"  overhead per job              {(cluster_s - local_s) * n / jobs:7.2f} s")
    print(f"  cluster start and stop        {started_s - cluster_s:7.1f} s")
    print(f"  grades.csv                    {'identical' if len(grades) == 1 else 'DIFFER'}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
