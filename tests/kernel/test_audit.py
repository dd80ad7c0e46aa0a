"""The kernel's audit helpers: trusted folders, builtins written while graded code ran, and
libraries the checks import inside their functions."""

import builtins
import json
import os
import sys
import tempfile
import types

from autograder.kernel import audit


def test_trusted_roots_hold_the_standard_library_and_the_grader_not_the_temporary_folder():
    roots = audit.trusted_roots()
    assert any(os.path.join(os.path.dirname(json.__file__), "").startswith(r) for r in roots)
    assert any(os.path.join(os.path.dirname(audit.__file__), "").startswith(r) for r in roots)
    assert not any(os.path.join(tempfile.gettempdir(), "").startswith(r) for r in roots)


def test_a_builtin_swapped_and_put_back_is_still_named():
    written = audit.watch_builtins()
    assert written() == []
    real = builtins.sum
    builtins.sum = lambda *args: 0
    builtins.sum = real
    found = written()
    assert found and all("builtin" in line for line in found), found
    assert written() == []  # each write is named once


def test_libraries_imported_inside_a_checks_functions_are_found():
    module = types.ModuleType("a_check")
    exec("def check():\n    import json\n    from os import path\n    import autograder\n",
         vars(module))
    found = audit.imported_in_functions([module])
    assert all(any(m is sys.modules[name] for m in found) for name in ("json", "os", "os.path"))
    assert not any(m.__name__.startswith("autograder") for m in found)
