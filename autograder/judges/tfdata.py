"""Lesson 04's judge: the loader's records, the augmentations, the pipeline's order, overlap and
speed, and ServedStats's counts, from what ran."""

from __future__ import annotations

import math

from autograder.judges import expect, explored, field, items

# The check's settings (``autograder.checks.tfdata.settings``; a test ties them).
#: Records per loader iteration; one-thread runs of the loader; stress trials (exercises 1, 2).
LOADER_RECORDS = 12
ONE_THREAD_RUNS = 3
STRESS_TRIALS = 2
#: Images per augmentation run, and the largest brightness shift.
IMAGES = 16
MAX_DELTA = 0.2
#: Shifts of the two seeds' 32 images: at least this many of each sign, spread this wide.
MIN_EACH_SIGN = 6
MIN_SPREAD = 0.2
#: Flipped images of the 3,000 of the fixed seed a correct answer shows (both ends included).
FLIPS_WITHIN = (1350, 1650)
#: Agreements of one seed's shifts with the other's moved by one position that fail.
SHIFTED_MATCHES = 4
#: The largest difference between an image a thread saw and the first run's (np.allclose's
#: atol 1e-6 plus rtol 1e-5 of values below 0.9: never stricter than the check).
SAME_IMAGE = 1e-5
#: Records of the pipeline; the least share of the ideal speed-up it must reach.
FAST_RECORDS = 8
#: Records of the uneven order run: odd, so pairs read with the remainder dropped lose one.
ORDER_RECORDS = FAST_RECORDS - 1
MIN_SHARE_OF_IDEAL = 0.3
#: What the simulated work sleeps, at the least, in the timing run (seconds): the ideal bound
#: (read 0, one transform, then a training step per record), the pipeline's training steps
#: and the naive loop (every read, transform and step one after another). Sleeps only ever
#: take longer, so a measured time below these is no measurement.
IDEAL_FLOOR_S = 0.050 + 0.010 + FAST_RECORDS * 0.015
PIPELINE_FLOOR_S = FAST_RECORDS * 0.015
NAIVE_FLOOR_S = 0.050 + 3 * 0.025 + 4 * 0.008 + FAST_RECORDS * (0.010 + 0.015)
#: Clock granularity allowed below those floors.
FLOOR_SLACK = 0.99
#: Schedules of ServedStats's explored counts and of its overlapping reads (exercise 4).
SERVED_SCHEDULES, SERVED_SAMPLES = 3000, 20
OVERLAP_SCHEDULES, OVERLAP_CALLS = 20, 9
#: The explored calls: stats(0) and stats(2) return, stats(1) and stats(3) raise.
SERVED_OUTCOMES = ["failed", "failed", "served", "served"]
#: Records the parallel map serves.
SERVED_RECORDS = 4
#: Pairs of identical flip images, and how many alike pairs fail (augment.twins_alike).
TWIN_PAIRS, TWINS_ALIKE = 8, 2
#: How many global seeds augment is built again under (augment.GLOBAL_SEEDS).
GLOBAL_SEEDS = 2


def _finite(values: list[float], what: str) -> list[float]:
    expect(all(math.isfinite(value) for value in values), f"{what} holds a number that is not "
                                                          "finite")
    return values


def _each_once(seen: dict, key: str, what: str) -> None:
    """``seen[key]`` holds each of the loader's records exactly once (in any order)."""
    records = items(seen, key, (int, type(None)), at_least=0, at_most=10_000)
    expect(None not in records and sorted(records) == list(range(LOADER_RECORDS)),
           f"{what} saw records {records[:20]}, not each of the {LOADER_RECORDS} once")


def _trials(seen: dict, kind: type | tuple[type, ...]) -> list:
    trials = field(seen, "trials_run", int)
    expect(trials == STRESS_TRIALS, f"{trials} trials ran, not the graded {STRESS_TRIALS}")
    return items(seen, "trials", kind, at_least=STRESS_TRIALS, at_most=STRESS_TRIALS)


def check_loader(seen: dict) -> None:
    """Every one-thread iteration (two per run) and every thread of every trial saw each
    record exactly once, and iterations that stopped early left none of the answer's threads
    running."""
    runs = items(seen, "one_thread", list, at_least=ONE_THREAD_RUNS, at_most=ONE_THREAD_RUNS)
    for number, run in enumerate(runs, 1):
        iterations = items({"run": run}, "run", list, at_least=2, at_most=2)
        for label, iteration in zip(("first", "second"), iterations, strict=True):
            _each_once({"it": iteration}, "it", f"one-thread run {number}'s {label} iteration")
    left = field(seen, "left_running", int)
    expect(left == 0, f"{left} of the answer's threads were still running after iterations "
                      "that stopped early")
    for number, trial in enumerate(_trials(seen, list), 1):
        threads = items({"trial": trial}, "trial", list, at_least=2, at_most=2)
        for k, got in enumerate(threads):
            _each_once({"got": got}, "got", f"trial {number}'s thread {k}")


