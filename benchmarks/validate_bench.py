"""Validate's wall time per lesson, through the same code path as JupyterLab's Validate button.

For every lesson, the demo class's ``correct`` and ``racy`` answers are filled into the released
notebook and validated by :meth:`autograder.lab.server.RaceLabValidate.validate`, the button's
own handler: a first press (cold: no verdict process was ready), then ``--repeats`` presses
(default 3), each ``--pause`` seconds (default 10, a student reading the verdict) after the
previous one, which the process made ready after each press serves. It prints each lesson's
cold seconds and median seconds for each answer; with ``--json`` the last line is
``{"median_s": {"00_anatomy": s, ...}, "cold_s": {...}}``, the slower of the two answers per
lesson.

Usage: ``.venv/bin/python benchmarks/validate_bench.py [--repeats R] [--pause S]
[--lessons 00,07] [--json]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from autograder.course.answers import fill_answers  # noqa: E402
from autograder.course.course import make_course  # noqa: E402
from autograder.grading.demo import demo_answers  # noqa: E402
from autograder.lab.server import RaceLabValidate  # noqa: E402

ANSWERS = ("correct", "racy")


async def presses(notebook: Path, repeats: int, pause: float) -> tuple[float, list[float], dict]:
    """Seconds of a cold press of Validate on ``notebook`` and of ``repeats`` presses after
    it, ``pause`` seconds apart, and the last answer the button got."""
    button = RaceLabValidate(solutions=str(REPO / "solutions"))
    seconds = []
    for _ in range(repeats + 1):
        started = time.monotonic()
        answer = await button.validate(notebook)
        seconds.append(time.monotonic() - started)
        await asyncio.sleep(pause)
    button.keep_ready = False
    await button._make_ready("")  # ends the process made ready after the last press
    return seconds[0], seconds[1:], answer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pause", type=float, default=10.0)
    parser.add_argument("--lessons", default="", help="comma-separated lesson numbers")
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    args = parser.parse_args(argv)
    chosen = [n for n in args.lessons.split(",") if n]
    with tempfile.TemporaryDirectory(prefix="validate-bench-") as tmp:
        root = Path(tmp)
        course = make_course(REPO / "solutions", root / "course")
        medians: dict[str, float] = {}
        colds: dict[str, float] = {}
        for lesson in course.lessons:
            if chosen and lesson.name[:2] not in chosen:
                continue
            per_answer, cold_per_answer = {}, {}
            for student in ANSWERS:
                notebook = root / student / f"{lesson.name}.ipynb"
                fill_answers(course.release_notebook(lesson),
                             demo_answers(REPO / "demo", student, lesson.name), notebook)
                cold, runs, answer = asyncio.run(presses(notebook, args.repeats, args.pause))
                per_answer[student] = statistics.median(runs)
                cold_per_answer[student] = cold
                verdict = "passes" if answer == {"success": True, "value": {}} else "fails"
                print(f"{lesson.name:14} {student:8} {verdict:6}  cold {cold:5.1f} s  "
                      f"median {per_answer[student]:5.1f} s  "
                      f"runs {', '.join(f'{s:.1f}' for s in runs)}", flush=True)
            medians[lesson.name] = round(max(per_answer.values()), 2)
            colds[lesson.name] = round(max(cold_per_answer.values()), 2)
    if args.json:
        print(json.dumps({"median_s": medians, "cold_s": colds}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
