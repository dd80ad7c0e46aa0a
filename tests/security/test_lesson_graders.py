"""Attacks on a lesson's grader from inside the answer itself (not through the sandbox).

Lesson 04's augment check builds the answer's images again under other TensorFlow global seeds
(``tf.random.set_seed``): an answer that switched the setter off would keep op-seeded draws
that depend on the global seed from ever changing. The runner's integrity check names it.

Lesson 08's pool is graded by starting it with the grader's worker (``target``), which answers
out of order on purpose, so that a pool taking answers in arrival order hands threads each
other's outputs. A pool that ignores ``target`` and starts an in-order worker of its own would
dodge that test: the grader must notice the substitution, whatever else the pool gets right.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from autograder.checks import process_workers, processes
from tests.checks.answers_processes import ArrivalOrderPool


def in_order_worker(source: Any, shapes: Any, requests: Any, answers: Any) -> None:
    """A worker of the student's own: answers each request as soon as it takes it."""
    block, views = process_workers._attach(source, shapes)
    try:
        for request_id, tokens in iter(requests.get, None):
            answers.put((request_id, process_workers.embedding_predict(views, shapes, tokens)))
    finally:
        process_workers._detach(block, views)


class IgnoresTheTargetPool(ArrivalOrderPool):
    """Takes answers in arrival order, and swaps the grader's worker for an in-order one."""

    def __init__(self, weights: Any, workers: int = 2, target: Any = None) -> None:
        super().__init__(weights, workers, in_order_worker)


@pytest.mark.usefixtures("shm_to_itself")
@pytest.mark.parametrize("run", range(5))
def test_a_pool_that_runs_its_own_worker_instead_of_the_target_fails(run):
    before = processes.snapshot()
    with pytest.raises(AssertionError) as failure:
        processes.check_pool(IgnoresTheTargetPool)
    assert str(failure.value).startswith("SharedWeightsPool: ")
    assert "did not run the target it was given" in str(failure.value)
    assert not before.since(), "the check cleans up what the pool left"


def test_the_functions_a_check_hands_an_answer_lead_to_none_of_its_records():
    """Lesson 06's ``access`` and ``save`` and the ``fn`` its ``log_access`` is handed, lesson
    05's hidden ledgers' ``record`` and ``totals`` (and the factory of the ledgers that race
    once), and lesson 04's logged ``read`` and
    ``transform`` are opaque: no ``.args``, closure or ``__self__`` reaches the check's log,
    its trial state, the implementation or the count of calls that ran at once (the runner's
    audit hook refuses their defaults; tests/kernel/test_seal.py)."""
    from autograder.checks import tfdata, tracing
    from autograder.checks.stress_tests.running import grade_against, racy_once_run
    from autograder.harness import tamper

    handed = []

    def log_access(log, op, resource, fn, lock=None):
        handed.append(fn)
        try:
            return fn()
        finally:
            log.append({"thread": threading.current_thread().name, "op": op,
                        "resource": resource, "start": 0, "end": 0, "lock": lock})

    tracing.run_log_access(log_access, trials=1)
    tracing.run_log_access_explore(log_access, schedules=1)
    assert len(handed) == 8

    def stress_ledger(make_ledger):
        ledger_class = type(make_ledger())
        handed.extend([vars(ledger_class)["record"], vars(ledger_class)["totals"]])

    rows = grade_against(stress_ledger)
    assert rows and len(handed) == 8 + 2 * len(rows)

    def stress_ledger_keeping_its_factory(make_ledger):
        ledger_class = type(make_ledger())
        handed.extend([make_ledger, vars(ledger_class)["record"], vars(ledger_class)["totals"]])

    racy_once_run(stress_ledger_keeping_its_factory)
    assert len(handed) == 8 + 2 * len(rows) + 3

    def publish_locked(best, lock, name, score, access, save):
        handed.extend([access, save])
        with lock:
            if access("read", "best", lambda: best["score"], "best_lock") < score:
                access("write", "best", lambda: best.update(score=score, by=name), "best_lock")
                save(name)

    tracing.run_publish_locked(publish_locked, schedules=1)
    log: list = []
    handed += [tfdata.make_read(0.0, log), tfdata.make_transform(log)]
    for function in handed:
        assert function.__code__ is tamper.OPAQUE_CODE, function
        assert function.__closure__ is None and not hasattr(function, "args"), function
        assert not hasattr(function, "__self__") and not hasattr(function, "__wrapped__")
    assert float(handed[-2](3)[0]) == 30.0 and log[0][0] == "read"


