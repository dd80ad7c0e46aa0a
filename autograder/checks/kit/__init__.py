"""The primitives every lesson's checks share, public and tested on their own.

- :mod:`~autograder.checks.kit.threads`: threads released together at a barrier
  (:func:`released_together`, :func:`run_together`, :func:`run_threads`), and how many calls
  ran at once (:class:`Overlap`);
- :mod:`~autograder.checks.kit.deadline`: a call with a deadline (:func:`within`,
  :func:`bounded`) and an answer's first run alone on one thread (:func:`smoke`);
- :mod:`~autograder.checks.kit.verdict`: one wording for a verdict (:func:`require`, over
  :func:`require_ok`; :func:`failure` for a check's own message), and how a call reads in a
  notebook (:func:`call_text`); each failing verdict carries its failure signature
  (:mod:`~autograder.checks.kit.signature`); a passing check hands its raw observations to the
  host's judge (:func:`report`);
- :mod:`~autograder.checks.kit.describe`: an exception as one informative line
  (:func:`describe_error`) and where threads are stuck (:func:`describe_threads`);
- :mod:`~autograder.checks.kit.memory`: the bytes Keras holds (:func:`keras_variable_bytes`).

Values an answer returns are read as plain data by :mod:`autograder.checks.plain`.
"""

from __future__ import annotations

from autograder.checks.kit.deadline import SMOKE_TIMEOUT_S, Outcome, bounded, smoke, within
from autograder.checks.kit.describe import describe_error, describe_threads
from autograder.checks.kit.eager import functions_run_eagerly
from autograder.checks.kit.memory import keras_variable_bytes
from autograder.checks.kit.threads import (
    JoinProbe,
    Overlap,
    alive_since,
    joining,
    released_together,
    run_threads,
    run_together,
    waiting_for_another,
    waiting_for_room,
)
from autograder.checks.kit.verdict import (
    call_text,
    explored_report,
    failure,
    report,
    require,
    require_ok,
)

__all__ = [
    "JoinProbe", "Overlap", "SMOKE_TIMEOUT_S", "Outcome", "alive_since", "bounded", "call_text",
    "describe_error",
    "describe_threads",
    "explored_report",
    "failure", "functions_run_eagerly", "keras_variable_bytes", "released_together", "report",
    "require", "require_ok",
    "joining", "run_threads", "run_together", "smoke", "waiting_for_another",
    "waiting_for_room", "within",
]
