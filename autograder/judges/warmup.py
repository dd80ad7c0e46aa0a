"""Lesson 01's judge: warm models served from threads, a shared predictor and a lazy model,
from what every trial's threads did."""

from __future__ import annotations

import math

from autograder.judges import Rejected, expect, explored, field, items

#: Weights of the graded model (two kernels, two biases) and its output width.
EXPECTED_WEIGHTS = 4
OUTPUT_UNITS = 4
#: Worker threads per trial, and trials per graded check (``autograder.checks.warmup``).
THREADS = 6
TRIALS_ENTRY_POINT = 3
TRIALS_BOTH_ENTRY_POINTS = 3
TRIALS_SHARED_PREDICTOR = 5
TRIALS_LAZY_MODEL = 4
#: Samples the lazy model's exploration runs after its bounded search; its cap.
LAZY_SAMPLES = 20
LAZY_SCHEDULES = 2000
#: The shared predictor's explored run: threads, seeded samples after the bound, and its cap.
SHARED_EXPLORE_THREADS = 2
SHARED_SAMPLES = 20
SHARED_SCHEDULES = 2000
#: The tolerance a thread's output is compared with the one-thread reference (np.allclose).
RTOL, ATOL = 1e-4, 1e-5


def _close(got: list, want: list) -> bool:
    """np.allclose(got, want, rtol=RTOL, atol=ATOL) on equal-shaped nested lists of floats."""
    if type(got) is not list or type(want) is not list or len(got) != len(want):
        return False
    for row, wanted_row in zip(got, want, strict=True):
        if type(row) is not list or type(wanted_row) is not list or len(row) != len(wanted_row):
            return False
        for value, wanted in zip(row, wanted_row, strict=True):
            if type(value) is not float or type(wanted) is not float:
                return False
            if not (math.isfinite(value) and abs(value - wanted) <= ATOL + RTOL * abs(wanted)):
                return False
    return True


def _trials(seen: dict, count: int) -> list[dict]:
    runs = field(seen, "schedules_run", int)
    expect(runs == count, f"{runs} trials ran, not the graded {count}")
    return items(seen, "trials", dict, at_least=count, at_most=count)


def _served_right(number: int, trial: dict) -> None:
    """Every thread answered, without an error, what the model gives on one thread, and the
    model holds its weights once."""
    expect(field(trial, "errors", int) == 0, f"trial {number}: a thread raised")
    expect(field(trial, "weights", int) == EXPECTED_WEIGHTS,
           f"trial {number}: the model holds {trial['weights']} weights, not "
           f"{EXPECTED_WEIGHTS}")
    outputs = items(trial, "outputs", (list, type(None)), at_least=THREADS, at_most=THREADS)
    expected = items(trial, "expected", list, at_least=THREADS, at_most=THREADS)
    for worker, (got, want) in enumerate(zip(outputs, expected, strict=True)):
        expect(got is not None and want and len(want[0]) == OUTPUT_UNITS and _close(got, want),
               f"trial {number}: worker {worker}'s output is not the one-thread reference")


def _served_warm(seen: dict, count: int) -> None:
    for number, trial in enumerate(_trials(seen, count), 1):
        _served_right(number, trial)
        expect(field(trial, "intact", bool) is True,
               f"trial {number}: the model's trace log was taken off")
        others = field(trial, "warm_threads", int)
        expect(others == 0, f"trial {number}: {others} other thread(s) traced the model during "
                            "the warm-up")
        traced = max(field(trial, "traces", int), field(trial, "function_traces", int))
        expect(traced == 0, f"trial {number}: the predict function was traced {traced} "
                            "time(s) while serving; a warm model traces 0 times")


def check_entry_point(seen: dict) -> None:
    """Warm before threading: nothing traced while serving, right outputs, weights once."""
    _served_warm(seen, TRIALS_ENTRY_POINT)


def check_both_entry_points(seen: dict) -> None:
    """Both entry points warmed: nothing traced while serving either, right outputs."""
    _served_warm(seen, TRIALS_BOTH_ENTRY_POINTS)


def check_shared_predictor(seen: dict) -> None:
    """One thread traced, no more often than one first call does, and right outputs; in every
    explored schedule of the cold stand-in model, one first call, none during it, and every
    thread answered."""
    first_call = field(seen, "first_call_traces", int)
    expect(1 <= first_call <= 2, f"one first call traced {first_call} times")
    for number, trial in enumerate(_trials(seen, TRIALS_SHARED_PREDICTOR), 1):
        _served_right(number, trial)
        expect(field(trial, "intact", bool) is True,
               f"trial {number}: the model's trace log was taken off")
        threads = field(trial, "tracing_threads", int)
        expect(threads <= 1, f"trial {number}: {threads} threads traced the predict function")
        traces = field(trial, "traces", int)
        expect(traces <= first_call, f"trial {number}: traced {traces} times, more than one "
                                     f"first call's {first_call}")
        expect(field(trial, "calls", int) == 2 * THREADS,
               f"trial {number}: {trial['calls']} calls, not two per thread")
    schedules = explored(field(seen, "explore", dict), SHARED_SCHEDULES, SHARED_SAMPLES)
    for number, run in enumerate(schedules, 1):
        first, during = field(run, "first_calls", int), field(run, "during_first", int)
        answered = items(run, "answered", bool, at_least=SHARED_EXPLORE_THREADS,
                         at_most=SHARED_EXPLORE_THREADS)
        if first != 1 or during != 0 or not all(answered):
            raise Rejected(f"explored schedule {number}: {first} first calls of the cold "
                           f"model, {during} calls during the first, answers right: {answered}")


def check_lazy_model(seen: dict) -> None:
    """The factory ran once, on first use, and every thread got its model; in every explored
    schedule too."""
    for number, trial in enumerate(_trials(seen, TRIALS_LAZY_MODEL), 1):
        expect(field(trial, "factory_calls_in_init", int) == 0,
               f"trial {number}: the factory ran when the LazyModel was created")
        calls = field(trial, "factory_calls", int)
        expect(calls == 1, f"trial {number}: the factory ran {calls} times, not once")
        expect(field(trial, "models", int) == 1 and field(trial, "foreign_models", int) == 0,
               f"trial {number}: the threads did not all get the one model the factory made")
        _served_right(number, trial)
    schedules = explored(field(seen, "explore", dict), LAZY_SCHEDULES, LAZY_SAMPLES)
    for number, run in enumerate(schedules, 1):
        calls = field(run, "factory_calls", int)
        got = items(run, "got_the_model", bool, at_least=2, at_most=2)
        if calls != 1 or got != [True, True]:
            raise Rejected(f"explored schedule {number}: the factory ran {calls} times and "
                           f"the threads got the model: {got}")
