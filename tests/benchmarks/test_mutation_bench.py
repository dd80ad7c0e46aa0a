"""The mutation benchmark (benchmarks/mutation_bench.py): its operators, and one grading run.

The fast tests grade nothing: every mutant of every lesson parses, differs from the reference
and changes one place (one expression, or a contiguous run of statements in one block), every
lesson yields mutants, and each operator rewrites a small example as documented. The one
grading test grades one mutant per operator of lesson 00 through the real grader and expects
each to be killed: a survivor there is a hole in lesson 00's checks, to report, not to hide.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import sys
import textwrap

import pytest

from tests.conftest import REPO

_spec = importlib.util.spec_from_file_location("mutation_bench",
                                               REPO / "benchmarks" / "mutation_bench.py")
bench = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("mutation_bench", bench)
_spec.loader.exec_module(bench)

LESSONS = bench.lessons()
MUTANTS = {lesson.name: bench.lesson_mutants(lesson) for lesson in LESSONS}
ALL = [m for found in MUTANTS.values() for m in found]


def _points(a: object, b: object, path: tuple = ()) -> list[tuple]:
    """Where two ASTs differ: the paths of the differing fields (a list of unequal length or
    a node of another kind counts as one point; equal-length lists are compared by element)."""
    if isinstance(a, ast.AST) and isinstance(b, ast.AST):
        if type(a) is not type(b):
            return [path]
        return [p for name in a._fields
                for p in _points(getattr(a, name, None), getattr(b, name, None),
                                 (*path, name))]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [path]
        return [p for k, (x, y) in enumerate(zip(a, b, strict=True))
                for p in _points(x, y, (*path, k))]
    return [] if a == b else [path]


def _one_place(original: ast.AST, points: list[tuple]) -> bool:
    """Whether the differences lie in one place: under one expression or one simple
    statement, or in one statement (or ``with`` item) list at consecutive indices (a region
    shifted over its neighbour, two locks swapped)."""
    if len(set(points)) == 1:
        return True  # one node of another kind, one list of another length, one value
    depth = 0
    while all(len(p) > depth for p in points) and len({p[depth] for p in points}) == 1:
        depth += 1
    node: object = original
    for step in points[0][:depth]:
        node = node[step] if isinstance(step, int) else getattr(node, step)
    if isinstance(node, list):
        indices = sorted({p[depth] for p in points if len(p) > depth})
        return not indices or indices == list(range(indices[0], indices[0] + len(indices)))
    if isinstance(node, ast.expr):
        return True
    return isinstance(node, ast.stmt) and not hasattr(node, "body")


@pytest.mark.parametrize(("before", "after", "one"), [
    ("a = x >= y\nb = 1", "a = x > y\nb = 1", True),
    ("with l:\n    a()\n    b()", "with l:\n    a()\nb()", True),
    ("a()\nb()\nc()", "b()\na()\nc()", True),
    ("a = x >= y\nb = 1\nc = 2", "a = x > y\nb = 1\nc = 3", False),
    ("if x >= y:\n    a = 1", "if x > y:\n    a = 2", False),
])
def test_one_place_tells_one_change_from_two(before, after, one):
    original = ast.parse(before)
    assert _one_place(original, _points(original, ast.parse(after))) is one


def test_every_lesson_yields_at_least_one_mutant():
    assert LESSONS, "no lessons found"
    empty = [name for name, found in MUTANTS.items() if not found]
    assert not empty, f"lessons without a mutant: {empty}"


def test_mutant_ids_are_unique_and_name_lesson_cell_operator_site():
    ids = [m.id for m in ALL]
    assert len(ids) == len(set(ids))
    for m in ALL:
        assert m.id == f"{m.lesson}.{m.grade_id}.{m.operator}.{m.site}"
        assert m.operator in bench.OPERATORS


@pytest.mark.parametrize("mutant", ALL, ids=lambda m: m.id)
def test_mutant_is_valid_python_that_changes_exactly_one_place(mutant):
    original, mutated = ast.parse(mutant.original), ast.parse(mutant.source)
    assert ast.dump(original) != ast.dump(mutated), "the mutant changes nothing"
    points = _points(original, mutated)
    assert _one_place(original, points), f"changes in several places: {points}\n{mutant.diff()}"
    assert "### BEGIN SOLUTION" not in mutant.source
    assert mutant.rendered == "splice", "the whole cell was unparsed: the splice went wrong"


def test_mutants_are_deterministic():
    again = bench.lesson_mutants(LESSONS[0])
    assert [(m.id, m.source) for m in again] == [(m.id, m.source) for m in MUTANTS[LESSONS[0].name]]


def test_show_prints_a_unified_diff(capsys):
    mutant = ALL[0]
    assert bench.main(["--lessons", mutant.lesson, "--show", mutant.id]) == 0
    shown = capsys.readouterr().out
    assert "--- solutions/" in shown and "+++ solutions/" in shown and "\n@@ " in shown


def test_cap_keeps_evenly_spaced_sites_and_stable_ids():
    two = bench.cap(ALL, 2)
    groups = {}
    for m in ALL:
        groups.setdefault((m.lesson, m.operator), []).append(m)
    for (lesson, operator), group in groups.items():
        kept = [m for m in two if (m.lesson, m.operator) == (lesson, operator)]
        assert [m.id for m in kept] == [m.id for m in (group if len(group) <= 2
                                                       else [group[0], group[-1]])]


def _mutate(source: str, operator: str, names: frozenset[str] = frozenset({"time"})) -> list[str]:
    cell = "def answer():\n    ### BEGIN SOLUTION\n" + textwrap.indent(
        textwrap.dedent(source).strip("\n"), "    ") + "\n    ### END SOLUTION\n"
    found = bench.mutants_of_cell("99_example", "ex_example", cell, names, (operator,))
    for m in found:
        ast.parse(m.source)
        assert m.rendered == "splice"
    return [textwrap.dedent(m.source.split("\n", 1)[1]).strip() for m in found]


@pytest.mark.parametrize(("operator", "source", "expected"), [
    ("remove_lock", "with lock:\n    a()\nb()", ["a()\nb()"]),
    ("remove_lock", "with a.lock, b.lock:\n    c()",
     ["c()", "with b.lock:\n    c()", "with a.lock:\n    c()"]),
    ("remove_lock", "with open(p) as f:\n    f.read()", []),
    ("remove_acquire_release", "lock.acquire()\nx += 1\nlock.release()", ["x += 1"]),
    ("remove_acquire_release", "lock.acquire()\ntry:\n    x()\nfinally:\n    lock.release()",
     ["x()"]),
    ("shrink_region", "with lock:\n    a()\n    b()", ["with lock:\n    a()\nb()"]),
    ("shift_region", "x()\nwith lock:\n    a()\n    b()\ny()",
     ["with lock:\n    x()\n    a()\nb()\ny()", "x()\na()\nwith lock:\n    b()\n    y()"]),
    ("split_region", "with lock:\n    a()\n    b()\n    c()",
     ["with lock:\n    a()\nwith lock:\n    b()\n    c()",
      "with lock:\n    a()\n    b()\nwith lock:\n    c()"]),
    ("exchange_locks", "with a.lock, b.lock:\n    c()", ["with b.lock, a.lock:\n    c()"]),
    ("exchange_locks", "with a_lock:\n    with b_lock:\n        c()",
     ["with b_lock:\n    with a_lock:\n        c()"]),
    ("non_atomic", "v.assign_add(d)\nw.assign_sub(2)",
     ["v.assign(v + d)\nw.assign_sub(2)", "v.assign_add(d)\nw.assign(w - 2)"]),
    ("non_atomic", "q = queue.Queue()", ["q = " + bench.TABLE["list_queue"]]),
    ("drop_join", "t.join()\n', '.join(xs)", ["', '.join(xs)"]),
    ("drop_join", "for t in ts:\n    t.join()", ["for t in ts:\n    pass"]),
    ("join_to_sleep", "t.join()", ["time.sleep(0.01)"]),
    ("drop_warmup", "model.predict(x)\ny = model.predict(x)", ["y = model.predict(x)"]),
    ("drop_warmup", "fresh = factory()\nfresh(x)\nstart(x)", ["fresh = factory()\nstart(x)"]),
    ("nondeterministic", "d.map(f, deterministic=True)", ["d.map(f, deterministic=False)"]),
    ("stateful_random", "tf.random.stateless_uniform([2], seed, maxval=3)",
     ["tf.random.uniform([2], maxval=3)"]),
    ("stateful_random", "tf.image.stateless_random_flip_up_down(im, s)",
     ["tf.image.random_flip_up_down(im)"]),
    ("start_method", 'ctx = mp.get_context("spawn")', ["ctx = mp.get_context('fork')"]),
    ("boundary", "ok = a >= b <= c < d",
     ["ok = a > b <= c < d", "ok = a >= b < c < d", "ok = a >= b <= c <= d"]),
    ("boundary", "ok = n > 1", ["ok = n >= 1"]),
    ("expand_region", "with lock:\n    a()\nb()\nc()", ["with lock:\n    a()\n    b()\nc()"]),
    ("expand_region", "x()\nwith lock:\n    a()", []),
    ("lock_per_call", "with self._lock:\n    a()",
     ["with __import__('threading').Lock():\n    a()"]),
    ("lock_per_call", "with a.lock, b.lock:\n    c()",
     ["with __import__('threading').Lock(), b.lock:\n    c()",
      "with a.lock, __import__('threading').Lock():\n    c()"]),
    ("drop_wait", "barrier.wait()\nx = cond.wait_for(p)\ndone.wait(1)",
     ["x = cond.wait_for(p)\ndone.wait(1)", "barrier.wait()\nx = cond.wait_for(p)"]),
    ("wrong_warmup", "model.predict_on_batch(x)\nmodel.predict(x, verbose=0)",
     ["model(x)\nmodel.predict(x, verbose=0)", "model.predict_on_batch(x)\nmodel(x)"]),
    ("wrong_warmup", "fresh = factory()\nfresh(x)",
     ["fresh = factory()\nfresh.predict_on_batch(x)"]),
    ("median", "m = statistics.median(xs)",
     ["m = statistics.mean(xs)", "m = max(xs)"]),
])
def test_operator_rewrites_an_example_as_documented(operator, source, expected):
    assert _mutate(source, operator) == expected


def test_lock_per_call_names_threading_where_the_lesson_imports_it():
    assert _mutate("with lock:\n    a()", "lock_per_call", frozenset({"threading"})) == [
        "with threading.Lock():\n    a()"]


def test_join_to_sleep_imports_time_where_the_lesson_does_not():
    assert _mutate("t.join()", "join_to_sleep", frozenset()) == ["__import__('time').sleep(0.01)"]


def test_operators_act_only_inside_solution_regions():
    cell = ("def f():\n    with lock:\n        a()\n        b()\n    ### BEGIN SOLUTION\n"
            "    c()\n    ### END SOLUTION\n")
    assert bench.mutants_of_cell("99_example", "ex_example", cell) == []


def test_the_equivalent_list_names_real_mutants_with_a_reason():
    listed = bench.read_equivalent()
    known = {m.id for m in ALL}
    for mutant_id, reason in listed.items():
        assert mutant_id in known, f"{mutant_id} is no mutant"
        assert reason, f"{mutant_id} has no reason"


def one_per_operator(lesson: str) -> list:
    """The first mutant of each operator in ``lesson`` that is not listed as equivalent."""
    equivalent = bench.read_equivalent()
    chosen = {}
    for m in MUTANTS[lesson]:
        if m.id not in equivalent:
            chosen.setdefault(m.operator, m)
    return list(chosen.values())


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_lesson_00_checks_kill_one_mutant_of_each_operator(tmp_path, capsys):
    chosen = one_per_operator("00_anatomy")
    assert {m.operator for m in chosen} >= {"remove_lock", "shrink_region", "split_region"}
    code = bench.main(["--lessons", "00", "--workers", "2", "--out", str(tmp_path), "--json",
                       "--only", ",".join(m.id for m in chosen)])
    assert code == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert json.loads(last)["lessons"]["00_anatomy"]["mutants"] == len(chosen)
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["references"]["00_anatomy"] == ["full marks"], "the control lost points"
    survivors = {m["id"]: m["runs"] for m in results["mutants"] if m["outcome"] != "killed"}
    assert not survivors, ("lesson 00's checks let these mutants through (holes in the checks; "
                           f"report them, do not weaken this test): {survivors}")
