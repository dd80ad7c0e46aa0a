"""The checks' caches of reference outputs and warm models, out of an answer's reach.

A check compares an answer against outputs it computed itself, on models it built once per
process (building them again for every graded run would cost seconds). Kept in module
globals, an answer could fill them in advance with what it will return, or change a stored
array or model pool in place. Here each cache lives in a closure behind
:func:`autograder.harness.tamper.private_memo`: the grader's functions get the stored value,
any other caller a freshly built one, and stored arrays are read-only for good.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from autograder.harness import tamper

#: The autograder package: its checks and harness are the only callers a cache answers.
GRADER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def memo(what: str) -> Callable[[Any, Callable[[], Any]], Any]:
    """A cache ``memo(key, build)`` for one kind of reference, named ``what`` for the student."""
    return tamper.private_memo((GRADER_DIR,), what)


def frozen(array: Any) -> np.ndarray:
    """``array`` as a read-only copy that can never be made writable again.

    Its memory is an immutable ``bytes`` object, so ``flags.writeable = True`` raises.
    """
    array = np.asarray(array)
    return np.frombuffer(array.tobytes(), dtype=array.dtype).reshape(array.shape)
