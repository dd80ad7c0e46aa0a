"""Result: verdicts, ok, immutability, headless figure."""

import pytest
from matplotlib.figure import Figure

from autograder.harness import Result
from autograder.harness.result import issue
from autograder.harness.timeline import Mark, Segment, Timeline


def test_ok_means_pass_from_the_harness():
    assert issue("pass").ok
    assert not issue("race", schedule="v1:3>1").ok


def test_a_hand_made_passing_result_is_not_ok():
    forged = Result("pass", message="all good")
    assert forged.verdict == "pass"
    assert not forged.ok


def test_unknown_verdicts_are_refused():
    with pytest.raises(ValueError):
        Result("fine")


def test_results_cannot_be_changed():
    result = issue("race")
    with pytest.raises(AttributeError):
        result.verdict = "pass"


def test_figure_is_a_headless_figure_with_one_lane_per_thread():
    timeline = Timeline(lanes=["worker 0", "worker 1"],
                        segments=[Segment(0, 0, 3, "l.4"), Segment(1, 3, 5), Segment(0, 5, 6)],
                        marks=[Mark(0, 6, "check failed")], switches=[3, 5])
    figure = issue("race", timeline=timeline).figure()
    assert isinstance(figure, Figure)
    axes = figure.axes[0]
    assert [t.get_text() for t in axes.get_yticklabels()] == ["worker 0", "worker 1"]
    assert any(t.get_text() == "check failed" for t in axes.texts)
    figure.savefig(__import__("io").BytesIO(), format="png")


def test_str_is_the_message():
    assert str(issue("pass", message="No race found")) == "No race found"
