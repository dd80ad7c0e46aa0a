"""The mutation benchmark's fast subset: every lesson's hidden checks kill one mutant of each
operator, in ``make test``.

For each lesson: the first mutant of each operator that ``benchmarks/mutants/equivalent.txt``
does not list as equivalent, graded by the lesson's hidden tests in one child process
(:mod:`tests.benchmarks.hidden_checks`: the grader's own plan and judge, without the sandbox).
Each must lose a test (a mutant that crashes its child or outlasts its 60 s counts as killed,
as the grader's own timeout would kill it; two of them hang in a visible test today: lesson 03's
``drop_wait`` and lesson 07's ``expand_region``). The solution runs first and again last in the
same child and must pass every test both times (it takes under 8 s), so neither the set-up nor
what the mutants left behind decides a verdict. Lesson 08's checks count (and unlink) every
segment new in ``/dev/shm``, which this child shares with the machine: its lesson holds the
tests' ``/dev/shm`` lock (:func:`tests.conftest.dev_shm_alone`), as its other unsandboxed tests do.
The whole benchmark (every mutant, through the real grader) is ``benchmarks/mutation_bench.py``;
``tests/benchmarks/test_mutation_bench.py`` grades lesson 00's subset through it.
"""

from __future__ import annotations

import contextlib

import pytest

from tests.benchmarks.hidden_checks import PASSED, grade_in_child
from tests.benchmarks.test_mutation_bench import LESSONS, one_per_operator
from tests.conftest import dev_shm_alone


@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("lesson", [lesson.name for lesson in LESSONS])
def test_the_lessons_hidden_checks_kill_one_mutant_of_each_operator(lesson):
    chosen = one_per_operator(lesson)
    assert chosen, f"{lesson}: no mutant to grade"
    with dev_shm_alone() if lesson == "08_processes" else contextlib.nullcontext():
        first, *graded, last = grade_in_child(
            lesson, [{}, *({m.grade_id: m.source} for m in chosen), {}])
    for when, reference in (("first", first), ("last", last)):
        assert isinstance(reference, dict) and set(reference.values()) == {PASSED}, (
            f"{lesson}: the solution, graded {when} in the child, lost a test: {reference}")
    survivors = [m.id for m, outcome in zip(chosen, graded, strict=True)
                 if isinstance(outcome, dict) and set(outcome.values()) == {PASSED}]
    assert not survivors, (f"{lesson}: the hidden checks let these mutants through (holes in "
                           f"the checks; report them, do not weaken this test): {survivors}")
