"""Every lesson's hidden checks, run many times on the demo's correct and racy answers, must
give the same grade every time, also while other processes keep every core busy.

For each lesson, the demo class's ``correct`` and ``racy`` answers (``demo/``; an answer cell a
demo student leaves out keeps the solution's) are graded ``--runs`` times each (default 20) by
the lesson's hidden tests in one child process, as ``make test``'s mutation subset grades
mutants (``tests/benchmarks/hidden_checks.py``: the grader's plan, hidden calls and judge).
``--busy N`` (default: one per core) starts N processes that spin on the CPU for the whole
run, stopped by PID at the end. A run's grade is the set of tests it lost; an answer is stable
when all its runs have one grade. The failure messages are counted too: where the race is
inside TensorFlow and runs on real threads, which worker raised which error first differs from
run to run, and the message says so. It prints one row per lesson; with ``--json`` the last
line is ``{"lessons": {"00_anatomy": {"correct": {"runs": R, "grades": G, "messages": M,
"lost": [...]}, "racy": {...}}, ...}, "busy": N, "wall_s": s}``. Exit code 1 when an answer's
grade is not stable, a correct answer lost a test, or a racy one lost none.

Usage: ``.venv/bin/python benchmarks/seeded_runs.py [--runs 20] [--busy 2] [--lessons 00,07]
[--json]``
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from autograder.course.source import find_lessons  # noqa: E402
from autograder.grading.demo import demo_answers  # noqa: E402
from tests.benchmarks.hidden_checks import PASSED, grade_in_child  # noqa: E402

ANSWERS = ("correct", "racy")
_SPIN = "while True: pass"


def verdict(outcome: object) -> tuple[str, str]:
    """One run's verdict: (the grade: the tests it lost; the message: each lost test's failure,
    memory addresses masked)."""
    if not isinstance(outcome, dict):
        return str(outcome), str(outcome)
    lost = {test: re.sub(r"0x[0-9a-f]+", "0x...", result)
            for test, result in sorted(outcome.items()) if result != PASSED}
    return json.dumps(sorted(lost)), json.dumps(lost)


def lesson_row(lesson: str, runs: int) -> dict[str, dict]:
    """Grade each demo answer of ``lesson`` ``runs`` times: its distinct grades and messages."""
    answers = {kind: demo_answers(REPO / "demo", kind, lesson).answers for kind in ANSWERS}
    outcomes = grade_in_child(lesson, [answers[kind] for kind in ANSWERS for _ in range(runs)])
    row = {}
    for index, kind in enumerate(ANSWERS):
        verdicts = [verdict(o) for o in outcomes[index * runs:(index + 1) * runs]]
        grades = sorted({grade for grade, _ in verdicts})
        lost = sorted({t for g in grades if g.startswith("[") for t in json.loads(g)})
        row[kind] = {"runs": runs, "grades": len(grades),
                     "messages": len({message for _, message in verdicts}), "lost": lost,
                     "distinct": grades}
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--busy", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--lessons", default="", help="comma-separated lesson numbers")
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    args = parser.parse_args(argv)
    chosen = [n for n in args.lessons.split(",") if n]
    lessons = [x.name for x in find_lessons(REPO / "solutions")
               if not chosen or any(x.name.startswith(f"{n}_") or x.name == n for n in chosen)]
    spinners = [subprocess.Popen([sys.executable, "-c", _SPIN]) for _ in range(args.busy)]
    started = time.monotonic()
    table: dict[str, dict] = {}
    try:
        for lesson in lessons:
            table[lesson] = row = lesson_row(lesson, args.runs)
            print(f"{lesson}: {args.runs} runs each; correct: {row['correct']['grades']} "
                  f"grade(s), lost {row['correct']['lost'] or 'nothing'}; racy: "
                  f"{row['racy']['grades']} grade(s), {row['racy']['messages']} message(s), "
                  f"lost {row['racy']['lost']}", flush=True)
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    wall = time.monotonic() - started
    bad = [lesson for lesson, row in table.items()
           if row["correct"]["grades"] != 1 or row["correct"]["lost"]
           or row["racy"]["grades"] != 1 or not row["racy"]["lost"]]
    print(f"{len(lessons)} lessons, {args.runs} runs of each answer beside {args.busy} busy "
          f"process(es), {wall:.0f} s; unstable or wrong: {bad or 'none'}")
    for lesson in bad:
        for kind in ANSWERS:
            for seen in table[lesson][kind]["distinct"]:
                print(f"  {lesson} {kind}: {seen[:400]}")
    if args.json:
        print(json.dumps({"lessons": {lesson: {kind: {k: v for k, v in row[kind].items()
                                                      if k != "distinct"} for kind in ANSWERS}
                                      for lesson, row in table.items()},
                          "busy": args.busy, "wall_s": round(wall, 1)}))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
