"""Exercise 3's cases: the grader's made-up measurements and the lesson's rule for ``choose``."""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass

from autograder.checks.processes.settings import MARGIN


@dataclass(frozen=True)
class DesignRun:
    """One design measured in paired rounds.

    Attributes:
        per_second: Requests per second in each round (round ``i`` of two designs measured a
            moment apart).
        memory_mb: Memory of the whole design.
    """

    per_second: tuple[float, ...]
    memory_mb: float


def reference_choice(threads: DesignRun, processes: DesignRun, memory_budget_mb: float) -> str:
    """The lesson's rule (what ``choose`` must return).

    Processes when they fit the memory budget and the median of the paired per-round ratios
    (``processes.per_second[i] / threads.per_second[i]``) is at least :data:`MARGIN`; the
    median of an even number of rounds is the mean of the two middle ratios (as
    ``statistics.median`` and ``numpy.median`` compute it). Otherwise threads.
    """
    if processes.memory_mb > memory_budget_mb:
        return "threads"
    ratios = [p / t for p, t in zip(processes.per_second, threads.per_second, strict=True)]
    return "processes" if statistics.median(ratios) >= MARGIN else "threads"


#: Tables at the rule's edges: the ratio exactly at the margin, an even number of rounds, a
#: best (or worst) round far from the median. Where the median is exactly the margin it is
#: 1.2 as a float however an answer computes it (``p / t`` of these rates is the float 1.2 or
#: 1.0 and 1.4, whose mean, or 1.0 plus half their difference, is 1.2 again); the other
#: medians are far from it. These cases test the rule, never rounding.
_EDGES = [
    ("processes exactly 20 % faster in every round (\"at least 20 % more\" includes 20 %)",
     DesignRun((100.0, 100.0, 100.0), 700.0), DesignRun((120.0, 120.0, 120.0), 1500.0), 4000.0),
    ("processes exactly 20 % faster in every round, at three different speeds",
     DesignRun((50.0, 200.0, 80.0), 700.0), DesignRun((60.0, 240.0, 96.0), 1500.0), 4000.0),
    ("4 rounds whose two middle ratios are 1.1 and 1.25 (median 1.175)",
     DesignRun((100.0, 100.0, 100.0, 100.0), 700.0),
     DesignRun((130.0, 100.0, 125.0, 110.0), 1500.0), 4000.0),
    ("4 rounds whose two middle ratios are 1.15 and 1.3 (median 1.225)",
     DesignRun((100.0, 100.0, 100.0, 100.0), 700.0),
     DesignRun((115.0, 140.0, 100.0, 130.0), 1500.0), 4000.0),
    ("4 rounds whose two middle ratios are 1.0 and 1.4 (median exactly 1.2)",
     DesignRun((100.0, 100.0, 100.0, 100.0), 700.0),
     DesignRun((140.0, 100.0, 140.0, 100.0), 1500.0), 4000.0),
    ("6 rounds whose two middle ratios are 1.0 and 1.3 (median 1.15)",
     DesignRun((100.0, 100.0, 100.0, 100.0, 100.0, 100.0), 700.0),
     DesignRun((90.0, 130.0, 100.0, 150.0, 160.0, 95.0), 1500.0), 4000.0),
    ("one round where processes were 1.8x faster, the others about even",
     DesignRun((100.0, 100.0, 100.0, 100.0, 100.0), 700.0),
     DesignRun((101.0, 99.0, 180.0, 100.0, 102.0), 1500.0), 4000.0),
    ("processes 1.5x faster in every round but the one with the most requests per second",
     DesignRun((100.0, 100.0, 300.0, 100.0, 100.0), 700.0),
     DesignRun((150.0, 150.0, 310.0, 150.0, 150.0), 1500.0), 4000.0),
    ("ratios 1.0, 1.0, 1.21, 1.3, 1.3: the median is 1.21, the mean without the best and "
     "the worst round 1.17",
     DesignRun((100.0, 100.0, 100.0, 100.0, 100.0), 700.0),
     DesignRun((100.0, 130.0, 121.0, 100.0, 130.0), 1500.0), 4000.0),
    ("processes 1.196x faster in every round (a median under 1.2, however close)",
     DesignRun((100.0, 200.0, 50.0), 700.0), DesignRun((119.6, 239.2, 59.8), 1500.0), 4000.0),
    ("rounds whose paired ratios are 3.9, 0.65 and 0.87 (median 0.87; sorting each design's "
     "rounds apart would pair them 1.3, 1.3, 1.3)",
     DesignRun((100.0, 200.0, 300.0), 700.0), DesignRun((390.0, 130.0, 260.0), 1500.0), 4000.0),
]


def choice_cases(seed: int = 8) -> list[tuple[str, DesignRun, DesignRun, float]]:
    """The grader's measurements: (what they test, threads, processes, memory budget)."""
    cases = [
        ("processes 1.8x faster and within budget",
         DesignRun((100.0, 104.0, 98.0, 101.0, 99.0), 900.0),
         DesignRun((181.0, 186.0, 178.0, 183.0, 180.0), 2100.0), 4000.0),
        ("processes 1.8x faster but over the memory budget",
         DesignRun((100.0, 104.0, 98.0, 101.0, 99.0), 900.0),
         DesignRun((181.0, 186.0, 178.0, 183.0, 180.0), 2100.0), 2000.0),
        ("processes only 10 % faster",
         DesignRun((200.0, 210.0, 190.0, 205.0, 195.0), 700.0),
         DesignRun((221.0, 230.0, 208.0, 226.0, 214.0), 1500.0), 4000.0),
        ("one round where a burst of other work hit threads",
         DesignRun((100.0, 101.0, 20.0, 99.0, 100.0), 700.0),
         DesignRun((104.0, 103.0, 101.0, 102.0, 105.0), 1500.0), 4000.0),
        ("one round where a burst of other work hit processes",
         DesignRun((100.0, 101.0, 99.0, 100.0, 102.0), 700.0),
         DesignRun((160.0, 158.0, 20.0, 161.0, 157.0), 1500.0), 4000.0),
        ("the machine's speed changed from round to round (pair the rounds)",
         DesignRun((100.0, 90.0, 80.0, 40.0, 30.0), 700.0),
         DesignRun((150.0, 140.0, 60.0, 60.0, 40.0), 1500.0), 4000.0),
        ("threads faster", DesignRun((150.0, 152.0, 149.0), 800.0),
         DesignRun((90.0, 91.0, 92.0), 1200.0), 4000.0),
        ("processes exactly at the memory budget and 1.5x faster",
         DesignRun((100.0, 100.0, 100.0), 800.0), DesignRun((150.0, 150.0, 150.0), 3000.0),
         3000.0),
        *_EDGES,
    ]
    rng = random.Random(seed)
    for k in range(24):
        rounds = rng.choice((3, 4, 5, 6, 7))
        base = [rng.uniform(50, 400) for _ in range(rounds)]
        speedup = rng.choice((0.6, 0.9, 1.05, 1.1, 1.35, 1.6, 2.2))
        noise = [rng.uniform(0.97, 1.03) for _ in range(rounds)]
        threads = DesignRun(tuple(round(b, 2) for b in base), round(rng.uniform(300, 900), 1))
        rates = tuple(round(b * speedup * n, 2) for b, n in zip(base, noise, strict=True))
        processes = DesignRun(rates, round(rng.uniform(600, 4000), 1))
        cases.append((f"made-up measurement {k}", threads, processes,
                      float(rng.choice((1000, 2000, 3000, 5000)))))
    return cases
