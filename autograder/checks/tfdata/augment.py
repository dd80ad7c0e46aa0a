"""Exercise 2 (``augment``): the grader's images, sane augmentations, two threads at once."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from autograder.checks.plain import exception_line
from autograder.checks.tfdata.records import _values, own_threads
from autograder.checks.tfdata.settings import (
    FLIP_DRAWS,
    FLIP_PIXELS,
    FLIP_SEED,
    FLIPS_WITHIN,
    GLOBAL_SEEDS,
    IMAGE_SHAPE,
    IMAGES,
    MAX_DELTA,
    MIN_EACH_SIGN,
    MIN_SPREAD,
    SEED,
    SHIFTED_MATCHES,
    STRESS_TRIALS,
    TIMEOUT_S,
    TWIN_PAIRS,
    TWIN_TOLERANCE,
    TWINS_ALIKE,
)
from autograder.harness import Result, stress


def images(count: int = IMAGES) -> Any:
    """The grader's images: a tf.data.Dataset of ``count`` float32 images in [0.3, 0.7],
    each read with a 2 ms sleep (simulated I/O, four reads at a time, in order). No two images
    are alike, none is symmetric."""
    import tensorflow as tf

    rng = np.random.default_rng(SEED)
    data = rng.uniform(0.3, 0.7, size=(count, *IMAGE_SHAPE)).astype("float32")

    def load(i: Any) -> np.ndarray:
        time.sleep(0.002)
        return data[int(i)]

    def to_image(i: Any) -> Any:
        image = tf.numpy_function(load, [i], tf.float32)
        image.set_shape(IMAGE_SHAPE)
        return image

    return tf.data.Dataset.range(count).map(to_image, num_parallel_calls=4, deterministic=True)


def image_array(count: int = IMAGES) -> np.ndarray:
    """The images :func:`images` yields, as one numpy array."""
    rng = np.random.default_rng(SEED)
    return rng.uniform(0.3, 0.7, size=(count, *IMAGE_SHAPE)).astype("float32")


def flip_image_array(count: int = FLIP_DRAWS) -> np.ndarray:
    """``count`` float32 images spanning :data:`FLIP_PIXELS` for counting flips, none
    symmetric (another seed than :func:`image_array`); the last :data:`TWIN_PAIRS` repeat the
    first ones."""
    rng = np.random.default_rng(SEED + 1)
    data = rng.uniform(*FLIP_PIXELS, size=(count, *IMAGE_SHAPE)).astype("float32")
    data[count - TWIN_PAIRS:] = data[:TWIN_PAIRS]
    return data


def twins_alike(flipped: np.ndarray, shifts: np.ndarray) -> int:
    """How many of the :data:`TWIN_PAIRS` pairs of identical flip images got the same flip and
    the same shift (within :data:`TWIN_TOLERANCE`)."""
    count = len(flipped)
    return sum(bool(flipped[i] == flipped[count - TWIN_PAIRS + i])
               and abs(float(shifts[i]) - float(shifts[count - TWIN_PAIRS + i])) < TWIN_TOLERANCE
               for i in range(TWIN_PAIRS))


def flip_images(count: int = FLIP_DRAWS) -> Any:
    """:func:`flip_image_array` as a tf.data.Dataset, from memory (no simulated reads, so
    thousands of images take a fraction of a second)."""
    import tensorflow as tf

    return tf.data.Dataset.from_tensor_slices(flip_image_array(count))


def count_flips(out: np.ndarray, originals: np.ndarray, what: str) -> int:
    """How many of ``out`` are their original mirrored left to right, plus one shift.

    Raises:
        AssertionError: when an image is neither its original nor its mirror plus one shift.
    """
    return int(np.count_nonzero(flips_and_shifts(out, originals, what)[0]))


def flips_and_shifts(out: np.ndarray, originals: np.ndarray,
                     what: str) -> tuple[np.ndarray, np.ndarray]:
    """Whether each of ``out`` is its original mirrored left to right, and its one shift.

    Raises:
        AssertionError: when an image is neither its original nor its mirror plus one shift.
    """
    if out.shape != originals.shape:
        raise AssertionError(f"augment: expected {len(originals)} images shaped "
                             f"{originals.shape[1:]} from {what}, got an array shaped "
                             f"{out.shape}")

    def one_shift(difference: np.ndarray) -> np.ndarray:
        mean = difference.mean(axis=(1, 2, 3), keepdims=True)
        return np.isclose(difference, mean, rtol=1e-5, atol=1e-5).all(axis=(1, 2, 3))

    as_is = one_shift(out - originals)
    mirrored = one_shift(out - originals[:, :, ::-1])
    flipped = mirrored & ~as_is
    shifts = np.where(flipped, (out - originals[:, :, ::-1]).mean(axis=(1, 2, 3)),
                      (out - originals).mean(axis=(1, 2, 3)))
    neither = np.flatnonzero(~as_is & ~mirrored)
    if neither.size:
        raise AssertionError(
            f"augment: image {int(neither[0])} of {what} is not the input image (or its "
            f"left-right mirror) plus one brightness shift; expected exactly that "
            f"augmentation, in input order")
    return flipped, shifts


def flip_band_errors(draws: int = FLIP_DRAWS, within: tuple[int, int] = FLIPS_WITHIN,
                     wrong: tuple[Fraction, ...] = (Fraction(2, 5), Fraction(3, 5),
                                                    Fraction(1, 5))) -> dict[Fraction, float]:
    """The flip check's chances of a false verdict, from exact binomial tails.

    With ``k`` ~ Binomial(``draws``, p) flipped images, accepted when ``low <= k <= high``:
    for p = 1/2 the chance that ``k`` falls outside (a correct answer fails), for each p in
    ``wrong`` the chance that it falls inside (a wrong answer passes). Each tail is
    ``sum(comb(n, k) * a**k * (b - a)**(n - k)) / b**n`` for p = a/b, in integers.

    Returns:
        p -> that chance.
    """
    low, high = within

    def inside(p: Fraction) -> Fraction:
        a, b = p.numerator, p.denominator
        total = sum(math.comb(draws, k) * a ** k * (b - a) ** (draws - k)
                    for k in range(low, high + 1))
        return Fraction(total, b ** draws)

    errors = {Fraction(1, 2): float(1 - inside(Fraction(1, 2)))}
    errors.update({p: float(inside(p)) for p in wrong})
    return errors


#: The draws of neighbouring images compared (image i's, then image i + 1's): flip with shift
#: sign, shift sign with flip, flip with flip, shift sign with shift sign.
NEIGHBOUR_PAIRS = ("flip-shift", "shift-flip", "flip-flip", "shift-shift")


def neighbour_agreements(flipped: np.ndarray, shifts: np.ndarray) -> list[int]:
    """For each of :data:`NEIGHBOUR_PAIRS`: of the FLIP_DRAWS - 1 neighbouring images, how
    many had draws that agree (flipped, or a negative shift). Independent draws give
    Binomial(FLIP_DRAWS - 1, 1/2) each; a draw seeded as the next image's other draw agrees
    every time."""
    negative = shifts < 0
    draws = {"flip": flipped, "shift": negative}
    counts = []
    for pair in NEIGHBOUR_PAIRS:
        first, second = pair.split("-")
        counts.append(int(np.count_nonzero(draws[first][:-1] == draws[second][1:])))
    return counts


def _flip_share(augment: Callable[[Any, int], Any]) -> tuple[int, int, int, int, list[int]]:
    """The flips of :data:`FLIP_DRAWS` images augmented with :data:`FLIP_SEED` are within
    :data:`FLIPS_WITHIN` (probability 1/2 each; see settings for the error bounds).

    So are the images flipped exactly when their shift is negative, and the shifts within
    +-MAX_DELTA / 2.

    Fewer than :data:`TWINS_ALIKE` of its :data:`TWIN_PAIRS` pairs of identical images got the
    same draws.

    So do neighbouring images' draws agree about half the time (:func:`neighbour_agreements`).

    Returns:
        How many of them were flipped, flipped exactly when their shift was negative, and
        shifted by less than MAX_DELTA / 2, how many pairs of identical images got the same
        draws, and the neighbours' agreements.
    """
    what = f"the {FLIP_DRAWS} images of augment(images, seed={FLIP_SEED})"
    try:
        out = _collect(augment(flip_images(), FLIP_SEED))
    except Exception as error:  # noqa: BLE001 - the student's code, reported to the student
        raise AssertionError(
            f"augment: on one thread, building and iterating {what} raised "
            f"{exception_line(error)}") from None
    flipped, shifts = flips_and_shifts(out, flip_image_array(), what)
    flips = int(np.count_nonzero(flipped))
    low, high = FLIPS_WITHIN
    if not low <= flips <= high:
        raise AssertionError(
            f"augment: expected each image flipped with probability 1/2, but {flips} of "
            f"{what} were flipped ({flips / FLIP_DRAWS:.1%}; expected {low}-{high}, "
            f"{low / FLIP_DRAWS:.0%}-{high / FLIP_DRAWS:.0%}: a correct answer lands "
            f"outside with probability below 1e-7)")
    # With the flip independent of the shift, and the shift uniform on [-MAX_DELTA,
    # MAX_DELTA], each of these counts is Binomial(FLIP_DRAWS, 1/2) too: the same band, the
    # same error bounds (settings).
    agree = int(np.count_nonzero(flipped == (shifts < 0)))
    if not low <= agree <= high:
        raise AssertionError(
            f"augment: expected the flip independent of the brightness shift, but of {what}, "
            f"{agree} were flipped exactly when their shift was negative or unflipped exactly "
            f"when it was not (expected {low}-{high} of {FLIP_DRAWS}, about half): draw the "
            f"flip and the shift from different seeds (e.g. split the element's seed in two)")
    central = int(np.count_nonzero(np.abs(shifts) < MAX_DELTA / 2))
    if not low <= central <= high:
        raise AssertionError(
            f"augment: expected brightness shifts drawn uniformly from [-{MAX_DELTA}, "
            f"{MAX_DELTA}], so half of them within +-{MAX_DELTA / 2}, but {central} of the "
            f"{FLIP_DRAWS} shifts of {what} were (expected {low}-{high}): draw the shift from "
            f"a uniform distribution, not a normal or truncated normal one")
    neighbours = neighbour_agreements(flipped, shifts)
    for pair, agreeing in zip(NEIGHBOUR_PAIRS, neighbours, strict=True):
        if not low <= agreeing <= high:
            first, second = ("flip" if part == "flip" else "shift sign"
                             for part in pair.split("-"))
            raise AssertionError(
                f"augment: expected each image's draws unrelated to its neighbour's, but of "
                f"{what}, {agreeing} of {FLIP_DRAWS - 1} images had a {first} that agreed with "
                f"the next image's {second} (expected {low}-{high}, about half): seed each "
                f"draw of each element from the seed and the element's own index, and keep "
                f"the flip's seed apart from every element's shift seed (index + 1 is the next "
                f"element's)")
    twins = twins_alike(flipped, shifts)
    if twins >= TWINS_ALIKE:
        raise AssertionError(
            f"augment: expected each image's draws to depend on its position, not its pixels, "
            f"but {twins} of the {TWIN_PAIRS} pairs of identical images among {what} got the "
            f"same flip and the same shift (a correct answer: about 2.5e-6 per pair): seed "
            f"each element from the seed and its index (enumerate), not from its content")
    return flips, agree, central, twins, neighbours


def _collect(dataset: Any) -> np.ndarray:
    return np.stack([_values(x, "iterating the augmented dataset") for x in own_threads(dataset)])


def run_augment(augment: Callable[[Any, int], Any], *, trials: int = STRESS_TRIALS,
                observed: list | None = None, one_thread: dict | None = None) -> Result:
    """Check one-thread properties, then stress two threads iterating the dataset at once.

    For the judge: ``one_thread`` (when given) is updated with what the one-thread runs
    showed (each seed's shifts and flips, the largest difference between the two seeds'
    images, the flips of the :data:`FLIP_DRAWS` images); ``observed`` (when given) gets one
    entry per trial: per thread, each image's largest difference from the first run (None
    when the thread did not see :data:`IMAGES` images).
    """
    originals = image_array()
    try:
        # The first iteration of the dataset the threads will iterate again is the reference.
        dataset = augment(images(), 11)
        reference = _collect(dataset)
        other_seed = _collect(augment(images(), 12))
    except Exception as error:  # noqa: BLE001 - the student's code, reported to the student
        raise AssertionError(
            f"augment: on one thread, building and iterating the augmented dataset raised "
            f"{exception_line(error)} (expected "
            f"{IMAGES} augmented images)") from None
    shifts, flipped = _augmentation_sane(reference, originals)
    more_shifts, more_flipped = _augmentation_sane(other_seed, originals)
    _distribution_sane(shifts + more_shifts)
    if np.array_equal(reference, other_seed):
        raise AssertionError(
            "augment: seeds 11 and 12 gave the same images; expected the seed to choose the "
            "random shifts and flips.")
    _seeds_unrelated(shifts, more_shifts)
    flips, agree, central, twins, neighbours = _flip_share(augment)
    global_gaps = _global_seed_gaps(augment, reference)
    if one_thread is not None:
        one_thread.update({
            "shifts": [shifts, more_shifts], "flipped": [flipped, more_flipped],
            "seed_gap": float(np.max(np.abs(reference - other_seed))), "flips": flips,
            "flips_with_negative_shift": agree, "central_shifts": central,
            "neighbours_agreeing": neighbours,
            "twins_alike": twins, "global_seed_gaps": global_gaps})

    def setup() -> dict[str, Any]:
        return {"dataset": dataset, "seen": [None, None]}

    def worker(k: int) -> Callable[[dict[str, Any]], None]:
        def run(state: dict[str, Any]) -> None:
            state["seen"][k] = _collect(state["dataset"])
        return run

    def check(state: dict[str, Any]) -> None:
        if observed is not None:
            observed.append([
                [float(np.max(np.abs(got[i] - reference[i]))) for i in range(IMAGES)]
                if got is not None and got.shape == reference.shape else None
                for got in state["seen"]])
        for k, got in enumerate(state["seen"]):
            assert got is not None and got.shape == reference.shape, (
                f"thread {k} saw {0 if got is None else len(got)} images, expected {IMAGES}")
            differ = [i for i in range(IMAGES) if not np.allclose(got[i], reference[i],
                                                                  atol=1e-6)]
            assert not differ, (
                f"iterating augment(images, seed=11) again, on thread {k} while another thread "
                f"iterated it too, gave different images at position(s) {differ[:5]} than the "
                f"first run: expected the same augmentation on every run (draw randomness "
                f"from stateless ops seeded by the seed and the element's position)")

    return stress(setup, [worker(0), worker(1)], check, trials=trials, seed=SEED,
                  timeout_s=TIMEOUT_S)


def _global_seed_gaps(augment: Callable[[Any, int], Any], reference: np.ndarray) -> list[float]:
    """``augment(images(), 11)`` built again under each of :data:`GLOBAL_SEEDS` (TensorFlow's
    global seed, restored afterwards) gives ``reference`` again.

    Returns:
        For each global seed, the largest difference from ``reference``.

    Raises:
        AssertionError: it gave other images (or raised).
    """
    import tensorflow as tf
    from tensorflow.python.eager import context

    saved = context.global_seed()
    gaps: list[float] = []
    try:
        for global_seed in GLOBAL_SEEDS:
            tf.random.set_seed(global_seed)
            what = f"augment(images, seed=11) built after tf.random.set_seed({global_seed})"
            try:
                again = _collect(augment(images(), 11))
            except Exception as error:  # noqa: BLE001 - the student's code, reported
                raise AssertionError(f"augment: {what} raised {exception_line(error)}") from None
            gap = (float(np.max(np.abs(again - reference))) if again.shape == reference.shape
                   else math.inf)
            if not gap <= 1e-5:
                raise AssertionError(
                    f"augment: {what} gave other images than before (largest difference "
                    f"{gap:.3g}); expected images that depend on the seed argument alone, "
                    "not on TensorFlow's global seed: an op seed (tf.random.uniform(seed=...)) "
                    "is combined with the global seed, and a stateful op's draws change with "
                    "it. Use stateless ops seeded by the seed and the element's position")
            gaps.append(gap)
    finally:
        tf.random.set_seed(saved)
    return gaps


def _seeds_unrelated(shifts: list[float], more_shifts: list[float]) -> None:
    """Seed 12's draws are not seed 11's moved by one position (an element seed ``seed +
    index`` gives element i + 1 of seed 11 the draws of element i of seed 12).

    Shifts are rounded to 4 decimals, so for a correct answer two shifts agree with
    probability below 2e-4 / 0.4 = 5e-4; :data:`SHIFTED_MATCHES` agreements among the
    ``IMAGES - 1`` pairs of either direction happen with probability below
    2 * comb(15, 4) * (5e-4) ** 4 < 2e-10.
    """
    for ahead, behind, first in ((shifts, more_shifts, 11), (more_shifts, shifts, 12)):
        same = sum(a == b for a, b in zip(ahead[1:], behind[:-1], strict=True))
        if same >= SHIFTED_MATCHES:
            raise AssertionError(
                f"augment: expected the draws of seeds 11 and 12 unrelated, but seed "
                f"{first}'s image i + 1 got the same brightness shift as seed {23 - first}'s "
                f"image i for {same} of {len(shifts) - 1} positions: the seeds' random draws "
                f"are copies of each other moved by one position, as with an "
                f"element seed of seed + index. Combine the seed and the position into the "
                f"element's seed as a pair (e.g. tf.stack([seed, index])), not as a sum")


def _distribution_sane(shifts: list[float]) -> None:
    """The shifts of both seeds follow the spec's distribution, within the bounds."""
    count = len(shifts)
    negative, positive = sum(d < 0 for d in shifts), sum(d > 0 for d in shifts)
    if min(negative, positive) < MIN_EACH_SIGN:
        raise AssertionError(
            f"augment: expected brightness shifts drawn uniformly from [-{MAX_DELTA}, "
            f"{MAX_DELTA}], so about as many negative as positive, but the {count} images of "
            f"seeds 11 and 12 got {negative} negative and {positive} positive shifts")
    if max(shifts) - min(shifts) < MIN_SPREAD:
        raise AssertionError(
            f"augment: expected brightness shifts spread over [-{MAX_DELTA}, {MAX_DELTA}], but "
            f"the {count} images of seeds 11 and 12 got shifts from {min(shifts):+.3f} to "
            f"{max(shifts):+.3f} only")


