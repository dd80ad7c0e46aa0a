"""The suite's watchdog: a test stuck holding the GIL is shown and ended, and the suite goes on."""

import subprocess
import sys

from tests.conftest import REPO

_STUCK = '''
import ctypes


def test_stuck_in_c_holding_the_gil():
    ctypes.PyDLL(None).sleep(120)  # a PyDLL call keeps the GIL, as the hung finalizer did


def test_next():
    assert True
'''


def test_a_test_stuck_holding_the_gil_is_shown_failed_and_the_suite_goes_on(tmp_path):
    (tmp_path / "test_stuck.py").write_text(_STUCK, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.watchdog", "-p", "no:cacheprovider",
         "-p", "no:timeout", "-o", "addopts=", "-n", "2", "--rootdir", str(tmp_path),
         str(tmp_path / "test_stuck.py")],
        cwd=REPO, capture_output=True, text=True, timeout=100,
        env={"PATH": "/usr/bin:/bin", "RACELAB_HANG_S": "5"})
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "Timeout (0:00:05)!" in output, output
    assert 'test_stuck.py", line 6 in test_stuck_in_c_holding_the_gil' in output, output
    assert "crashed while running 'test_stuck.py::test_stuck_in_c_holding_the_gil'" in output
    assert "1 failed, 1 passed" in output, output
