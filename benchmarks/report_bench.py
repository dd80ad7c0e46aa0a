"""The race report's time for a class of N graded notebooks.

Grading 200 notebooks takes most of an hour on 2 cores, so the class is made from one already
graded (``racelab grade --out`` or ``racelab demo``'s output): its ``grades.csv`` rows and each
job's result are copied, student by student, under new names until the class holds
``--notebooks`` notebooks. Copies share their originals' failure signatures, so the clusters
hold more students than a real class's would; loading, clustering and rendering still handle
every notebook. Prints the notebooks, the clusters and the seconds :func:`write_report` took
(median of ``--repeats``).

Usage: ``.venv/bin/python benchmarks/report_bench.py GRADED_OUT [--notebooks 200] [--repeats 3]``
"""

from __future__ import annotations

import argparse
import csv
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from autograder.grading.report import write_report  # noqa: E402
from autograder.grading.spec import JobFolder  # noqa: E402


def grown_class(graded: Path, notebooks: int, out: Path) -> int:
    """Write a class of ``notebooks`` notebooks copied from ``graded`` into ``out``."""
    with (graded / "grades.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    if not rows:
        raise SystemExit(f"{graded}/grades.csv holds no graded notebook")
    written = []
    for number in range(notebooks):
        row = dict(rows[number % len(rows)])
        student = f"{row['student']}-{number // len(rows):03}"
        source = JobFolder(graded / "jobs" / row["student"] / row["assignment"])
        target = JobFolder(out / "jobs" / student / row["assignment"])
        target.done.parent.mkdir(parents=True, exist_ok=True)
        if source.done.exists():
            shutil.copyfile(source.done, target.done)
        row["student"] = student
        written.append(row)
    with (out / "grades.csv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(written)
    return len(written)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("graded", type=Path, help="a graded class's --out folder")
    parser.add_argument("--notebooks", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="racelab-report-bench-") as tmp:
        out = Path(tmp) / "out"
        count = grown_class(args.graded, args.notebooks, out)
        runs = [write_report(out) for _ in range(args.repeats)]
        print(f"{count} notebooks, {len(runs[0].clusters)} failure clusters: report written in "
              f"{statistics.median(r.seconds for r in runs):.2f} s (median of {args.repeats}; "
              f"{runs[0].html.stat().st_size / 1e6:.1f} MB page)")


if __name__ == "__main__":
    main()
