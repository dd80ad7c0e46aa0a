"""Failure signatures: made beside the check, carried by the runner as plain data only, read on
the host as untrusted data, and words for the student without memory addresses."""

import threading

import pytest

from autograder.checks import anatomy
from autograder.checks.kit import verdict
from autograder.grading import signatures
from autograder.grading.feedback import scrub
from autograder.grading.spec import JobResult
from autograder.kernel import runner

TAKE_UNLOCKED = '''class SafeCounter:
    def __init__(self):
        self.{count} = 0
        self.{lock} = threading.Lock()

    def increment(self, by=1):
        with self.{lock}:
            self.{count} += by
{padding}
    def take(self):
        {local} = self.{count}
        self.{count} = 0
        return {local}
'''


def _failure(source: str, filename: str = "<cell 3>") -> AssertionError:
    scope = {"threading": threading}
    exec(compile(source, filename, "exec"), scope)  # noqa: S102
    with pytest.raises(AssertionError) as failed:
        anatomy.check_counter(scope["SafeCounter"])
    return failed.value


def test_renamed_and_moved_code_gives_the_same_steps_and_another_mistake_does_not():
    first = _failure(TAKE_UNLOCKED.format(count="value", lock="lock", local="value",
                                          padding=""))
    renamed = _failure(TAKE_UNLOCKED.format(count="_n", lock="_guard", local="got",
                                            padding="\n    # a comment that moves lines\n"))
    one, two = (getattr(e, verdict.SIGNATURE_ATTRIBUTE) for e in (first, renamed))
    assert one["kind"] == two["kind"] == "lost update"
    assert one["steps"] == two["steps"] == [[0, "read", "A", True], [2, "read", "A", False],
                                            [2, "write", "A", False], [0, "write", "A", True]]
    assert one["names"][0] == "value" and two["names"][0] == "_n"
    assert one["at"][1] != two["at"][1], "the lines moved; the steps did not change"
    increment_unlocked = TAKE_UNLOCKED.replace("        with self.{lock}:\n            self",
                                               "        self")
    other = getattr(_failure(increment_unlocked.format(count="value", lock="lock",
                                                       local="value", padding="")),
                    verdict.SIGNATURE_ATTRIBUTE)
    assert other["steps"] != one["steps"]


def test_the_runner_copies_a_signature_only_as_plain_data():
    read = runner.make_signature_reader()
    error = AssertionError("x")
    assert read(error) is None
    error.racelab_signature = {"kind": "lost update", "steps": [[0, "read", "A", True]],
                               "schedule": "v1:1>0", "long": "y" * 5000}
    copied = read(error)
    assert copied["steps"] == [[0, "read", "A", True]] and len(copied["long"]) == 2000

    class Sneaky(str):
        pass

    shared = [0] * 400
    for _ in range(4):
        shared = [shared] * 400  # 400**5 values if copied naively: refused at 2,000
    for forged in ({"kind": Sneaky("lost update")}, {"steps": (1, 2)}, {1: "key"},
                   {"deep": [[[[[[[["too deep"]]]]]]]]}, "not a dict", {"wide": shared}):
        error.racelab_signature = forged
        assert read(error) is None, forged

    class Loud(AssertionError):
        def __getattribute__(self, name):
            raise RuntimeError("an answer's code ran")

    loud = Loud("y")
    BaseException.__dict__["__dict__"].__get__(loud)["racelab_signature"] = {"kind": "x"}
    assert read(loud) == {"kind": "x"}
    described = runner._describe(loud, {})
    assert described["signature"] == {"kind": "x"}


def test_the_host_reads_a_signature_as_untrusted_data_and_hashes_it():
    good = {"kind": "lost update", "steps": [[0, "read", "A", True], [1, "write", "A", False]],
            "names": ["value", "value"], "at": [["<cell 0>", 2], ["<cell 0>", 3]],
            "schedule": "v1:1>0,3>1", "again": "anatomy.run_counter(SafeCounter)"}
    plan_cells = [{"kind": "answer", "grade_id": "ex_c", "label": "In [4]",
                   "source": "x = 1\nseen = self.value\nself.value = seen + 1\n"}]
    plan = type("Plan", (), {"cells": plan_cells, "tests": {}})()
    made = signatures._from_runner({"signature": good}, plan)
    assert made["story"][0] == ("worker 0 reads value (holding a lock), line 2 of your answer "
                                "cell ex_c (In [4]): `seen = self.value`")
    assert made["replay"][0] == "result = anatomy.run_counter(SafeCounter)"
    for bad in ({**good, "kind": "everything is fine"}, {**good, "steps": [[0, "rm -rf", "A", 1]]},
                {**good, "steps": [[0, "read", "A", True]] * 25}):
        assert signatures._from_runner({"signature": bad}, plan) is None
    one = signatures.make("00_anatomy", "test_c", "anatomy.check_counter", "lost update", made,
                          "")
    other_story = {**made, "story": ["told differently"], "replay": []}
    two = signatures.make("00_anatomy", "test_c", "anatomy.check_counter", "lost update",
                          other_story, "")
    assert one["hash"] == two["hash"] and len(one["hash"]) == 10


def test_messages_keep_no_memory_address_and_name_the_students_cell():
    text = ("worker 1 is blocked at <cell 0> line 3 in take: it waits to enter `with` on Lock "
            "at 0x7f64624f9740; worker 0 holds Lock at 0x7f64624f9800, not Lock at "
            "0x7f64624f9740")
    cells = [{"kind": "answer", "grade_id": "ex_c", "label": "In [4]",
              "source": "a\nb\nwith self.lock:\n"}]
    said = scrub(text, cells)
    assert "0x" not in said
    assert "Lock #1; worker 0 holds Lock #2, not Lock #1" in said
    assert "line 3 of your answer cell ex_c (In [4]), in take (`with self.lock:`)" in said
    assert signatures.normalise("Took 12 s at 0x7f00 in <cell 4>") == "Took # s #1 in a cell"


def test_a_result_written_before_signatures_still_loads():
    old = {"student": "s", "assignment": "00_anatomy", "notebook": "00_anatomy",
           "status": "graded", "score": 0.0, "max_score": 3.0,
           "cells": {"test_c": [0.0, 3.0, "AssertionError: it broke"]}}
    result = JobResult(**old)
    assert result.signatures == {}
    made = signatures.failure_signatures(result)["test_c"]
    assert made["kind"] == "no signature recorded" and made["text"] == "AssertionError: it broke"
