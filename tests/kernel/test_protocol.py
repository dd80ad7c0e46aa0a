"""The names that cross the kernel's boundary are the ones :mod:`autograder.kernel.protocol`
gives, on both sides."""

import ast
import inspect

from autograder.grading import cells, execute, scoring
from autograder.harness import tamper
from autograder.kernel import protocol, runner


def event_kinds_sent_by(module) -> set[str]:
    """Every ``"t"`` value of a dict literal in the module's source."""
    kinds = set()
    for node in ast.walk(ast.parse(inspect.getsource(module))):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value == protocol.KIND:
                    assert isinstance(value, ast.Constant), ast.unparse(node)
                    kinds.add(value.value)
    return kinds


def test_the_runner_sends_exactly_the_protocols_event_kinds():
    assert event_kinds_sent_by(runner) == set(protocol.RUNNER_EVENTS)


def test_the_host_reads_the_protocols_kinds_and_makes_only_its_own():
    source = inspect.getsource(execute)
    assert "kind == \"" not in source and "kind not in (\"" not in source, (
        "execute compares an event kind with a literal instead of protocol's name")
    assert event_kinds_sent_by(execute) == set()  # it builds its own with protocol's names


def test_the_plan_and_the_tamper_phrase_are_the_protocols():
    assert cells.RUNNER_KEYS == protocol.PLAN_CELL_KEYS
    assert scoring.TAMPER_PHRASE == protocol.TOOLS_REPLACED
    assert protocol.TOOLS_REPLACED in tamper.message(["a lock was replaced"])
    assert set(protocol.RUNNER_EVENTS).isdisjoint(protocol.HOST_EVENTS)
