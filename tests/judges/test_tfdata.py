"""Lesson 04's judge: accepts what the solution's runs observe, refuses a race's outcome."""

import re
import threading
import time
import warnings

import numpy as np
import pytest
import tensorflow as tf

from autograder.checks import tfdata
from autograder.checks.tfdata import settings
from autograder.judges import Rejected
from autograder.judges import tfdata as judge
from tests.checks.grading_runs import judged, solution_namespace

CHECKS = ("check_loader", "check_augment", "check_fast", "check_served")


@pytest.fixture(scope="module")
def observed():
    solved = solution_namespace("04_tfdata", {"threading": threading, "time": time, "tf": tf,
                                              "np": np, "tfdata": tfdata})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {
            "check_loader": judged(tfdata.check_loader, solved["make_dataset"]),
            "check_augment": judged(tfdata.check_augment, solved["augment"]),
            "check_fast": judged(tfdata.check_fast, solved["fast_pipeline"]),
            "check_served": judged(tfdata.check_served, solved["ServedStats"]),
        }


def test_the_judge_accepts_what_the_solution_observes(observed):
    for check in CHECKS:
        getattr(judge, check)(observed[check])


def test_every_report_without_one_of_its_observations_is_refused(observed):
    for check in CHECKS:
        for key in observed[check]:
            cut = {k: v for k, v in observed[check].items() if k != key}
            with pytest.raises(Rejected, match=re.escape(key)):
                getattr(judge, check)(cut)


def test_a_record_lost_or_seen_twice_by_one_thread_is_refused(observed):
    seen = observed["check_loader"]
    trials = [[list(got) for got in trial] for trial in seen["trials"]]
    trials[1][0][3] = trials[1][0][4]  # record 3 lost, record 4 twice (a shared generator)
    with pytest.raises(Rejected, match="trial 2's thread 0 saw records"):
        judge.check_loader({**seen, "trials": trials})
    runs = [[list(it) for it in run] for run in seen["one_thread"]]
    runs[0][1] = []  # a generator object: the second iteration yields nothing
    with pytest.raises(Rejected, match="second iteration"):
        judge.check_loader({**seen, "one_thread": runs})
    with pytest.raises(Rejected, match="1 trials ran"):
        judge.check_loader({**seen, "trials": trials[:1], "trials_run": 1})
    with pytest.raises(Rejected, match="3 of the answer's threads were still running"):
        judge.check_loader({**seen, "left_running": 3})  # a producer per early-stopped epoch


def test_an_augmentation_drawn_again_differently_by_one_thread_is_refused(observed):
    seen = observed["check_augment"]
    trials = [[list(gaps) for gaps in trial] for trial in seen["trials"]]
    trials[0][1][5] = 0.137  # a stateful random op drew another shift on this iteration
    with pytest.raises(Rejected, match="trial 1, thread 1 saw other images"):
        judge.check_augment({**seen, "trials": trials})
    with pytest.raises(Rejected, match="1200 of the 3000"):
        judge.check_augment({**seen, "flips": 1200})  # flipped with probability 0.4
    with pytest.raises(Rejected, match="same images"):
        judge.check_augment({**seen, "seed_gap": 0.0})
    brighter = [[abs(d) for d in deltas] for deltas in seen["shifts"]]
    with pytest.raises(Rejected, match="0 negative"):
        judge.check_augment({**seen, "shifts": brighter})


def test_a_reordered_serial_or_slow_pipeline_is_refused(observed):
    seen = observed["check_fast"]
    swapped = [1, 0, 3, 2, 5, 4, 7, 6]  # deterministic=False: each faster odd record first
    with pytest.raises(Rejected, match="uneven run yielded"):
        judge.check_fast({**seen, "order": swapped})
    serial = [[i * 0.05, i * 0.05 + 0.04] for i in range(8)]  # one read at a time
    with pytest.raises(Rejected, match="at most 1 read"):
        judge.check_fast({**seen, "reads": serial})
    with pytest.raises(Rejected, match="of the ideal speed-up"):
        judge.check_fast({**seen, "pipeline_s": seen["ideal_s"] / 0.29})
    with pytest.raises(Rejected, match="less than"):
        judge.check_fast({**seen, "ideal_s": 0.01, "pipeline_s": 0.02})


