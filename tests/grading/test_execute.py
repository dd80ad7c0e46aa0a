"""The host's side of a run: the report is taken only in the plan's order; deaths in words;
a runner made ready before its plan serves that one run only."""

import pytest

from autograder.grading.execute import (
    RunLimits,
    _death,
    _in_plan_order,
    run_cells,
    start_runner,
)


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


CELLS = [{"kind": "code", "source": "import sys\nprint(sorted({'json', 'csv'} & set(sys.modules)))",
          "label": "In [1]"}]


def _printed(run) -> str:
    return run.ended[0]["out"]


def test_a_ready_runner_serves_its_run_as_a_fresh_one_would(tmp_path):
    ready = start_runner(["import json"], RunLimits(), tmp_path / "ready")
    served = run_cells(CELLS, ["import json"], RunLimits(), tmp_path / "a", ready)
    fresh = run_cells(CELLS, ["import json"], RunLimits(), tmp_path / "b")
    assert served.finished and fresh.finished
    assert _printed(served) == _printed(fresh) == "['json']\n"
    assert ready.process.poll() is not None, "a ready runner serves one run, never two"


def test_a_ready_runner_that_does_not_fit_the_run_is_stopped_and_a_fresh_one_runs(tmp_path):
    ready = start_runner(["import csv"], RunLimits(), tmp_path / "ready")
    assert not ready.fits(["import json"], RunLimits())
    assert not ready.fits(["import csv"], RunLimits(tmp_mb=256))
    run = run_cells(CELLS, ["import json"], RunLimits(), tmp_path / "a", ready)
    assert run.finished and _printed(run) == "['json']\n", "not the ready runner's imports"
    assert ready.process.poll() is not None
