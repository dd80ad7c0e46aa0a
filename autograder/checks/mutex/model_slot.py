"""Exercise 4, ModelSlot: requests served from two threads while a third swaps in a new model."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from autograder.checks.mutex.settings import SCHEDULES, SEED, _explore, observed_number
from autograder.checks.plain import plain
from autograder.harness import Result

OLD_VERSION, NEW_VERSION = 1, 2
EXAMPLE, BAD = "example", "bad"


class FakeModel:
    """Stands in for a warm Keras model in the graded runs.

    A batch is a ``(name, features)`` pair; ``predict_on_batch`` returns ``(version, name)``,
    so every output says which model computed it, and raises ``ValueError`` when the batch
    has the wrong number of features, as Keras does. ``calls`` lists the batches it served.
    """

    def __init__(self, version: int) -> None:
        self.version = version
        self.calls: list[str] = []

    def predict_on_batch(self, batch: tuple[str, int]) -> tuple[int, str]:
        name, features = batch
        if features != 3:
            raise ValueError(f"expected 3 features, got {features}")
        self.calls.append(name)
        return self.version, name


@dataclass
class SlotRun:
    """Shared state of one model-slot schedule."""

    slot: Any
    new: FakeModel
    answers: list[tuple[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    calls_when_swap_returned: list[str] = field(default_factory=list)
    after_swap: list[Any] = field(default_factory=list)


def run_model_slot(slot_class: Callable[[Any, int], Any], *, seed: int = SEED,
                   schedules: int = SCHEDULES, observed: list | None = None,
                   first_use: bool = False) -> Result:
    """Serve from two threads, one sending a bad batch, while a third swaps, under ``explore``.

    The slot starts with model version 1. Thread 0 calls ``swap(new_model, 2,
    example_batch)`` and then sends a good batch; thread 1 sends a batch with the wrong number
    of features (``predict`` must raise) and then a good one; thread 2 sends a good batch.
    With ``first_use``, only threads 0 and 2 run on the new slot, searched within two
    departures (a lock made on first use, by both threads at once; see
    :data:`~.settings.FIRST_USE_DEVIATIONS`). The
    check: no deadlock (a lock left held by the failed call, or taken twice by one thread,
    shows as one), the bad batch raised, every answer ``(version, output)`` names the version
    that computed ``output``, the new model's first call was the example batch and came before
    ``swap`` returned, and the predict after ``swap`` got version 2. When ``observed`` is
    given, each schedule that passed appends (for the judge) whether the bad batch raised,
    each answer as ``[version, version of the model that computed it]``, the batches the new
    model served and those it had served when ``swap`` returned, and the version the request
    made after ``swap`` got.
    """
    def setup() -> SlotRun:
        new = FakeModel(NEW_VERSION)
        return SlotRun(slot_class(FakeModel(OLD_VERSION), OLD_VERSION), new)

    def bad_then_good_request(run: SlotRun) -> None:
        try:
            run.slot.predict((BAD, 5))
        except Exception:  # noqa: BLE001 - the request fails, as it should
            pass
        else:
            run.problems.append("predict() on a batch the model rejects did not raise; "
                                "expected the model's exception to reach the caller")
        run.answers.append(("a request", run.slot.predict(("request 1", 3))))

    def one_request(run: SlotRun) -> None:
        run.answers.append(("a request", run.slot.predict(("request 2", 3))))

    def swap_then_request(run: SlotRun) -> None:
        run.slot.swap(run.new, NEW_VERSION, (EXAMPLE, 3))
        run.calls_when_swap_returned.extend(run.new.calls)
        answer = run.slot.predict(("request 3", 3))
        run.after_swap.append(answer)
        run.answers.append(("the request made after swap() returned", answer))

    def check(run: SlotRun) -> None:
        if run.problems:
            raise AssertionError(run.problems[0])
        for who, answer in run.answers:
            answer = plain(answer, "predict()")
            if not (isinstance(answer, tuple) and len(answer) == 2):
                raise AssertionError(
                    f"predict() returned {answer!r}, expected a (version, output) pair")
            version, output = answer
            if not (isinstance(output, tuple) and len(output) == 2):
                raise AssertionError(
                    f"predict() returned output {output!r}, expected what the model's "
                    "predict_on_batch returned")
            if version != output[0]:
                raise AssertionError(
                    f"{who} got version {version} with an output computed by model version "
                    f"{output[0]}; expected the version of the model that computed it. The "
                    "version and the model were read at different moments, and swap() changed "
                    "them in between")
        calls = plain(run.new.calls, "the batches predict() and swap() passed to the new "
                      "model: a batch name")
        if not calls or calls[0] != EXAMPLE:
            raise AssertionError(
                "the new model's first call was "
                + (f"{calls[0]!r}" if calls else "never made")
                + ", expected the warm-up on example_batch: a request reached the new model "
                "before it was warmed")
        if not run.calls_when_swap_returned:
            raise AssertionError("swap() returned before it had warmed the new model; "
                                 "expected the warm-up call to be made inside swap()")
        version = plain(run.after_swap[0], "predict()")[0]
        if version != NEW_VERSION:
            raise AssertionError(
                f"the request made after swap() returned got version {version}, expected "
                f"{NEW_VERSION}")
        if observed is not None:
            answers = [plain(answer, "predict()") for _, answer in run.answers]
            observed.append({
                "bad_raised": not run.problems,
                "answers": [[observed_number(answer[0]), observed_number(answer[1][0])]
                            for answer in answers],
                "new_calls": [_name(call) for call in calls],
                "calls_at_swap": [_name(call) for call in plain(
                    run.calls_when_swap_returned, "the batches swap() passed to the new model")],
                "after_swap": observed_number(version)})

    # The swapper first: one preemption between swap()'s stores of the model and the version
    # then lets a request read them mixed.
    workers = ([swap_then_request, one_request] if first_use
               else [swap_then_request, bad_then_good_request, one_request])
    return _explore(setup, workers, check, seed, schedules, first_use=first_use)


def _name(batch_name: Any) -> str | None:
    """A batch's name as the judge receives it (None for anything but a str)."""
    return batch_name if type(batch_name) is str else None
