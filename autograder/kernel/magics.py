"""IPython syntax in a plain-Python grading runner: translated at compile time, run by a shim.

Lesson and student cells may use IPython's line and cell magics (``%matplotlib inline``,
``%time``). The runner is not IPython (so that no input or AST transformer can be installed by
a notebook), so it translates each cell with IPython's own :class:`TransformerManager` before
any student code runs, and binds ``get_ipython`` to :class:`GradingShell`, which runs the few
magics a graded notebook needs and refuses the rest with a clear error.
"""

from __future__ import annotations

import time
from typing import Any


def to_python(source: str) -> str:
    """The cell's source with IPython syntax (magics, ``!`` commands) as plain Python calls."""
    if "%" not in source and "!" not in source and "?" not in source:
        return source
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager().transform_cell(source)


class MagicUnavailable(RuntimeError):
    """A magic that the grading runner does not run."""


class GradingShell:
    """What ``get_ipython()`` returns in a grading runner: magics only, no transformers.

    Args:
        namespace: The notebook's globals, where ``%time`` runs its statement.
    """

    _QUIET = frozenset({"matplotlib", "config", "load_ext", "autoreload", "reload_ext"})

    def __init__(self, namespace: dict):
        self._namespace = namespace

    def run_line_magic(self, name: str, line: str, _stack_depth: int = 1) -> Any:
        """Run ``%name line``: display settings are ignored, ``%time`` runs its statement."""
        if name in self._QUIET:
            return None
        if name in ("time", "timeit"):
            started = time.perf_counter()
            exec(compile(line, "<magic>", "exec"), self._namespace)  # noqa: S102
            print(f"Wall time: {time.perf_counter() - started:.3f} s")
            return None
        raise MagicUnavailable(f"%{name} is not available when the grader runs a notebook")

    def run_cell_magic(self, name: str, line: str, cell: str) -> Any:
        """Run ``%%name``: ``%%time``/``%%timeit`` run the cell once; others are refused."""
        if name in ("time", "timeit", "capture"):
            return self.run_line_magic("time", cell)
        raise MagicUnavailable(f"%%{name} is not available when the grader runs a notebook")

    def system(self, command: str) -> None:
        """``!command``: refused (the sandbox has no shell tools worth grading)."""
        raise MagicUnavailable("shell commands (!) are not available when the grader runs a "
                               "notebook")

    getoutput = system
