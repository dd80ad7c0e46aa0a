"""Exercise 2 (``measure``): servers whose physics is known, and what a benchmark must say."""

from __future__ import annotations

import math
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

from autograder.checks.plain import NotPlainData, plain, plain_array
from autograder.checks.stress_tests.running import run_bounded
from autograder.checks.stress_tests.settings import CALLS, SLEEP_S, THREADS


def sleeper(seconds: float, lock: Any = None) -> Callable[[], None]:
    """A server whose every call sleeps ``seconds`` (holding ``lock`` when given one)."""
    def serve() -> None:
        if lock is None:
            time.sleep(seconds)
        else:
            with lock:
                time.sleep(seconds)
    return serve


def alternating(short_s: float, long_s: float) -> Callable[[], None]:
    """A server whose calls sleep ``short_s`` and ``long_s`` in turns (per thread)."""
    local = threading.local()

    def serve() -> None:
        turn = getattr(local, "turn", 0)
        local.turn = turn + 1
        time.sleep(long_s if turn % 2 else short_s)
    return serve


class Callers:
    """The threads that called a server (kept alive, so that two are never the same object)."""

    def __init__(self, serve: Callable[[], None]) -> None:
        self._serve = serve
        self._threads: dict[int, threading.Thread] = {}
        self._calls: dict[int, int] = {}

    def __call__(self) -> None:
        thread = threading.current_thread()
        self._threads.setdefault(id(thread), thread)
        with _COUNTING:
            self._calls[id(thread)] = self._calls.get(id(thread), 0) + 1
        self._serve()

    def __len__(self) -> int:
        return len(self._threads)

    def calls(self) -> list[int]:
        """How many times each calling thread called, most first."""
        with _COUNTING:
            return sorted(self._calls.values(), reverse=True)


_COUNTING = threading.Lock()


