"""Lesson budgets: each lesson's run time top to bottom and its hidden tests' time.

Runs every instructor notebook (``solutions/NN_name.py``, answers filled in) in a fresh kernel,
as a student runs it, with each test cell split at ``### BEGIN HIDDEN TESTS`` so the hidden part
is timed on its own. Prints one row per lesson against the budgets of ../shared/LESSONS.md
(2 minutes top to bottom, 30 s of hidden tests on 2 cores) and the machine's load, since a shared
machine stretches every figure.

    .venv/bin/python benchmarks/lesson_bench.py [--only NN_name ...]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import nbclient
import nbformat

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from autograder.course.source import find_lessons, read_lesson  # noqa: E402

HIDDEN = "### BEGIN HIDDEN TESTS"
RUN_BUDGET_S = 120.0
HIDDEN_BUDGET_S = 30.0


def split_hidden_tests(notebook: nbformat.NotebookNode) -> set[int]:
    """Split each test cell in two (visible part, hidden part); return the hidden cells' indices."""
    cells, hidden = [], set()
    for cell in notebook.cells:
        if cell.cell_type == "code" and HIDDEN in cell.source:
            visible, rest = cell.source.split(HIDDEN, 1)
            cells.append(nbformat.v4.new_code_cell(visible))
            hidden.add(len(cells))
            cells.append(nbformat.v4.new_code_cell(HIDDEN + rest))
        else:
            cells.append(cell)
    notebook.cells = cells
    return hidden


def run_lesson(notebook: nbformat.NotebookNode, workdir: str) -> tuple[float, float, list[str]]:
    """Execute ``notebook``; return (seconds in all, seconds in hidden tests, errors)."""
    hidden = split_hidden_tests(notebook)
    timings: dict[int, float] = {}
    client = nbclient.NotebookClient(notebook, timeout=600, allow_errors=True,
                                     resources={"metadata": {"path": workdir}})
    started = time.monotonic()
    with client.setup_kernel():
        for index, cell in enumerate(notebook.cells):
            began = time.monotonic()
            client.execute_cell(cell, index)
            timings[index] = time.monotonic() - began
    total = time.monotonic() - started
    errors = [f"cell {i}: {o['ename']}: {o['evalue']}" for i, cell in enumerate(notebook.cells)
              for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    return total, sum(timings[i] for i in hidden), errors


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="lesson names, e.g. 03_variables")
    args = parser.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    lessons = [lesson for lesson in find_lessons(REPO / "solutions")
               if not args.only or lesson.name in args.only]
    print(f"{'lesson':16s} {'run (s)':>8s} {'hidden tests (s)':>17s} {'load':>5s}  within budget")
    failed = False
    for lesson in lessons:
        with tempfile.TemporaryDirectory() as workdir:
            total, hidden, errors = run_lesson(read_lesson(lesson), workdir)
        load = os.getloadavg()[0]
        verdict = ("yes" if total <= RUN_BUDGET_S and hidden <= HIDDEN_BUDGET_S else
                   f"no (budgets {RUN_BUDGET_S:.0f} s / {HIDDEN_BUDGET_S:.0f} s)")
        print(f"{lesson.name:16s} {total:8.1f} {hidden:17.1f} {load:5.1f}  {verdict}")
        for error in errors:
            failed = True
            print(f"  error: {error}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
