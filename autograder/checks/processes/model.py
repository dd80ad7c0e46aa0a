"""The exercise's model: its weights, the graded requests and the answers a worker gives."""

from __future__ import annotations

import random
from collections.abc import Sequence
from functools import cache

import numpy as np

from autograder.checks import process_workers
from autograder.checks.processes.settings import (
    EMBEDDING_SHAPES,
    POOL_REQUESTS_EACH,
    POOL_THREADS,
    TOKENS_PER_REQUEST,
    VOCABULARY,
)


@cache
def embedding_weights(seed: int = 0) -> tuple[np.ndarray, ...]:
    """The exercise's model weights: ``table``, ``kernel``, ``bias`` (float32, about 24 MB)."""
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal(shape, dtype=np.float32) for shape in EMBEDDING_SHAPES)


def request_tokens(count: int, seed: int = 0) -> list[tuple[int, ...]]:
    """``count`` requests of :data:`TOKENS_PER_REQUEST` token ids each, drawn from ``seed``."""
    rng = random.Random(seed)
    return [tuple(rng.randrange(VOCABULARY) for _ in range(TOKENS_PER_REQUEST))
            for _ in range(count)]


def reference_output(tokens: Sequence[int], weights: Sequence[np.ndarray] | None = None
                     ) -> tuple[float, ...]:
    """What a worker answers for ``tokens`` (the same code, run here)."""
    arrays = weights if weights is not None else embedding_weights()
    views = [memoryview(np.ascontiguousarray(a)).cast("B").cast("f") for a in arrays]
    return process_workers.embedding_predict(views, EMBEDDING_SHAPES, tokens)


@cache
def _graded_requests() -> tuple[tuple[tuple[int, ...], ...], tuple[tuple[float, ...], ...]]:
    tokens = request_tokens(POOL_THREADS * POOL_REQUESTS_EACH, seed=8)
    return tuple(tokens), tuple(reference_output(t) for t in tokens)
