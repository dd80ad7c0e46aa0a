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
#: The early-stop run: EARLY_STOPS iterations of one dataset that each stop after EARLY_TAKE
#: elements (a training loop's ``break``, ``take(2)``), then up to LEFT_RUNNING_WAIT_S for every
#: Python thread the answer started meanwhile to end. A producer thread per iteration, blocked
#: on its full queue once nobody reads, stays behind every time (issue #32).
EARLY_STOPS, EARLY_TAKE, LEFT_RUNNING_WAIT_S = 3, 2, 10.0
#: Images per augmentation check.
IMAGES = 16
IMAGE_SHAPE = (6, 6, 1)
MAX_DELTA = 0.2
#: The throughput workload: reads of 8-50 ms, a 10 ms transform, a 15 ms training step.
TRANSFORM_S = 0.010
TRAIN_S = 0.015
FAST_RECORDS = 8
#: The order run's record count: odd, so a pipeline that reads records in pairs and drops
#: the remainder (``batch(2, drop_remainder=True)`` ... ``unbatch()``) loses the last one.
ORDER_RECORDS = FAST_RECORDS - 1
#: The pipeline's speed-up over the naive loop must reach this share of the ideal speed-up.
MIN_SHARE_OF_IDEAL = 0.3
#: Threads of the private pool the grader gives an answer's dataset (exercises 2 and 3). tf.data
#: otherwise runs a map on a pool of one thread per core it may use: on one core (a container
#: with one CPU, or ``taskset -c 0``), idle or busy, a correct ``map(..., num_parallel_calls=4)``
#: read one record at a time and failed the "reads in parallel" bound in 20 of 20 runs, a
#: ``deterministic=False`` map was never reordered (20 of 20), and stateful random ops in a
#: parallel map drew in the same order on every iteration, so the demo's racy augment passed.
#: A fixed pool makes the verdict the same on every machine; a map without parallel calls
#: still reads one record at a time.
PIPELINE_THREADS = 4

