"""What counts as user code, which instructions are decision points, and stack peeking."""

import os
import sys
import tempfile
import threading

import pytest

from autograder.harness import codemap, frames

STDLIB = os.path.dirname(os.__file__)


@pytest.mark.parametrize("filename, kind", [
    ("/tmp/ipykernel_4242/1234567890.py", codemap.USER),  # a notebook cell
    ("<ipython-input-3-abc>", codemap.USER),
    ("/home/student/answer.py", codemap.USER),
    (os.path.join(STDLIB, "json", "__init__.py"), codemap.LIBRARY),
    (threading.__file__, codemap.PLUMBING),
    ("<frozen importlib._bootstrap>", codemap.LIBRARY),
    (codemap.__file__, codemap.LIBRARY),  # the harness itself
    # Decided by where the file is, never by a word in its name or a folder's.
    ("/somewhere/site-packages/keras/src/models/model.py", codemap.USER),
    ("/tmp/work/site-packages/answer.py", codemap.USER),
    ("/tmp/work/dist-packages/answer.py", codemap.USER),
    # Autograph's converted copy of a student's function is the student's code.
    ("/tmp/__autograph_generated_filexyz.py", codemap.USER),
    # A sys.path entry with ``..`` in it names a library folder for a file elsewhere.
    (os.path.join(STDLIB, "..", "..", "..", "tmp", "work", "answer.py"), codemap.USER),
    (os.path.join(STDLIB, ".", "json", "__init__.py"), codemap.USER),
    ("json/__init__.py", codemap.USER),  # relative: resolved against a folder that can change
])
def test_code_is_classified_by_where_it_lives(filename, kind):
    assert codemap.kind_of_file(filename) == kind


def test_the_library_folders_are_the_installed_ones_as_written_and_as_real_paths():
    prefixes = codemap.library_prefixes()
    assert all(prefix.endswith(os.sep) for prefix in prefixes)
    assert os.path.join(os.path.realpath(STDLIB), "") in prefixes
    assert os.path.join(os.path.dirname(os.path.realpath(codemap.__file__)), "") in prefixes
    # The temporary folder (where autograph writes code made from the student's functions) is
    # never library code, wherever the repository itself is checked out (CI clones under /tmp).
    assert os.path.join(os.path.realpath(tempfile.gettempdir()), "") not in prefixes


def test_installed_packages_are_library_code():
    import matplotlib

    assert codemap.kind_of_file(matplotlib.__file__) == codemap.LIBRARY


def _locals_only(a, b):
    total = a + b
    pair = (total, a)
    return pair


def _shared(state):
    state.count += 1


def _categories(function):
    return [op[0] for op in codemap.info(function.__code__).ops if op is not None]


def test_instructions_on_locals_are_not_decision_points():
    assert set(_categories(_locals_only)) <= {codemap.OPERANDS}


def test_reads_and_writes_of_shared_state_are_decision_points():
    categories = _categories(_shared)
    assert codemap.ATTR in categories and codemap.VISIBLE in categories


@pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="frame layout known for 3.11")
def test_frames_can_read_the_object_a_with_statement_enters():
    assert frames.AVAILABLE
    assert frames._self_test()


def test_equal_code_from_different_files_is_classified_separately():
    source = "def f(state):\n    state.n += 1\n"
    user = compile(source, "/home/student/answer.py", "exec").co_consts[0]
    library = compile(source, os.path.join(STDLIB, "lib.py"), "exec").co_consts[0]
    assert user == library  # code equality ignores the file name
    assert codemap.info(library).kind == codemap.LIBRARY
    assert codemap.info(user).kind == codemap.USER


def test_code_under_test_cannot_make_its_own_code_invisible():
    """The infos are immutable, and the cache behind them answers only the harness's code:
    asking for it from here (as a notebook would) is refused and remembered."""
    from autograder.harness import tamper

    shared = {"count": 0}

    def racy():
        shared["count"] += 1

    found = codemap.info(racy.__code__)
    assert found.kind == codemap.USER and any(op is not None for op in found.ops)
    with pytest.raises(AttributeError):
        found.kind = codemap.LIBRARY
    with pytest.raises(AttributeError):
        object.__setattr__(found, "kind", codemap.LIBRARY)
    try:
        with pytest.raises(PermissionError):
            codemap.harness_cache()
        assert any("code map" in problem for problem in tamper.problems())
    finally:
        tamper._attempts.clear()
    assert codemap.info(racy.__code__) is found
