"""cells: hidden tests become calls, demonstrations nothing graded reads are left out."""

import nbformat
import pytest

from autograder.grading import cells

HIDDEN = ("### BEGIN HIDDEN TESTS\n# a comment students never see\n"
          "anatomy.check_counter(SafeCounter, seed=3)\nassert add(20, 22) == 42\n"
          "### END HIDDEN TESTS\n")


def test_a_hidden_test_reaches_the_runner_as_calls_and_its_expectations_stay_on_the_host():
    visible, hidden, expected = cells.split_test("assert add(1, 1) == 2\n" + HIDDEN)
    assert visible == "assert add(1, 1) == 2\n"
    assert hidden == [
        {"face": "anatomy", "check": "check_counter", "args": [["name", "SafeCounter"]],
         "kwargs": {"seed": 3}},
        {"answer": "add", "args": [["value", 20], ["value", 22]]}]
    assert expected == [None, ["equals", 42]]
    entry = {"kind": "test", "source": visible, "hidden": hidden, "graded": visible + HIDDEN,
             "expected": expected, "label": "t", "grade_id": "t"}
    sent = cells.for_runner(entry)
    assert "graded" not in sent and "expected" not in sent and "42" not in repr(sent)
    assert "never see" not in repr(sent)


@pytest.mark.parametrize("statement", [
    "print(open('/etc/passwd').read())", "x = anatomy.check_counter", "assert add(1) > 2",
    "anatomy.check_counter(lambda: 1)"])
def test_a_hidden_test_of_another_form_is_refused(statement):
    with pytest.raises(ValueError, match="a hidden test must be"):
        cells.split_test(f"### BEGIN HIDDEN TESTS\n{statement}\n### END HIDDEN TESTS\n")


def test_names_are_read_off_symbol_tables_so_locals_of_functions_are_not_the_notebooks():
    read, bound = cells._names(
        "x = 1\ndef f(a):\n    global y\n    y = a + z\n"
        "for n in [k for k in r]:\n    pass\nimport os.path as q\nclass C:\n    w = v\n")
    assert read == {"r", "y", "v", "z"}
    assert bound == {"C", "f", "y", "q", "n", "x"}
    assert cells._names("from os import *") is None
    assert cells._names("def (") is None


def _notebook(*sources, graded=()):
    notebook = nbformat.v4.new_notebook()
    for index, source in enumerate(sources):
        cell = nbformat.v4.new_code_cell(source)
        if index in graded:
            kind, gid = graded[index]
            cell.metadata["nbgrader"] = {
                "grade": kind == "test", "solution": kind == "answer", "grade_id": gid,
                "locked": kind == "test", "points": 1, "schema_version": 3}
        notebook.cells.append(cell)
    return notebook


def test_demonstrations_that_nothing_graded_reads_are_left_out_and_the_rest_kept():
    sources = ["import lib\nTHREADS = 4", "slow = lib.trials(THREADS)\nprint(slow)",
               "helper = lib.Model()", "class Answer:\n    pass", "check(Answer, helper)"]
    graded = {3: ("answer", "ex_a"), 4: ("test", "test_a")}
    release = _notebook(*sources, graded=graded)
    structure = cells.structure(release)
    plan = cells.make_plan(release, {"test_a": sources[4]}, structure, set(), release)
    assert [c["source"] for c in plan.cells] == [sources[0], sources[2], sources[3], sources[4]]
    assert plan.positions == [0, 2, 3, 4] and plan.tests == {"test_a": 3}


def test_a_demonstration_the_student_edited_or_an_answer_reads_is_run():
    sources = ["import lib", "result = lib.trials()", "class Answer:\n    pass", "check(Answer)"]
    graded = {2: ("answer", "ex_a"), 3: ("test", "test_a")}
    release = _notebook(*sources, graded=graded)
    structure = cells.structure(release)
    submitted = _notebook(sources[0], sources[1] + "\nprint('mine')",
                          "class Answer:\n    seen = result", sources[3], graded=graded)
    plan = cells.make_plan(submitted, {"test_a": sources[3]}, structure, set(), release)
    assert len(plan.cells) == 4
    reads_it = _notebook(*sources[:2], "class Answer:\n    seen = result", sources[3],
                         graded=graded)
    plan = cells.make_plan(reads_it, {"test_a": sources[3]}, structure, set(), release)
    assert len(plan.cells) == 4, "the demonstration binds a name the answer reads"


