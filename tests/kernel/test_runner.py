"""runner: hidden calls go through the runner's own references; answers read as plain data."""

import types

from autograder.kernel import runner


def test_answers_are_read_as_plain_data_and_nothing_else():
    plain = runner.make_plain_encoder()

    class Liar(int):
        def __eq__(self, other):
            return True

    class Meta(type):
        def __eq__(cls, other):
            return True

    assert plain([1, (2.5, "a"), {"k": None}, True]) == [
        "list", [1, ["tuple", [2.5, "a"]], ["dict", [["k", None]]], True]]
    assert plain(Liar(3)) == ["not plain", "Liar"]
    assert plain(Meta("Fake", (), {})()) == ["not plain", "Fake"]


def test_a_hidden_check_is_the_runners_own_not_the_notebooks():
    called, observations = [], []

    def check_x(answer, **kw):
        called.append((answer, kw))
        observations.append({"seen": answer})

    face = types.SimpleNamespace(check_x=check_x)
    scope = {"face": types.SimpleNamespace(check_x=lambda *a, **k: None), "Answer": "mine"}
    calls = [{"face": "face", "check": "check_x", "args": [["name", "Answer"]],
              "kwargs": {"seed": 1}}]
    error, values = runner._hidden(calls, scope, {"face": face}, {}, observations)
    assert error is None and called == [("mine", {"seed": 1})]
    assert values == [["list", [["dict", [["seen", "mine"]]]]]], "what it reported, as data"
    assert observations == [], "nothing is left for the next call"


def test_a_hidden_check_sends_only_what_it_reported_during_its_own_call():
    observations = [{"left": "by the notebook"}]
    face = types.SimpleNamespace(check_x=lambda: None)
    error, values = runner._hidden([{"face": "face", "check": "check_x", "args": []}], {},
                                   {"face": face}, {}, observations)
    assert error is None and values == [["list", []]]


def test_a_hidden_call_reports_what_went_wrong():
    error, _ = runner._hidden([{"face": "missing", "check": "c", "args": []}], {}, {}, {},
                              [])
    assert error["ename"] == "GraderError"
    error, _ = runner._hidden([{"answer": "add", "args": []}], {}, {}, {}, [])
    assert error["ename"] == "NameError" and "add" in error["evalue"]

    def add(*args):
        raise ValueError("nope")

    error, _ = runner._hidden([{"answer": "add", "args": [["value", 1]]}], {"add": add}, {}, {},
                              [])
    assert error["ename"] == "ValueError" and error["evalue"] == "nope"
    error, values = runner._hidden([{"answer": "add", "args": [["value", 2]]}],
                                   {"add": lambda x: x * 21}, {}, {}, [])
    assert error is None and values == [42]
