"""Live experiments in child processes: a crash or a hang is one trial's outcome, not the end."""

import math
import operator
import os
import time

import pytest

from autograder.checks.child import Crashed, run_in_children


def test_a_crashed_trial_is_recorded_and_the_next_trials_run_in_a_new_child():
    outcomes = run_in_children(operator.call, [(math.sqrt, 4.0), (os.abort,), (math.sqrt, 9.0)],
                               trial_timeout_s=30)
    assert outcomes == [2.0, Crashed("crashed (SIGABRT)"), 3.0]
    assert str(outcomes[1]) == "the process crashed (SIGABRT)"


def test_a_hung_trial_is_stopped_within_its_bound():
    start = time.monotonic()
    outcomes = run_in_children(operator.call, [(time.sleep, 60), (math.sqrt, 16.0)],
                               trial_timeout_s=2, startup_s=5)
    assert outcomes[0] == Crashed("hung and was stopped")
    assert outcomes[1] == 4.0
    assert time.monotonic() - start < 30


def test_a_function_defined_in_the_notebook_gets_a_one_line_error():
    with pytest.raises(TypeError, match="must be defined in a module"):
        run_in_children(operator.call, [(lambda: 1,)], trial_timeout_s=5)


def test_an_error_in_the_child_is_raised_with_its_last_lines():
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        run_in_children(operator.truediv, [(1, 0)], trial_timeout_s=5)


def test_a_function_from_a_folder_given_in_path_runs_in_the_child(tmp_path, monkeypatch):
    (tmp_path / "racelab_child_helper.py").write_text("def twice(x):\n    return 2 * x\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    from racelab_child_helper import twice

    assert run_in_children(twice, [(2,), (5,)], trial_timeout_s=30,
                           path=[str(tmp_path)]) == [4, 10]
