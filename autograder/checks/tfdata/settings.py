"""Lesson 04's fixed seeds, record counts, simulated costs and time budgets."""

SEED = 4
WIDTH = 4
#: Records per loader check, and the simulated read time of each.
LOADER_RECORDS = 12
LOADER_READ_S = 0.002
STRESS_TRIALS = 2
#: The one-thread runs: how many, and the interpreter's switch interval during them (long, so
#: that a thread the answer starts itself runs as far ahead as its queue lets it before the
#: dataset's thread copies what it was handed; measured: a producer that refills one buffer
#: was caught in 1,000 of 1,000 runs with this, 92 of 100 with a 1 µs interval).
ONE_THREAD_RUNS = 3
ONE_THREAD_SWITCH_S = 0.5
TIMEOUT_S = 30.0
#: Images per augmentation check.
IMAGES = 16
IMAGE_SHAPE = (6, 6, 1)
MAX_DELTA = 0.2
#: The throughput workload: reads of 8-50 ms, a 10 ms transform, a 15 ms training step.
TRANSFORM_S = 0.010
TRAIN_S = 0.015
FAST_RECORDS = 8
#: The pipeline's speed-up over the naive loop must reach this share of the ideal speed-up.
MIN_SHARE_OF_IDEAL = 0.3

# Exercise 2 (augment).
#: Bounds on the 32 augmentations of seeds 11 and 12 together (issue #18, class 6). For a
#: correct answer (shift uniform in [-MAX_DELTA, MAX_DELTA], flip with probability 1/2) each
#: bound fails with probability below 1e-4 on one fixed seed pair, so a correct answer passes
#: every run; shifts of one sign, a narrow spread or rare flips fail every run.
MIN_EACH_SIGN = 6
MIN_SPREAD = 0.5 * 2 * MAX_DELTA
FLIPS_WITHIN = (6, 26)

# Exercise 3 (fast_pipeline).
#: The order run: record i's read and transform take ORDER_SLOW_S when i is even and
#: ORDER_FAST_S when odd, so in every pair the later element is ready long before the earlier.
ORDER_SLOW_S = 0.060
ORDER_FAST_S = 0.001

# Exercise 4 (ServedStats).
#: Schedules per explored run of ``ServedStats``. Search bound: every schedule with at most one
#: preemption (28 for the solution; the lost update of an unlocked ``+=`` needs one), then
#: seeded samples up to this count. Every wrong answer in the tests is found in the first 28.
SERVED_SCHEDULES = 100
#: Records the integration run maps in parallel through ``tf.numpy_function``.
SERVED_RECORDS = 4
#: Schedules of the overlap run (two calls whose reads wait for each other): a lock held
#: through the read deadlocks in the first schedule; a correct answer passes every one.
OVERLAP_SCHEDULES = 20
