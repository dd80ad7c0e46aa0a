"""The package's layers: which part of ``autograder`` may import which, and folder sizes.

``kernel`` runs inside the student's kernel beside student code (the security boundary): it
imports only what runs there too (``harness``, ``checks``, ``lesson``), never the host's
``grading`` or ``course``. ``course`` knows lessons and nbgrader's course, not grading;
``grading`` runs on the host over both, with ``judges`` (pure Python, importing nothing of
ours), which decides each hidden check from what the kernel observed; the lab, the hub and
the command line sit on top.
"""

import ast
from pathlib import Path

import pytest

from tests.conftest import REPO

PACKAGE = REPO / "autograder"
#: Layer -> the other layers it may import (function-level imports included).
ALLOWED = {
    "harness": set(),
    "checks": {"harness", "lesson"},
    "lesson": {"harness"},
    "kernel": {"harness", "checks", "lesson"},
    "course": set(),
    "judges": set(),
    "grading": {"course", "kernel", "harness", "lesson", "autograder", "judges"},
    "lab": {"course", "grading"},
    "hub": {"lab", "course", "grading"},
    "cli": {"course", "grading", "lab", "hub"},
    "autograder": set(),
}
MAX_MODULES = 15


def layer_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "autograder":
        return None
    return parts[1] if len(parts) > 1 else "autograder"


def imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def source_layer(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return "autograder" if len(parts) == 2 and parts[1] == "__init__" else parts[1]


def test_layers_known():
    on_disk = {p.stem if p.suffix == ".py" else p.name for p in PACKAGE.iterdir()
               if p.name != "__pycache__" and (p.suffix == ".py" or p.is_dir())}
    assert on_disk - {"__init__"} <= set(ALLOWED), on_disk - set(ALLOWED)


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(
    p.relative_to(REPO)))
def test_no_import_runs_against_the_layers(path):
    here = source_layer(path)
    wrong = sorted(m for m in imports(path)
                   if (there := layer_of(m)) and there != here and there not in ALLOWED[here])
    assert not wrong, f"{path.relative_to(REPO)} ({here}) may not import {wrong}"


def test_the_kernel_package_imports_nothing_of_the_host():
    for path in (PACKAGE / "kernel").glob("*.py"):
        host = [m for m in imports(path) if layer_of(m) in {"grading", "course", "lab", "hub"}]
        assert not host, f"{path.name} runs beside student code but imports {host}"


def test_nothing_beside_student_code_imports_the_judge():
    for layer in ("kernel", "checks", "harness", "lesson"):
        for path in (PACKAGE / layer).rglob("*.py"):
            judge = [m for m in imports(path) if layer_of(m) == "judges"]
            assert not judge, f"{path.relative_to(REPO)} runs beside student code but imports " \
                              f"{judge}"


def test_no_folder_holds_more_than_fifteen_modules():
    for folder in [PACKAGE, *(p for p in PACKAGE.rglob("*") if p.is_dir())]:
        modules = [p for p in folder.glob("*.py") if p.name != "__init__.py"]
        assert len(modules) <= MAX_MODULES, f"{folder.relative_to(REPO)}: {len(modules)} modules"
