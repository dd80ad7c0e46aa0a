"""Part 1, cold start: a never-called model served to clients released together (stress)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from autograder.checks import warmup
from autograder.checks.capstone.clients import _close_quietly
from autograder.checks.capstone.models import (
    _answer,
    _row,
    reference_outputs,
    requests_for,
    same_answer,
    serving_model,
)
from autograder.checks.capstone.settings import CLIENTS, COLD_REQUESTS, COLD_TRIALS, SEED, TIMEOUT_S
from autograder.checks.kit import describe_error
from autograder.harness import Result, stress


@dataclass
class ColdTrial:
    model: Any
    service: Any
    rows: list[list[np.ndarray]]
    expected: list[np.ndarray]
    outputs: list[list[Any]]
    errors: list[str] = field(default_factory=list)


def run_cold_start(service_class: Callable[..., Any], *, trials: int = COLD_TRIALS,
                   clients: int = CLIENTS, seed: int = SEED,
                   record: list[ColdTrial] | None = None,
                   observed: list | None = None) -> Result:
    """Per trial: a never-called model, a new service, ``clients`` clients released together.

    Each client sends :data:`COLD_REQUESTS` requests of its own. A trial passes when no client
    raised, every answer equals the model's output for that client's row, and the model holds
    exactly :data:`autograder.checks.warmup.EXPECTED_WEIGHTS` weights. When ``observed`` is
    given, each trial that passes appends what it saw (for the judge): the model's number of
    weights, and every answer (client by client, None for none) with the model's output for
    its row, in the same order.
    """
    counter = iter(range(10**6))

    def setup() -> ColdTrial:
        trial_seed = seed + 101 * next(counter)
        rows = requests_for(trial_seed, clients, COLD_REQUESTS)
        flat = [x for mine in rows for x in mine]
        expected = list(reference_outputs(trial_seed, flat))
        model = serving_model(trial_seed)
        trial = ColdTrial(model, None, rows, expected, [[None] * COLD_REQUESTS
                                                        for _ in range(clients)])
        if record is not None:
            record.append(trial)
        trial.service = service_class(model, rows[0][0].copy())
        return trial

    def worker_for(k: int) -> Callable[[ColdTrial], None]:
        def worker(trial: ColdTrial) -> None:
            for i, x in enumerate(trial.rows[k]):
                try:
                    trial.outputs[k][i] = _answer(trial.service.predict(x))
                except Exception as error:
                    trial.errors.append(describe_error(error))
                    raise
        return worker

    def check(trial: ColdTrial) -> None:
        try:
            problems = []
            if len(trial.model.weights) != warmup.EXPECTED_WEIGHTS:
                problems.append(
                    f"the model holds {len(trial.model.weights)} weights after serving, "
                    f"expected {warmup.EXPECTED_WEIGHTS}: several threads built it at once "
                    "and created its weights twice (warm it on one thread before serving)")
            for k, outputs in enumerate(trial.outputs):
                for i, output in enumerate(outputs):
                    expected = trial.expected[k * COLD_REQUESTS + i]
                    if not same_answer(output, expected):
                        problems.append(
                            f"client {k}'s request {i} got {np.round(np.asarray(output), 4)}"
                            f", expected {np.round(expected, 4)} (the model's output for "
                            "that client's own row)")
                        break
                if len(problems) > 1:
                    break
            if problems:
                raise AssertionError("; ".join(problems))
            if observed is not None:
                observed.append({
                    "weights": len(trial.model.weights),
                    "outputs": [_row(output) for outputs in trial.outputs for output in outputs],
                    "expected": [_row(expected) for expected in trial.expected]})
        finally:
            _close_quietly(trial.service)

    return stress(setup, [worker_for(k) for k in range(clients)], check, trials=trials,
                  seed=seed, timeout_s=TIMEOUT_S)
