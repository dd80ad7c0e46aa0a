"""Validate's wall time per lesson, through the same code path as JupyterLab's Validate button.

For every lesson, the demo class's ``correct`` and ``racy`` answers are filled into the released
notebook and validated ``--repeats`` times each (default 3) by the command the lab's button
runs (``python -m autograder.lab.verdict NOTEBOOK --solutions solutions --out FILE``, in a
child process, as :class:`autograder.lab.server.RaceLabValidate` starts it). It prints each
lesson's median seconds for each answer; with ``--json`` the last line is
``{"median_s": {"00_anatomy": s, ...}}``, the slower of the two medians per lesson.

Usage: ``.venv/bin/python benchmarks/validate_bench.py [--repeats R] [--lessons 00,07] [--json]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from autograder.course.answers import fill_answers  # noqa: E402
from autograder.course.course import make_course  # noqa: E402
from autograder.grading.demo import demo_answers  # noqa: E402

ANSWERS = ("correct", "racy")


def validate_seconds(notebook: Path, out: Path) -> tuple[float, dict]:
    """Seconds for one press of Validate on ``notebook``, and the verdict it gave."""
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "autograder.lab.verdict", str(notebook),
                    "--solutions", str(REPO / "solutions"), "--out", str(out)],
                   check=False, capture_output=True, cwd=out.parent)
    seconds = time.monotonic() - started
    return seconds, json.loads(out.read_text(encoding="utf-8"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--lessons", default="", help="comma-separated lesson numbers")
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    args = parser.parse_args(argv)
    chosen = [n for n in args.lessons.split(",") if n]
    with tempfile.TemporaryDirectory(prefix="validate-bench-") as tmp:
        root = Path(tmp)
        course = make_course(REPO / "solutions", root / "course")
        medians: dict[str, float] = {}
        for lesson in course.lessons:
            if chosen and lesson.name[:2] not in chosen:
                continue
            per_answer = {}
            for student in ANSWERS:
                notebook = root / student / f"{lesson.name}.ipynb"
                fill_answers(course.release_notebook(lesson),
                             demo_answers(REPO / "demo", student, lesson.name), notebook)
                runs = []
                for repeat in range(args.repeats):
                    seconds, verdict = validate_seconds(
                        notebook, root / student / f"verdict-{lesson.name}-{repeat}.json")
                    runs.append(seconds)
                per_answer[student] = statistics.median(runs)
                print(f"{lesson.name:14} {student:8} {verdict.get('score', 0):g}/"
                      f"{verdict.get('max_score', 0):g}  median {per_answer[student]:5.1f} s  "
                      f"runs {', '.join(f'{s:.1f}' for s in runs)}", flush=True)
            medians[lesson.name] = round(max(per_answer.values()), 2)
    if args.json:
        print(json.dumps({"median_s": medians}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
