"""The harness names places as the student knows them."""

import subprocess
import sys

from autograder.harness.report import place_name

# In a process of its own: a global IPython shell would change how other tests display.
_IN_A_NOTEBOOK = """
from IPython.testing.globalipapp import start_ipython
from autograder.harness.report import error_location
shell = start_ipython()
shell.run_cell("def divide():\\n    return 1 / 0\\n")
shell.run_cell("try:\\n    divide()\\nexcept ZeroDivisionError as e:\\n    caught = e\\n")
print(error_location(shell.user_ns["caught"]))
"""


def test_a_notebook_cell_is_named_by_its_prompt_not_its_temporary_file():
    where = subprocess.run([sys.executable, "-c", _IN_A_NOTEBOOK], capture_output=True,
                           text=True, timeout=120, check=True).stdout.strip().splitlines()[-1]
    assert where.startswith("In [") and where.endswith(", line 2, in divide"), where
    assert ".py" not in where


def test_a_file_outside_a_notebook_is_named_by_its_base_name():
    assert place_name("/tmp/somewhere/module.py") == "module.py"