def check_augment(seen: dict) -> None:
    """Each seed's images: shifts within range, mostly distinct, of both signs and spread, some
    but not all flipped; the seeds differ; the 3,000 images' flips are within the band; and
    every thread of every trial saw the first run's images again."""
    shifts = items(seen, "shifts", list, at_least=2, at_most=2)
    flipped = items(seen, "flipped", list, at_least=2, at_most=2)
    both: list[float] = []
    for seed, (deltas, flips) in zip((11, 12), zip(shifts, flipped, strict=True), strict=True):
        deltas = _finite(items({"d": deltas}, "d", float, at_least=IMAGES, at_most=IMAGES),
                         f"seed {seed}'s shifts")
        flips = items({"f": flips}, "f", bool, at_least=IMAGES, at_most=IMAGES)
        expect(max(abs(d) for d in deltas) <= MAX_DELTA + 1e-5,
               f"seed {seed}'s shifts reach {max(deltas, key=abs):+.3f}, beyond +-{MAX_DELTA}")
        expect(len(set(deltas)) >= IMAGES // 2,
               f"seed {seed}'s {IMAGES} images got only {len(set(deltas))} different shifts")
        expect(0 < sum(flips) < IMAGES, f"seed {seed} flipped {sum(flips)} of {IMAGES} images")
        both.extend(deltas)
    negative, positive = sum(d < 0 for d in both), sum(d > 0 for d in both)
    expect(min(negative, positive) >= MIN_EACH_SIGN,
           f"the shifts were {negative} negative and {positive} positive, not at least "
           f"{MIN_EACH_SIGN} of each")
    expect(max(both) - min(both) >= MIN_SPREAD,
           f"the shifts spread over {max(both) - min(both):.3f}, not {MIN_SPREAD}")
    expect(field(seen, "seed_gap", float) > 0, "seeds 11 and 12 gave the same images")
    flips = field(seen, "flips", int)
    low, high = FLIPS_WITHIN
    expect(low <= flips <= high, f"{flips} of the 3000 images were flipped, not {low}-{high}")
    agree = field(seen, "flips_with_negative_shift", int)
    expect(low <= agree <= high, f"{agree} of the 3000 images were flipped exactly when their "
                                 f"shift was negative, not {low}-{high}: flip and shift related")
    neighbours = items(seen, "neighbours_agreeing", int, at_least=4, at_most=4)
    expect(all(low <= count <= high for count in neighbours),
           f"neighbouring images' draws agreed {neighbours} times of 2999 (flip-shift, "
           f"shift-flip, flip-flip, shift-shift), not {low}-{high} each: draws moved by a "
           "position")
    central = field(seen, "central_shifts", int)
    expect(low <= central <= high, f"{central} of the 3000 shifts were within +-"
                                   f"{MAX_DELTA / 2}, not {low}-{high}: not uniform")
    gaps = _finite(items(seen, "global_seed_gaps", float, at_least=GLOBAL_SEEDS,
                         at_most=GLOBAL_SEEDS), "the global seeds' differences")
    expect(all(gap <= SAME_IMAGE for gap in gaps),
           f"augment(images, 11) built under other global seeds differed by {gaps}: the "
           "draws depend on TensorFlow's global seed")
    twins = field(seen, "twins_alike", int)
    expect(twins < TWINS_ALIKE, f"{twins} of the {TWIN_PAIRS} pairs of identical images got the "
                                "same flip and shift: draws seeded from the pixels")
    for ahead, behind in ((shifts[0], shifts[1]), (shifts[1], shifts[0])):
        same = sum(a == b for a, b in zip(ahead[1:], behind[:-1], strict=True))
        expect(same < SHIFTED_MATCHES, f"{same} of seed 11's and seed 12's shifts are the "
                                       "other seed's moved by one position")
    for number, trial in enumerate(_trials(seen, list), 1):
        threads = items({"trial": trial}, "trial", list, at_least=2, at_most=2)
        for k, gaps in enumerate(threads):
            gaps = _finite(items({"g": gaps}, "g", float, at_least=IMAGES, at_most=IMAGES),
                           f"trial {number}'s thread {k}")
            differ = [i for i, gap in enumerate(gaps) if not gap <= SAME_IMAGE]
            expect(not differ, f"in trial {number}, thread {k} saw other images than the first "
                               f"run at position(s) {differ[:5]}")


def _most_at_once(spans: list[list[float]]) -> int:
    """Most spans in flight at one moment (as ``FastRun.max_parallel`` counts them)."""
    return max((sum(s2 < e and s < e2 for s2, e2 in spans) for s, e in spans), default=0)


