"""Graded properties for lesson 04, "tfdata": tf.data instead of hand-rolled threads.

The exercises build ``tf.data`` pipelines, so the races they guard against live inside TF's
own threads (the workers of a parallel ``map``, the prefetch thread, ``from_generator``'s
calls into Python). The controlled scheduler runs TF ops atomically and cannot see them, so
the checks use the stress runner (:func:`autograder.harness.stress`): real threads released
together at the smallest switch interval, each iterating the student's pipeline while the
others do. The one piece of pure Python shared between tf.data's threads, exercise 4's
counting wrapper, is explored with the controlled scheduler instead.

- :func:`check_loader`: one thread iterates the dataset twice (two epochs), then in each trial
  two threads iterate one dataset at the same time; each iteration must yield every record
  exactly once, with the record's own values.
- :func:`check_augment`: two threads iterate the augmented dataset at the same time; both must
  see exactly the images a first, one-thread run produced (same augmentation every run), every
  image must be a brightness shift in range plus an optional flip, with the shifts differing
  from image to image and from seed to seed, and the flips of 3,000 images of one fixed seed
  must number 45-55 % (a flip probability of 0.4 or 0.6 is told from 1/2 with exact binomial
  error bounds below 1e-7: see ``settings``).
- :func:`check_served`: a read wrapper that counts the records it served and the reads that
  failed, called by tf.data's threads at once. Its counting is pure Python, so it is explored
  with the controlled scheduler (two threads calling one object), and so is the overlap of
  its reads (two reads that wait for each other must both finish); then a real parallel map
  checks it end to end.
- :func:`check_fast`: the pipeline must yield ``transform(read(i))`` in order; its reads must
  run in parallel and overlap the training step; and its speed-up over the naive loop, measured
  in the same run (the naive loop, the ideal bound and the pipeline run at the same time so a
  burst of load on the machine hits all three), must reach :data:`MIN_SHARE_OF_IDEAL` of the
  ideal speed-up measured alongside.

All work is simulated with ``time.sleep`` (which releases the GIL as real I/O does), so the
checks measure the pipeline's structure, not this machine's speed. Plumbing the notebook uses
(the live demonstrations, the timeline picture) lives here too.

This package is the lesson's face: the notebook and hidden tests use ``tfdata.NAME`` and get
the names below, whichever module holds them: ``settings`` (seeds, counts, simulated costs,
budgets), ``records`` (the simulated records, reads and transforms, and how a check reads a
pipeline's elements back), ``lab`` (the notebook's live demonstrations and timeline picture),
``loader``, ``augment``, ``fast`` and ``served`` (exercises 1 to 4: their trials and runs)
and ``grading`` (the four graders).
"""

from __future__ import annotations

from autograder.checks.tfdata.augment import (
    count_flips,
    flip_band_errors,
    flip_image_array,
    flip_images,
    image_array,
    images,
    run_augment,
)
from autograder.checks.tfdata.fast import FastRun, measure, naive_loop, order_run
from autograder.checks.tfdata.grading import check_augment, check_fast, check_loader, check_served
from autograder.checks.tfdata.lab import (
    Trials,
    concurrent_iterations,
    plot_timeline,
    reused_buffer_trials,
    shared_generator_trials,
)
from autograder.checks.tfdata.loader import run_loader
from autograder.checks.tfdata.records import make_read, make_transform, read_seconds, record
from autograder.checks.tfdata.served import (
    CorruptRecord,
    MissingRecord,
    read_or_corrupt,
    read_or_missing,
    run_overlap,
    run_served,
    served_by_a_parallel_map,
    served_on_one_thread,
)
from autograder.checks.tfdata.settings import (
    FAST_RECORDS,
    FLIP_DRAWS,
    FLIP_SEED,
    FLIPS_WITHIN,
    IMAGE_SHAPE,
    IMAGES,
    LOADER_READ_S,
    LOADER_RECORDS,
    MAX_DELTA,
    MIN_EACH_SIGN,
    MIN_SHARE_OF_IDEAL,
    MIN_SPREAD,
    ORDER_FAST_S,
    ORDER_SLOW_S,
    OVERLAP_CALLS,
    OVERLAP_SCHEDULES,
    SEED,
    SERVED_RECORDS,
    SERVED_SCHEDULES,
    STRESS_TRIALS,
    TIMEOUT_S,
    TRAIN_S,
    TRANSFORM_S,
    WIDTH,
)

__all__ = [
    # settings
    "FAST_RECORDS", "FLIP_DRAWS", "FLIP_SEED", "FLIPS_WITHIN", "IMAGE_SHAPE", "IMAGES",
    "LOADER_READ_S", "LOADER_RECORDS",
    "MAX_DELTA", "MIN_EACH_SIGN", "MIN_SHARE_OF_IDEAL", "MIN_SPREAD", "ORDER_FAST_S",
    "ORDER_SLOW_S", "OVERLAP_CALLS", "OVERLAP_SCHEDULES", "SEED", "SERVED_RECORDS",
    "SERVED_SCHEDULES",
    "STRESS_TRIALS", "TIMEOUT_S", "TRAIN_S", "TRANSFORM_S", "WIDTH",
    # the simulated records, reads and transforms
    "make_read", "make_transform", "read_seconds", "record",
    # the notebook's live demonstrations and timeline picture
    "Trials", "concurrent_iterations", "plot_timeline", "reused_buffer_trials",
    "shared_generator_trials",
    # the four exercises
    "run_loader",
    "image_array", "images", "run_augment", "count_flips", "flip_band_errors",
    "flip_image_array", "flip_images",
    "FastRun", "measure", "naive_loop", "order_run",
    "CorruptRecord", "MissingRecord", "read_or_corrupt", "read_or_missing", "run_overlap",
    "run_served", "served_by_a_parallel_map", "served_on_one_thread",
    # graders
    "check_augment", "check_fast", "check_loader", "check_served",
]
