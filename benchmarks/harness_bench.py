"""Benchmark the race-detection engine on the reference subjects.

For every subject (racy and correct twins from ``tests/harness/subjects.py``) it runs the
subject's engine under several seeds and prints one table: schedules (or stress trials) to a
verdict, seconds to a verdict, and the verdicts seen. Racy subjects stop at the first failure,
so their schedule count is "schedules to detection"; correct subjects run the full default
search.

    .venv/bin/python benchmarks/harness_bench.py [--seeds N] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from harness.subjects import SUBJECTS, Subject  # noqa: E402


def measure(subject: Subject, seeds: int) -> dict[str, object]:
    """Run one subject under ``seeds`` seeds; return its table row."""
    if subject.prepare is not None:
        subject.prepare()
    counts, seconds, verdicts, covered, bounded = [], [], Counter(), 0, 0
    for seed in range(seeds):
        start = time.perf_counter()
        result = subject.run(seed)
        seconds.append(time.perf_counter() - start)
        counts.append(result.schedules_run)
        verdicts[result.verdict] += 1
        covered += result.covered
        bounded += bool(getattr(result, "bound", ""))
    wanted = subject.accepted if subject.racy else ("pass",)
    return {
        "subject": subject.label,
        "engine": subject.engine,
        "runs": f"{statistics.median(counts):g} / {max(counts)}",
        "median_s": f"{statistics.median(seconds):.3f}",
        "max_s": f"{max(seconds):.3f}",
        "verdicts": ", ".join(f"{v} x{n}" for v, n in verdicts.most_common()),
        "covered": f"{covered}/{seeds}" if subject.engine == "explore" else "-",
        "bound": f"{bounded}/{seeds}" if subject.engine == "explore" else "-",
        "ok": "ok" if sum(verdicts[w] for w in wanted) == seeds else f"EXPECTED {wanted}",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5, help="seeds per subject (default 5)")
    parser.add_argument("--only", nargs="*", default=None, help="subject names to run")
    options = parser.parse_args(argv)

    print(f"harness benchmark: Python {platform.python_version()}, {os.cpu_count()} CPUs, "
          f"{options.seeds} seeds per subject")
    print("runs = schedules (explore) or trials (stress) to the verdict: median / max; "
          "covered = seeds whose search tried every schedule; bound = passing seeds whose "
          "search reached its stated bound (every schedule with at most one preemption)\n")
    columns = ("subject", "engine", "runs", "median_s", "max_s", "verdicts", "covered", "bound",
               "ok")
    widths = (38, 8, 11, 9, 8, 14, 8, 6, 4)
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    failures = 0
    started = time.perf_counter()
    for subject in SUBJECTS:
        if options.only and subject.name not in options.only:
            continue
        row = measure(subject, options.seeds)
        failures += row["ok"] != "ok"
        print("  ".join(str(row[c]).ljust(w) for c, w in zip(columns, widths, strict=True)),
              flush=True)
    print(f"\n{time.perf_counter() - started:.1f} s in all; "
          f"{failures} subject(s) with an unexpected verdict")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