def test_a_lost_count_in_one_schedule_or_serialized_reads_are_refused(observed):
    seen = observed["check_served"]
    schedules = [dict(run) for run in seen["schedules"]]
    schedules[17]["served"] = 1  # two threads read served == 0 and both wrote back 1
    with pytest.raises(Rejected, match="schedule 18 served"):
        judge.check_served({**seen, "schedules": schedules})
    with pytest.raises(Rejected, match="19 schedules ran"):
        judge.check_served({**seen, "overlaps": seen["overlaps"][:19], "overlaps_run": 19})
    assert seen["bounded"] > 100 and seen["schedules_run"] == seen["bounded"] + 20  # two
    fewer = seen["schedules_run"] - 1  # preemptions, then the samples: all of them, not fewer
    with pytest.raises(Rejected, match=f"{fewer} schedules ran"):
        judge.check_served({**seen, "schedules": schedules[:fewer], "schedules_run": fewer})
    with pytest.raises(Rejected, match="counts were"):
        judge.check_served({**seen, "mapped_counts": [3, 0]})


def test_a_count_ahead_of_its_reads_class_level_counts_or_an_uncounted_value_error_are_refused(
        observed):
    seen = observed["check_served"]
    schedules = [dict(run) for run in seen["schedules"]]
    schedules[9]["peeks"] = [[2, 0, 1, 0]]  # counted first, its read still running
    with pytest.raises(Rejected, match="schedule 10 served.*counted before its read"):
        judge.check_served({**seen, "schedules": schedules})
    one_thread = seen["one_thread"]
    with pytest.raises(Rejected, match="changed the first one's counts"):
        judge.check_served({**seen, "one_thread": {**one_thread, "counts_after_other": [1, 1]}})
    with pytest.raises(Rejected, match="a ValueError is a failed read"):
        judge.check_served({**seen, "one_thread": {**one_thread, "other_counts": [1, 0]}})
    overlaps = [[*range(8), None], *seen["overlaps"][1:]]  # nine reads, one held back
    with pytest.raises(Rejected, match="overlap schedule 1 the 9 calls"):
        judge.check_served({**seen, "overlaps": overlaps})


def test_a_flip_tied_to_the_shift_a_shift_not_uniform_seeds_apart_or_global_seeds_are_refused(
        observed):
    seen = observed["check_augment"]
    with pytest.raises(Rejected, match="flipped exactly when their shift was negative"):
        judge.check_augment({**seen, "flips_with_negative_shift": 3000})
    with pytest.raises(Rejected, match="not uniform"):
        judge.check_augment({**seen, "central_shifts": 2171})
    with pytest.raises(Rejected, match="draws moved by a position"):
        judge.check_augment({**seen, "neighbours_agreeing": [2999, 1484, 1475, 1476]})
    with pytest.raises(Rejected, match="pairs of identical images"):
        judge.check_augment({**seen, "twins_alike": 8})  # seeded from the pixels
    with pytest.raises(Rejected, match="global seed"):
        judge.check_augment({**seen, "global_seed_gaps": [0.0, 0.31]})  # op-seeded, stateful
    with pytest.raises(Rejected):
        judge.check_augment({**seen, "global_seed_gaps": [0.0]})
    first = seen["shifts"][0]
    moved = [*first[1:], first[0] / 2]  # seed 12's image i has seed 11's image i + 1's shift
    with pytest.raises(Rejected, match="moved by one position"):
        judge.check_augment({**seen, "shifts": [first, moved]})


def test_the_judges_constants_are_the_checks_settings():
    assert judge.GLOBAL_SEEDS == len(settings.GLOBAL_SEEDS)
    for name in ("LOADER_RECORDS", "ONE_THREAD_RUNS", "STRESS_TRIALS", "IMAGES", "MAX_DELTA",
                 "MIN_EACH_SIGN", "MIN_SPREAD", "FLIPS_WITHIN", "FAST_RECORDS",
                 "MIN_SHARE_OF_IDEAL", "SERVED_SCHEDULES", "SERVED_SAMPLES", "OVERLAP_SCHEDULES",
                 "OVERLAP_CALLS", "SERVED_RECORDS", "TWIN_PAIRS", "TWINS_ALIKE", "ORDER_RECORDS",
                 "SHIFTED_MATCHES"):
        assert getattr(judge, name) == getattr(settings, name), name
    n, read = settings.FAST_RECORDS, tfdata.read_seconds
    assert judge.IDEAL_FLOOR_S == pytest.approx(read(0) + settings.TRANSFORM_S
                                                + n * settings.TRAIN_S)
    assert judge.PIPELINE_FLOOR_S == pytest.approx(n * settings.TRAIN_S)
    assert judge.NAIVE_FLOOR_S == pytest.approx(sum(read(i) for i in range(n))
                                                 + n * (settings.TRANSFORM_S + settings.TRAIN_S))
