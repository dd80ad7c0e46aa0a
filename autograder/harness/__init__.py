"""Race detection for Race Lab: a controlled scheduler and a stress runner.

    explore(setup, workers, check, *, seed=0, max_schedules=500, timeout_s=60.0) -> Result
    replay(setup, workers, check, schedule) -> Result
    stress(setup, workers, check, *, trials=50, seed=0, timeout_s=60.0) -> Result

``explore`` finds races in Python code (one thread at a time, switching at instructions other
threads can see, replayable); ``stress`` finds races inside TF/Keras with real threads released
together. Both fail closed: a hang, an exhausted budget or tampering is never a pass.
"""

import sys as _sys

from . import (
    codemap,
    exploration,
    frames,
    primitives,
    report,
    result,
    runstate,
    scheduler,
    search,
    stress_runner,
    tamper,
    timeline,
    tracing,
    turns,
)
from .exploration import explore, replay
from .result import Result
from .stress_runner import stress

__all__ = ["Result", "explore", "replay", "stress"]

tamper.snapshot_harness([codemap, exploration, frames, primitives, report, result, runstate,
                         scheduler, search, stress_runner, tamper, timeline, tracing, turns])
tamper.snapshot_public(_sys.modules[__name__], __all__)
tamper.seal(_sys.modules[__name__], __all__)