def _augmentation_sane(out: np.ndarray,
                       originals: np.ndarray) -> tuple[list[float], list[bool]]:
    """Each image is its input (or mirror) plus one shift within bounds, in input order.

    Returns:
        The shifts (rounded to 4 decimals), and whether each image was flipped.
    """
    if out.shape != originals.shape:
        raise AssertionError(f"augment: expected {len(originals)} images shaped "
                             f"{originals.shape[1:]}, got an array shaped {out.shape}")
    deltas: list[float] = []
    flipped_each: list[bool] = []
    for i, (got, image) in enumerate(zip(out, originals, strict=True)):
        matches = [(flipped, float(np.mean(got - base)))
                   for flipped, base in ((False, image), (True, image[:, ::-1]))
                   if np.allclose(got - base, np.mean(got - base), atol=1e-5)]
        if not matches:
            raise AssertionError(
                f"augment: image {i} is not the input image (or its left-right mirror) plus "
                f"one brightness shift; expected exactly that augmentation, in input order")
        flipped, delta = matches[0]
        if abs(delta) > MAX_DELTA + 1e-5:
            raise AssertionError(f"augment: image {i} was shifted by {delta:+.3f}; expected "
                                 f"shifts in [-{MAX_DELTA}, {MAX_DELTA}]")
        deltas.append(round(delta, 4))
        flipped_each.append(flipped)
    if len(set(deltas)) < len(deltas) // 2:
        raise AssertionError(
            f"augment: expected a different random brightness shift for each image, but the "
            f"{len(deltas)} images got only {len(set(deltas))} different shifts: is every "
            f"element seeded with the same seed?")
    flips = sum(flipped_each)
    if not 0 < flips < len(out):
        raise AssertionError(f"augment: expected about half of the images flipped, saw "
                             f"{flips} of {len(out)}")
    return deltas, flipped_each