def test_an_answer_can_neither_fill_nor_change_the_checks_stored_references_and_models():
    """The checks' caches (reference outputs, warm models, model pools) were module dicts: one
    line such as ``warmup._REFERENCES[key] = outputs_of_the_wrong_answer``, or writing into a
    stored reference array, would have made a wrong answer match. Now the stores are private
    (``autograder.checks.cache``): code under test gets fresh values and cannot call them."""
    import os

    from autograder.checks import cache, capstone
    from autograder.checks.capstone import models, throughput, updates
    from autograder.checks.variables import choice, publisher
    from autograder.checks.warmup import lazy
    from autograder.checks.warmup import models as warmup_models
    from autograder.harness import tamper

    rows = capstone.requests_for(5, 1, 2)[0]
    handed = capstone.reference_outputs(5, rows)
    assert capstone.reference_outputs(5, rows) is not handed
    namespace = {"capstone": capstone, "rows": rows}
    exec(compile("def grader():\n    return capstone.reference_outputs(5, rows)\n",  # noqa: S102
                 os.path.join(cache.GRADER_DIR, "checks", "a_check.py"), "exec"), namespace)
    stored = namespace["grader"]()
    assert namespace["grader"]() is stored and stored is not handed
    for reference in (handed, stored):
        with pytest.raises(ValueError):
            reference[...] = 0
        with pytest.raises(ValueError):
            reference.flags.writeable = True
    stores = (models._REFERENCES, updates._POOL, throughput._BUSY, publisher._POOLS,
              choice._SMALL_MODEL, warmup_models._REFERENCES, lazy._WARM_MODELS)
    try:
        for store in stores:
            with pytest.raises(PermissionError):
                store(5, lambda: "forged")
            with pytest.raises(TypeError):
                store[5] = "forged"
        assert len(tamper._attempts) == len(stores)
    finally:
        tamper._attempts.clear()


def test_an_answer_that_switches_off_the_global_seed_the_augment_check_sets_is_named(
        monkeypatch):
    import tensorflow as tf
    from tensorflow.python.eager import context

    import autograder.harness  # noqa: F401 - the runner imports these before it seals
    from autograder.checks import tfdata  # noqa: F401
    from autograder.kernel import seal

    problems = seal.integrity_check(seal.protected_modules())
    assert problems() == []
    monkeypatch.setattr(tf.random, "set_seed", lambda seed: None)
    monkeypatch.setattr(context, "global_seed", lambda: None)
    named = problems()
    assert f"{tf.random.__name__}.set_seed was replaced" in named, named
    assert "tensorflow.python.eager.context.global_seed was replaced" in named, named


def test_a_learner_that_winds_its_clock_back_still_loses_its_gradient_and_is_named():
    """Lesson 09's backlog runs the answer's clocks ahead while the learner is held, so a push
    that retries "for at most two seconds" gives up and drops its gradient. An answer that
    keeps winding that clock back from its own threads (``timeouts.pass_time``, the name the
    grader's own learner check calls) is refused, recorded and still fails."""
    from autograder.checks import a3c, timeouts
    from autograder.harness import tamper
    from tests.checks.answers_a3c import DeadlineDropLearner

    class ClockRewindingLearner(DeadlineDropLearner):
        """Polls a full inbox "for at most two seconds", winding its clock back an hour at
        every poll: were that allowed, the deadline would never come."""

        def wait_for_room(self) -> None:
            super().wait_for_room()
            try:
                timeouts.pass_time(-3600.0)
            except ValueError:
                pass

    try:
        result = a3c.run_learner_backlog(ClockRewindingLearner)
        assert not result.ok, result.message
        assert "moving the answer's clock by -3600.0" in tamper._attempts
    finally:
        tamper._attempts.clear()


@pytest.mark.parametrize("put_back", [False, True], ids=["cleared", "cleared_and_put_back"])
def test_a_service_that_starts_its_batcher_past_the_update_first_hold_is_named(put_back):
    """Lesson 07's update-first step holds the threads the constructor starts at the thread
    trace hook (``threading.settrace``, a name any notebook can call). A constructor that
    clears that hook, even one that puts it back before returning, starts its batcher unheld
    (its warm-up under the model's lock then beats the update again): the attempt is named."""
    import threading

    from autograder.checks import capstone
    from autograder.harness import tamper
    from tests.checks.answers_capstone import BatcherWarmsUnderLockService

    class HoldClearingService(BatcherWarmsUnderLockService):
        def __init__(self, model, example):
            hook = threading.gettrace()
            threading.settrace(None)
            super().__init__(model, example)
            if put_back:
                threading.settrace(hook)

    try:
        capstone.run_update_first(HoldClearingService)
        assert tamper._attempts == [
            "starting the service's threads past the grader's hold (threading.settrace)"]
    finally:
        tamper._attempts.clear()
