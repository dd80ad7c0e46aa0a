"""benchmarks/seeded_runs.py: repeated grading of the demo answers, beside busy processes."""

from __future__ import annotations

import importlib.util
import json
import sys

import pytest

from tests.conftest import REPO

_spec = importlib.util.spec_from_file_location("seeded_runs",
                                               REPO / "benchmarks" / "seeded_runs.py")
seeded_runs = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("seeded_runs", seeded_runs)
_spec.loader.exec_module(seeded_runs)


def test_a_grade_is_the_tests_lost_and_a_message_masks_addresses():
    one = {"a": "passed", "b": "AssertionError: <X at 0x7f00aa>", "c": "passed"}
    two = {"a": "passed", "b": "AssertionError: <X at 0x7f11bb>", "c": "passed"}
    assert seeded_runs.verdict(one) == seeded_runs.verdict(two)
    assert seeded_runs.verdict(one)[0] == '["b"]'
    other = {"a": "passed", "b": "AssertionError: worker 2 raised", "c": "passed"}
    assert seeded_runs.verdict(other)[0] == seeded_runs.verdict(one)[0]
    assert seeded_runs.verdict(other)[1] != seeded_runs.verdict(one)[1]


@pytest.mark.slow
def test_lesson_00_grades_its_demo_answers_the_same_in_every_run_beside_busy_processes(capsys):
    assert seeded_runs.main(["--runs", "3", "--busy", "2", "--lessons", "00", "--json"]) == 0
    row = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["lessons"]["00_anatomy"]
    assert row["correct"] == {"runs": 3, "grades": 1, "messages": 1, "lost": []}
    assert row["racy"]["grades"] == 1 and row["racy"]["lost"] == ["test_anatomy_counter"]