def measure_problems(measure: Callable[..., Any],
                     observed: dict | None = None) -> list[str]:
    """Run ``measure`` on servers of known physics; return what is wrong with its numbers.

    When ``observed`` is given, each server's numbers (``wall_s``, ``latencies_s`` and
    ``throughput``, as floats) are put in it under the server's name, for the judge.
    """
    problems: list[str] = []
    cases = {
        "overlapping sleeps": Callers(sleeper(SLEEP_S)),
        "sleeps behind one lock": Callers(sleeper(SLEEP_S, threading.Lock())),
        "calls of 1 ms and 12 ms in turns": Callers(alternating(0.001, 0.012)),
    }
    results: dict[str, dict[str, Any]] = {}
    for name, serve in cases.items():
        got: list[Any] = []
        verdict, detail, _ = run_bounded(
            lambda s=serve, g=got: g.append(measure(s, THREADS, CALLS)), 20.0)
        if verdict != "returned":
            return [f"measure(serve, {THREADS}, {CALLS}) on {name} {verdict} {detail}".strip()]
        call = f"measure: on {name}, measure(serve, {THREADS}, {CALLS})"
        result = plain(got[0], call)
        keys = {"wall_s", "latencies_s", "throughput"}
        if not isinstance(result, dict) or not keys <= set(result):
            return [f"measure returned {type(result).__name__}, expected a dict with keys "
                    "'wall_s', 'latencies_s' and 'throughput'"]
        wall = plain(result["wall_s"], f"{call}['wall_s']", float)
        latencies = _floats(result["latencies_s"], f"{call}['latencies_s']")
        throughput = plain(result["throughput"], f"{call}['throughput']", float)
        results[name] = {"wall_s": wall, "latencies_s": latencies, "throughput": throughput}
        if observed is not None:
            observed[name] = {"wall_s": wall, "latencies_s": latencies,
                              "throughput": throughput, "callers": len(serve),
                              "calls": serve.calls()}
        where = f"on {name} ({THREADS} threads x {CALLS} calls)"
        if len(serve) != THREADS:
            problems.append(f"{where}: serve() was called from {len(serve)} thread(s), expected "
                            f"{THREADS}: run calls times on each of threads threads, all at "
                            "once, whatever the number of cores (threads that wait on I/O or "
                            "a sleep overlap beyond it)")
            continue
        if serve.calls() != [CALLS] * THREADS:
            problems.append(f"{where}: expected serve() called {CALLS} times on each thread, "
                            f"saw {serve.calls()} calls per thread: run it calls times on each "
                            "of threads threads, each call timed (a call more, such as a "
                            "warm-up inside the timed run, changes the throughput)")
            continue
        if len(latencies) != THREADS * CALLS:
            problems.append(f"{where}: expected {THREADS * CALLS} latencies, one per call, "
                            f"saw {len(latencies)}")
            continue
        if not all(math.isfinite(number) for number in (wall, throughput, *latencies)):
            problems.append(f"{where}: expected finite numbers, saw wall_s={wall!r}, "
                            f"throughput={throughput!r} and latencies from {min(latencies)!r} "
                            f"to {max(latencies)!r}")
            continue
        if wall <= 0 or min(latencies) <= 0 or throughput <= 0:
            problems.append(f"{where}: expected every number positive, saw wall_s={wall:.4g}, "
                            f"smallest latency {min(latencies):.4g}, throughput {throughput:.4g}")
            continue
        if abs(throughput * wall / (THREADS * CALLS) - 1) > 0.02:
            problems.append(f"{where}: expected throughput = calls made / wall_s = "
                            f"{THREADS * CALLS / wall:.1f}/s, saw {throughput:.1f}/s")
        if max(latencies) > wall * 1.02:
            problems.append(f"{where}: one call took {max(latencies):.4f} s, longer than the "
                            f"whole run's wall_s {wall:.4f} s")
        if sum(latencies) > THREADS * wall * 1.05:
            problems.append(f"{where}: expected the latencies to add up to at most threads x "
                            f"wall_s = {THREADS * wall:.4f} s, saw {sum(latencies):.4f} s")
        if name != "calls of 1 ms and 12 ms in turns" and min(latencies) < SLEEP_S * 0.95:
            problems.append(f"{where}: a call that sleeps {SLEEP_S * 1000:.0f} ms, so expected "
                            f"every latency >= {SLEEP_S * 1000:.0f} ms, saw "
                            f"{min(latencies) * 1000:.2f} ms: time each call with a wall clock "
                            "(time.perf_counter)")
    if problems:
        return problems
    serial = THREADS * CALLS * SLEEP_S
    overlapped = results["overlapping sleeps"]["wall_s"]
    busy = sum(results["overlapping sleeps"]["latencies_s"])
    if overlapped > 0.6 * busy:
        problems.append(f"on overlapping sleeps: expected the {THREADS} threads to run at once, "
                        f"so wall_s well under the {busy:.3f} s the calls took in all, saw "
                        f"{overlapped:.3f} s: the threads ran one after another")
    locked = results["sleeps behind one lock"]["wall_s"]
    if locked < serial * 0.98:
        problems.append(f"on sleeps behind one lock: the calls cannot overlap, so expected "
                        f"wall_s >= {serial:.3f} s, saw {locked:.3f} s")
    lat = sorted(results["calls of 1 ms and 12 ms in turns"]["latencies_s"])
    if lat[-1] < 3 * lat[0]:
        problems.append("on calls of 1 ms and 12 ms in turns: expected a quarter or more of the "
                        f"latencies near 1 ms and the longest near 12 ms, saw shortest "
                        f"{lat[0] * 1000:.1f} ms, median {statistics.median(lat) * 1000:.1f} ms, "
                        f"longest {lat[-1] * 1000:.1f} ms: measure each call, not an average")
    return problems


def _floats(value: Any, what: str) -> list[float]:
    """``value`` (plain data: a list, tuple or 1-D array of numbers) as a list of floats."""
    array = plain_array(value, what)
    if array.ndim != 1:
        raise NotPlainData(f"{what} returned an array shaped {array.shape}; expected a list "
                           "of numbers")
    return [float(x) for x in array.tolist()]
