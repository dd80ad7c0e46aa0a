"""The host's side of a run: the report is taken only in the plan's order; deaths in words."""

import pytest

from autograder.grading.execute import _death, _in_plan_order


@pytest.mark.parametrize(("kind", "cell", "running", "next_cell", "accepted"), [
    ("start", 0, None, 0, True),
    ("start", 1, None, 0, False),      # a test skipped
    ("start", 0, 0, 1, False),         # a start before the running cell ended
    ("start", True, None, 1, False),   # a bool is not a cell number
    ("start", 3, None, 3, False),      # past the plan
    ("end", 2, 2, 3, True),
    ("end", 1, 2, 3, False),           # ends another cell
    ("end", 2, None, 3, False),        # nothing is running
    ("done", None, None, 3, True),
    ("done", None, None, 2, False),    # done before every cell ran
    ("done", None, 2, 3, False),       # done while a cell runs
])
def test_report_is_accepted_only_in_plan_order(kind, cell, running, next_cell, accepted):
    assert _in_plan_order(kind, cell, running, next_cell, cells=3) is accepted


def test_a_runner_death_is_named_by_its_signal_or_status():
    assert "SIGKILL" in _death(-9)
    assert "SIGSEGV" in _death(128 + 11)  # as bubblewrap reports a killed child
    assert "status 3" in _death(3)