def check_fast(seen: dict) -> None:
    """Records in order (uneven run and timing run), two reads or more at once, and a measured
    speed-up of at least the graded share of the ideal one."""
    wanted = list(range(FAST_RECORDS))
    order = items(seen, "order", (int, type(None)), at_least=0, at_most=10_000)
    expect(order == list(range(ORDER_RECORDS)),
           f"the uneven run yielded records {order[:20]}, not {list(range(ORDER_RECORDS))}")
    values = items(seen, "values", (int, type(None)), at_least=0, at_most=10_000)
    expect(values == wanted, f"the timing run yielded records {values[:20]}, not {wanted}")
    spans = []
    for span in items(seen, "reads", list, at_least=FAST_RECORDS, at_most=10_000):
        start, end = _finite(items({"span": span}, "span", float, at_least=2, at_most=2),
                             "a read's span")
        expect(start <= end, "a read ended before it started")
        spans.append([start, end])
    parallel = _most_at_once(spans)
    expect(parallel >= 2, f"at most {parallel} read ran at a time")
    naive, ideal, pipeline = (field(seen, key, float) for key in ("naive_s", "ideal_s",
                                                                  "pipeline_s"))
    for name, took, floor in (("naive loop", naive, NAIVE_FLOOR_S),
                              ("ideal bound", ideal, IDEAL_FLOOR_S),
                              ("pipeline", pipeline, PIPELINE_FLOOR_S)):
        expect(took >= floor * FLOOR_SLACK,
               f"the {name} took {took:.4f} s, less than the {floor:.3f} s it sleeps")
    share = ideal / pipeline
    expect(share >= MIN_SHARE_OF_IDEAL,
           f"the pipeline reached {share:.0%} of the ideal speed-up, not {MIN_SHARE_OF_IDEAL:.0%}")


def _explored(seen: dict, key: str, graded: int, kind: type) -> list:
    """``seen[key]``: one entry per schedule that ran, the graded number of them (or fewer when
    the search covered every schedule)."""
    ran = field(seen, f"{key}_run", int)
    covered = field(seen, f"{key}_covered", bool)
    expect(ran == graded or (covered and 0 < ran < graded),
           f"{ran} schedules ran, not the graded {graded}")
    return items(seen, key, kind, at_least=ran, at_most=ran)


def check_served(seen: dict) -> None:
    """The one-thread contract (a second object, and a read raising a ValueError, included);
    exact counts (two served, two failed) in every explored schedule, and counts that never ran
    ahead of the reads between calls; every overlapping read returned its record in every
    schedule; and the parallel map served every record, counted exactly."""
    one_thread = field(seen, "one_thread", dict)
    records = items(one_thread, "records", (int, type(None)), at_least=0, at_most=2)
    expect(records == [0, 2], f"on one thread stats(0), stats(2) returned records {records}")
    expect(field(one_thread, "second", str) == "raised",
           "on one thread stats(1) returned although its read raised")
    counts = items(one_thread, "counts", int, at_least=0, at_most=2)
    expect(counts == [2, 1], f"on one thread the counts were {counts}, not [2, 1]")
    expect(field(one_thread, "other_record", (int, type(None))) == 4
           and field(one_thread, "other_second", str) == "raised",
           "on one thread a second object's other(4) did not return record 4, or other(5) "
           "returned although its read raised a ValueError")
    other = items(one_thread, "other_counts", int, at_least=0, at_most=2)
    expect(other == [1, 1], f"on one thread a second object's counts were {other}, not [1, 1] "
                            "(a read raising a ValueError is a failed read too)")
    after = items(one_thread, "counts_after_other", int, at_least=0, at_most=2)
    expect(after == counts, f"on one thread a second object changed the first one's counts "
                            f"from {counts} to {after}")
    for number, run in enumerate(explored(seen, SERVED_SCHEDULES, SERVED_SAMPLES), 1):
        outcomes = items(run, "outcomes", str, at_least=0, at_most=100)
        expect(sorted(outcomes) == SERVED_OUTCOMES,
               f"in schedule {number} the calls ended {outcomes}, not two served, two failed")
        served, failed = field(run, "served", int), field(run, "failed", int)
        expect((served, failed) == (2, 2),
               f"in schedule {number} served() == {served} and failed() == {failed}, not 2 "
               f"and 2")
        peeks = items(run, "peeks", list, at_least=1, at_most=1)
        peek = items({"peek": peeks[0]}, "peek", int, at_least=4, at_most=4)
        expect(peek[0] <= peek[2] and peek[1] <= peek[3],
               f"in schedule {number} served() == {peek[0]} and failed() == {peek[1]} between "
               f"calls, when {peek[2]} reads had returned and {peek[3]} raised: a call was "
               "counted before its read finished")
    for number, got in enumerate(_explored(seen, "overlaps", OVERLAP_SCHEDULES, list), 1):
        got = items({"got": got}, "got", (int, type(None)), at_least=0, at_most=OVERLAP_CALLS)
        expect(got == list(range(OVERLAP_CALLS)),
               f"in overlap schedule {number} the {OVERLAP_CALLS} calls returned records "
               f"{got}, not {list(range(OVERLAP_CALLS))}")
    mapped = items(seen, "mapped", int, at_least=0, at_most=10_000)
    expect(mapped == list(range(SERVED_RECORDS)),
           f"the parallel map gave back records {mapped[:20]}")
    counts = items(seen, "mapped_counts", int, at_least=2, at_most=2)
    expect(counts == [SERVED_RECORDS, 0],
           f"after the parallel map the counts were {counts}, not [{SERVED_RECORDS}, 0]")
