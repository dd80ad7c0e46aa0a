"""scoring and the host's reading of the report: the judge decides, by plan order and value."""

from autograder.grading import scoring
from autograder.grading.cells import Plan, Structure
from autograder.grading.execute import Run, _in_plan_order
from autograder.grading.spec import JobResult, Status
from autograder.kernel.runner import make_plain_encoder


def _plan(expected):
    cell = {"kind": "test", "source": "", "hidden": [{"answer": "add", "args": []}],
            "expected": expected, "graded": "", "label": "t", "grade_id": "t"}
    return Plan([cell], [0], {"t": 0})


def _result():
    return JobResult("s", "a", "n", Status.GRADED.value, max_score=2.0)


def _scored(values, expected=(["equals", 42],)):
    event = {"t": "end", "cell": 0, "error": None, "tamper": [], "integrity": [],
             "values": values}
    run = Run(ended={0: event}, finished=True)
    return scoring.score_tests(_plan(list(expected)), run,
                               Structure({"t": ("", 2.0)}, {}), _result())["t"]


def test_an_answer_passes_only_with_the_value_the_host_expects_read_as_plain_data():
    assert _scored([42])[0] == 2.0
    assert _scored([41])[0] == 0.0
    assert _scored([True], expected=(["equals", 1],))[0] == 0.0, "True is not 1 here"
    assert _scored([["not plain", "Liar"]])[0] == 0.0
    assert _scored([])[0] == 0.0, "a report without the value is a failure, not a pass"
    assert _scored(None)[0] == 0.0


def test_an_answer_that_returned_without_raising_passes():
    assert _scored([None], expected=(None,))[0] == 2.0


def test_the_report_must_follow_the_plan():
    assert _in_plan_order("start", 0, None, 0, 3)
    assert not _in_plan_order("start", 0, None, 1, 3), "a cell run twice"
    assert not _in_plan_order("start", 2, None, 1, 3), "a cell skipped"
    assert not _in_plan_order("start", 1, 0, 1, 3), "a start before the running cell ended"
    assert not _in_plan_order("start", 3, None, 3, 3), "a cell the plan does not have"
    assert not _in_plan_order("start", "0", None, 0, 3)
    assert _in_plan_order("end", 1, 1, 1, 3)
    assert not _in_plan_order("end", 2, 1, 1, 3)
    assert not _in_plan_order("done", None, None, 2, 3), "done before the last cell"
    assert _in_plan_order("done", None, None, 3, 3)


def test_a_whole_notebook_failure_keeps_the_more_important_status():
    structure = Structure({"t": ("", 2.0)}, {})
    for stopped, earlier, status in (
            ("timeout", Status.KERNEL_DIED, Status.KERNEL_DIED),
            ("died", Status.TIMEOUT, Status.KERNEL_DIED),
            ("grader-error", Status.TAMPERED, Status.GRADER_ERROR),
            ("timeout", Status.TAMPERED, Status.TAMPERED)):
        result = _result()
        result.status = earlier.value
        scoring.fail_whole(result, structure, Run(stopped=stopped, reason="why"))
        assert result.status == status and result.score == 0.0


def _checked(values, error=None):
    """A test cell whose hidden test is ``anatomy.check_counter(SafeCounter)``, scored from an
    end event carrying ``values`` (what the runner sent for it)."""
    cell = {"kind": "test", "source": "", "label": "t", "grade_id": "t", "graded": "",
            "hidden": [{"face": "anatomy", "check": "check_counter",
                        "args": [["name", "SafeCounter"]]}], "expected": [None]}
    event = {"t": "end", "cell": 0, "error": error, "tamper": [], "integrity": [],
             "values": values}
    result = _result()
    score = scoring.score_tests(Plan([cell], [0], {"t": 0}), Run(ended={0: event}, finished=True),
                                Structure({"t": ("", 2.0)}, {}), result)["t"]
    return score, result


GOOD = {"one_thread": [4, 0, 2], "totals": [7] * 300, "schedules": 300}


def test_a_check_passes_only_when_the_judge_accepts_what_it_observed():
    encode = make_plain_encoder()
    (score, _, reason), result = _checked([encode([GOOD])])
    assert score == 2.0 and reason == "passed" and result.status == Status.GRADED
    for values in ([encode([])], [None], [["not plain", "X"]], [encode([GOOD, GOOD])]):
        (score, _, reason), result = _checked(values)
        assert score == 0.0, values
        assert result.status == Status.TAMPERED and "tampered" in reason, values
    for report, why in (({**GOOD, "totals": [7] * 299 + [5]}, "handed out other than 7"),
                        ({}, "missing"), (["list"], "not a dict")):
        (score, _, reason), result = _checked([encode([report])])
        assert score == 0.0 and why in reason, reason
        assert result.status == Status.GRADED, "one report: flagged, never tampered"
        assert any(note.startswith("Flagged for the instructor") for note in result.notes)
    for values in ([], None, [encode([GOOD]), encode([GOOD])]):
        assert _checked(values)[0][0] == 0.0, "not one value per hidden call"


def test_a_check_that_raised_fails_whatever_it_reported():
    (score, _, reason), result = _checked([make_plain_encoder()([GOOD])],
                                          error={"ename": "AssertionError", "evalue": "racy"})
    assert score == 0.0 and "racy" in reason and result.status == Status.GRADED
