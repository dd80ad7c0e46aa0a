"""The notebook's demonstrations: cold starts in child processes, the designs measured and drawn."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from autograder.checks.capstone.cold_start import run_cold_start
from autograder.checks.capstone.settings import SEED, TIMEOUT_S
from autograder.checks.capstone.throughput import Measurement, benchmark
from autograder.checks.child import Crashed, run_in_children
from autograder.harness import Result


@dataclass
class ColdStarts:
    """What :func:`cold_start_trials` saw.

    Attributes:
        trials: Trials run.
        failed: Trials that failed (a crashed process included).
        crashed: Trials in which TensorFlow ended the whole (child) process.
        messages: The first line of each failure's explanation.
        first_failure: The harness result of the first failing trial that did not crash (its
            ``figure()`` shows the client threads), else ``None``.
    """

    trials: int = 0
    failed: int = 0
    crashed: int = 0
    messages: list[str] = field(default_factory=list)
    first_failure: Result | None = None


def cold_start_trials(service_class: Callable[..., Any], *, trials: int, seed: int = 0
                      ) -> ColdStarts:
    """Run ``trials`` one-trial cold starts of ``service_class``, each in a child process.

    A cold model raced from threads can crash TensorFlow itself; in a child process that is
    one failed trial, not the end of the notebook's kernel. ``service_class`` must be defined
    in a module (like :class:`DirectService`).
    """
    outcomes = run_in_children(_one_cold_start, [(service_class, s) for s in
                                                 range(seed, seed + trials)],
                               trial_timeout_s=2 * TIMEOUT_S + 30)
    starts = ColdStarts(trials=len(outcomes))
    for outcome in outcomes:
        if isinstance(outcome, Crashed):
            starts.crashed += 1
            starts.messages.append(str(outcome))
        elif outcome.verdict != "pass":
            starts.messages.append(outcome.message.splitlines()[0])
            starts.first_failure = starts.first_failure or outcome
        else:
            continue
        starts.failed += 1
    return starts


def _one_cold_start(service_class: Callable[..., Any], seed: int) -> Result:
    return run_cold_start(service_class, trials=1, seed=seed)


def compare_designs(designs: dict[str, Callable[..., Any]], client_counts: Sequence[int], *,
                    requests: int = 30, seed: int = SEED) -> list[Measurement]:
    """:func:`benchmark` every design at every client count, with memory counted."""
    results = []
    for name, service_class in designs.items():
        benchmark(service_class, 2, requests=2, seed=seed)
        for clients in client_counts:
            results.append(benchmark(service_class, clients, requests=requests, design=name,
                                     seed=seed, memory=True))
    return results


def plot_designs(results: Sequence[Measurement]) -> Any:
    """Requests/s, p50 and p99 latency and extra weight memory against clients, per design."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(11, 3.2), layout="constrained")
    axes = figure.subplots(1, 4)
    designs = list(dict.fromkeys(m.design for m in results))
    panels = [("requests / s", lambda m: m.rate), ("p50 latency (ms)", lambda m: m.p50_ms),
              ("p99 latency (ms)", lambda m: m.p99_ms),
              ("extra weight bytes", lambda m: m.extra_bytes or 0)]
    for ax, (title, value) in zip(axes, panels, strict=True):
        for design in designs:
            mine = [m for m in results if m.design == design]
            ax.plot([m.clients for m in mine], [value(m) for m in mine], marker="o",
                    label=design)
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted({m.clients for m in results}),
                      [str(c) for c in sorted({m.clients for m in results})])
        ax.set_xlabel("clients")
        ax.set_title(title, fontsize=10)
    axes[0].legend(fontsize=8)
    return figure


def table(results: Sequence[Measurement]) -> str:
    """The measurements as aligned text, one line per design and client count."""
    lines = [f"{'design':<18}{'clients':>8}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}"
             f"{'extra weight bytes':>20}"]
    for m in results:
        extra = "-" if m.extra_bytes is None else str(m.extra_bytes)
        lines.append(f"{m.design:<18}{m.clients:>8}{m.rate:>9.0f}{m.p50_ms:>9.2f}"
                     f"{m.p99_ms:>9.2f}{extra:>20}")
    return "\n".join(lines)
