"""The judge's reading of a kernel's report: plain data only, one report per check, never a
pass by default."""

import pytest

from autograder import judges
from autograder.kernel.runner import make_plain_encoder
from tests.conftest import REPO

ENCODE = make_plain_encoder()
GOOD_COUNTER = {"one_thread": [4, 0, 2], "totals": [7] * 300, "schedules": 300}


def test_decode_reverses_the_runners_plain_encoder():
    value = {"a": [1, 2.5, "x", None, True], "b": (1, (2,)), "c": {"d": []}}
    assert judges.decode(ENCODE(value)) == value


@pytest.mark.parametrize("encoded", [
    ["not plain", "Liar"], ["set", []], ["list"], ["dict", [[1, 2]]], ["dict", [["list", []]]],
    object(), ["list", [["not plain", "X"]]], ["dict", "ab"]])
def test_decode_refuses_anything_the_encoder_cannot_have_written(encoded):
    with pytest.raises(judges.Malformed):
        judges.decode(encoded)


def test_a_correct_report_is_accepted():
    assert judges.verdict("anatomy", "check_counter", ENCODE([GOOD_COUNTER])) is None


@pytest.mark.parametrize(("reports", "why"), [
    ([], "not 0 times"),
    ([GOOD_COUNTER, GOOD_COUNTER], "not 2 times"),
    ([{}], "missing"),
    ([{**GOOD_COUNTER, "totals": [7] * 299 + [6]}], "1 of 300 schedules"),
    ([{**GOOD_COUNTER, "totals": [True] * 300}], "bool"),
    ([{**GOOD_COUNTER, "schedules": 1, "totals": [7]}], "not the graded 300"),
    ([["ok"]], "not a dict"),
])
def test_a_missing_extra_malformed_or_wrong_report_never_passes(reports, why):
    refused = judges.verdict("anatomy", "check_counter", ENCODE(reports))
    assert refused is not None and why in refused, refused


def test_an_unknown_face_or_check_has_no_judge():
    for face, check in (("anatomy", "check_nope"), ("os", "check_counter"),
                        ("anatomy", "_explored"), ("anatomy", "expect"),
                        ("../x", "check_counter")):
        assert "no judge" in judges.verdict(face, check, ENCODE([GOOD_COUNTER]))


def test_a_judge_that_raises_on_odd_data_refuses_it():
    refused = judges.verdict("anatomy", "check_schedules",
                             ENCODE([{"overdraft": {"balance": -1, "paid": [1]},
                                      "double_pay": {"balance": 2**80, "paid": "xy"}}]))
    assert refused is not None


def test_every_face_has_a_judge_module_and_every_check_a_judge():
    import importlib
    import inspect

    faces = sorted(p.parent.name for p in (REPO / "autograder" / "checks").glob("*/grading.py"))
    assert len(faces) >= 10
    for face in faces:
        kernel_side = importlib.import_module(f"autograder.checks.{face}")
        host_side = importlib.import_module(f"autograder.judges.{face}")
        checks = {name for name, value in vars(kernel_side).items()
                  if name.startswith("check_") and inspect.isfunction(value)}
        missing = sorted(c for c in checks if not callable(getattr(host_side, c, None)))
        assert checks and not missing, f"{face}: no judge for {missing}"


@pytest.mark.parametrize(("reads", "why"), [
    ([(1, 0.5), (2, 2.5)], None),
    ([(1, 0.5), (3, 2.5)], "never published"),
    ([(0, 1.5), (2, 2.5)], "after version 1 was published"),
    ([(2, 1.5), (1, 1.6), (2, 2.5)], "went back from 2 to 1"),
    ([(1, 0.5), (1, 0.9)], "last read got version 1"),
])
def test_fresh_versions_is_the_rule_for_every_reader_of_published_versions(reads, why):
    published = {1: 1.0, 2: 2.0}
    if why is None:
        judges.fresh_versions(reads, published, first=0, last=2, who="reader 0")
        return
    with pytest.raises(judges.Rejected, match=why):
        judges.fresh_versions(reads, published, first=0, last=2, who="reader 0")