def test_a_cell_that_cannot_be_parsed_keeps_every_demonstration_before_it():
    sources = ["import lib", "result = lib.trials()", "class Answer(:", "check(Answer)"]
    graded = {2: ("answer", "ex_a"), 3: ("test", "test_a")}
    release = _notebook(*sources, graded=graded)
    plan = cells.make_plan(release, {"test_a": sources[3]}, cells.structure(release), set(),
                           release)
    assert len(plan.cells) == 4


def test_preload_reads_setup_cells_with_their_magics():
    release = _notebook("%matplotlib inline\nimport numpy as np\nfrom autograder.checks "
                        "import anatomy\nimport os")
    assert cells.preload(release) == ["import numpy as np",
                                      "from autograder.checks import anatomy"]


def test_answers_that_read_facts_of_their_environment_are_flagged():
    sources = ["import os", "class Answer:\n    graded = os.getuid() == 65534 or "
               "os.getcwd() == '/tmp/work'\n", "check(Answer)"]
    graded = {1: ("answer", "ex_a"), 2: ("test", "test_a")}
    notebook = _notebook(*sources, graded=graded)
    assert cells.environment_probes(notebook, cells.structure(notebook)) == [
        "/tmp/work", "getcwd", "getuid"]
    honest = _notebook("import threading", "class Answer:\n    lock = threading.Lock()",
                       "check(Answer)", graded=graded)
    assert cells.environment_probes(honest, cells.structure(honest)) == []


def test_a_lesson_cell_that_assigns_a_name_first_does_not_keep_demonstrations_binding_it():
    sources = ["import lib", "m = lib.trials()\nprint(m)", "class Answer:\n    pass",
               "m = lib.Model()\ncheck(Answer, m)"]
    graded = {2: ("answer", "ex_a"), 3: ("test", "test_a")}
    release = _notebook(*sources, graded=graded)
    plan = cells.make_plan(release, {"test_a": sources[3]}, cells.structure(release), set(),
                           release)
    assert [c["source"] for c in plan.cells] == [sources[0], sources[2], sources[3]]


def test_a_name_read_before_it_is_assigned_or_by_an_answer_keeps_the_demonstration():
    graded = {2: ("answer", "ex_a"), 3: ("test", "test_a")}
    for test in ("print(m)\nm = 1\ncheck(Answer, m)", "m = m + 1\ncheck(Answer, m)",
                 "m.x = 1\nm = 2\ncheck(Answer)", "def f():\n    return m\nm = f()"):
        sources = ["import lib", "m = lib.trials()", "class Answer:\n    pass", test]
        release = _notebook(*sources, graded=graded)
        plan = cells.make_plan(release, {"test_a": test}, cells.structure(release), set(),
                               release)
        assert len(plan.cells) == 4, test
    answer_first = ["import lib", "m = lib.trials()", "m = 1\nclass Answer:\n    seen = m",
                    "check(Answer)"]
    release = _notebook(*answer_first, graded=graded)
    plan = cells.make_plan(release, {"test_a": answer_first[3]}, cells.structure(release),
                           set(), release)
    assert len(plan.cells) == 4, "an answer's reads are counted generously"


def test_assigned_first_sees_plain_targets_only():
    assert cells._assigned_first("a, (b, *c) = f()\nd = a\nx.y = 1") == {"a", "b", "c", "d"}
    assert cells._assigned_first("x = x + 1\ny[0] = 1\ny = 2") == set()
    assert cells._assigned_first("import os\nz = os.getcwd()") == {"z"}