# Exercise 2 (augment).
#: Bounds on the shifts of the 32 augmentations of seeds 11 and 12 together (issue #18, class
#: 6). For a correct answer (shift uniform in [-MAX_DELTA, MAX_DELTA]) each bound fails with
#: probability below 1e-4 on one fixed seed pair, so a correct answer passes every run; shifts
#: of one sign or a narrow spread fail every run.
MIN_EACH_SIGN = 6
MIN_SPREAD = 0.5 * 2 * MAX_DELTA
#: The flip probability (issue #32), from FLIP_DRAWS in-memory images augmented with seed
#: FLIP_SEED: FLIP_DRAWS Bernoulli draws, one per element (its stateless seed is the seed and
#: its position), and the answer passes when the number of flipped images k is within
#: FLIPS_WITHIN (a share of 0.45 to 0.55). Exact binomial tails (math.comb, integers; computed
#: by ``augment.flip_band_errors``, checked in tests/checks/test_tfdata.py), n = 3000:
#:   p = 0.5 (correct):  P(k < 1350) + P(k > 1650) = 3.80e-8 (wrongly failed)
#:   p = 0.4 (wrong):    P(k >= 1350)               = 1.52e-8 (wrongly passed; p = 0.6 alike,
#:                                                   p <= 0.4 or >= 0.6 less likely still)
#:   p = 0.2 (wrong):    P(k >= 1350)               = 2.4e-209
#: Each is below 1e-6. The seed is fixed, so an answer's verdict is the same in every run:
#: these are the chances, over the choice of seed, that a correct answer fails every run or
#: a p = 0.4 answer passes every run.
#: The same band bounds two more Binomial(FLIP_DRAWS, 1/2) counts of those images, with the
#: same error rates (augment._flip_share): the images flipped exactly when their shift is
#: negative (the flip independent of the shift) and the shifts within +-MAX_DELTA / 2 (the
#: shift uniform; a normal truncated at 2 standard deviations puts 72 % there). So does it
#: bound four Binomial(FLIP_DRAWS - 1, 1/2) counts of neighbouring images whose draws agree
#: (augment.neighbour_agreements: image i's flip or shift sign with image i + 1's; 3.80e-8 at
#: n = 2999 too): a flip seeded as the next image's shift agrees 2999 times. A correct answer
#: fails one of the seven with probability below 7 * 3.80e-8 = 2.7e-7.
FLIP_DRAWS = 3000
#: Agreements, among the IMAGES - 1 one-position-apart pairs of seed 11's and seed 12's shifts,
#: from which the seeds count as copies of each other moved by one position
#: (augment._seeds_unrelated).
SHIFTED_MATCHES = 4
FLIP_SEED = 13
FLIPS_WITHIN = (1350, 1650)
#: The last TWIN_PAIRS of the flip images repeat the first TWIN_PAIRS (same pixels, other
#: positions): a correct answer draws each position on its own, so a pair gets the same flip
#: and a shift within TWIN_TOLERANCE of the same with probability about 2.5e-6 (2e-6 / 0.4
#: wide, times 1/2), and TWINS_ALIKE or more alike pairs of the 8 with about 1.8e-10. An
#: element seed taken from the pixels gives every pair the same draw (issue #32).
TWIN_PAIRS, TWINS_ALIKE, TWIN_TOLERANCE = 8, 2, 1e-6
#: The flip images' pixels span [0, 1] (the other images' [0.3, 0.7]): a shifted pixel leaves
#: the range in nearly every image, so an answer that clips is caught (issue #32, round 5).
FLIP_PIXELS = (0.0, 1.0)
#: TensorFlow's global seed is set to each of these (then restored) before augment(images, 11)
#: is built again: the images must not change. An op-seeded stateful op (``tf.random.uniform(
#: seed=...)``) in a sequential map repeats itself under one global seed and changes with it;
#: two values, so that one differs from whatever the notebook set.
GLOBAL_SEEDS = (1, 2)

# Exercise 3 (fast_pipeline).
#: The order run: record i's read and transform take ORDER_SLOW_S when i is even and
#: ORDER_FAST_S when odd, so in every pair the later element is ready long before the earlier.
ORDER_SLOW_S = 0.060
ORDER_FAST_S = 0.001

# Exercise 4 (ServedStats).
#: The explored run of ``ServedStats``: every schedule with at most SERVED_DEVIATIONS
#: preemptions (667 for the solution, about 1.5 s), then SERVED_SAMPLES seeded samples, at most
#: SERVED_SCHEDULES in all. Two preemptions, not one: a lock made lazily on first use
#: (``if not hasattr(self, "_lock")``) loses a count only when the threads switch both inside
#: that check and inside a ``+=`` (found at schedule 346 of the bounded search; with one
#: preemption and 100 schedules it passed, issue #32).
SERVED_SCHEDULES, SERVED_DEVIATIONS, SERVED_SAMPLES = 3000, 2, 20
#: Wall-clock budget of that run. The search is bounded by its schedule count; this only
#: stops an answer whose schedules never end (a busy wait). A correct answer with a richer
#: structure runs 2,500-3,000 schedules: 4-9 s on a quiet machine, beyond 30 s beside a full
#: test run (a 30 s budget made the verdict depend on the machine's load).
SERVED_TIMEOUT_S = 180.0
#: Records the integration run maps in parallel through ``tf.numpy_function``.
SERVED_RECORDS = 4
#: Schedules of the overlap run (OVERLAP_CALLS calls whose reads each wait for all the others):
#: a lock held through the read deadlocks in the first schedule, and so does a semaphore that
#: lets fewer reads in at once than there are calls (nine calls: ``BoundedSemaphore(2)`` passed
#: two, issue #32, and ``BoundedSemaphore(4)`` passed three, red team round 8); a correct
#: answer passes every one.
OVERLAP_SCHEDULES, OVERLAP_CALLS = 20, 9
