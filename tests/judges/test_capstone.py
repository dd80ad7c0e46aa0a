"""Lesson 07's judge: accepts what the correct services' runs observe, refuses a race's outcome
(also an explored schedule's, and an update before any request that was not served)."""

import copy
import warnings

import numpy as np
import pytest

from autograder.checks import capstone, variables, warmup
from autograder.checks.capstone import bookkeeping
from autograder.checks.capstone.accounting import _rows_with_bad
from autograder.judges import Malformed, Rejected
from autograder.judges import capstone as judge
from tests.checks import answers_capstone as answers
from tests.checks.grading_runs import judged

CHECKS = ("check_cold_start", "check_weight_updates", "check_accounting", "check_throughput")


@pytest.fixture(scope="module")
def observed():
    """Each check's report for the lesson's solution and for the demo's correct service."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {(name, answer.__name__): judged(getattr(capstone, name), answer)
                for answer in (answers.ConditionBatchService, answers.QueueCommandService)
                for name in CHECKS}


def _solution(observed, name):
    return copy.deepcopy(observed[(name, answers.ConditionBatchService.__name__)])


def test_the_judge_accepts_what_correct_services_observe(observed):
    for (name, _), seen in observed.items():
        getattr(judge, name)(seen)


@pytest.mark.parametrize("name", CHECKS)
def test_a_wrong_one_thread_answer_is_refused(observed, name):
    seen = _solution(observed, name)
    seen["smoke"]["output"] = [0.0] * judge.OUTPUTS
    with pytest.raises(Rejected, match="on one thread"):
        getattr(judge, name)(seen)


def test_a_model_built_twice_or_a_client_that_raised_in_one_trial_is_refused(observed):
    seen = _solution(observed, "check_cold_start")
    seen["trials"][3]["weights"] = 8
    with pytest.raises(Rejected, match="8 weights"):
        judge.check_cold_start(seen)
    seen = _solution(observed, "check_cold_start")
    seen["trials"][4]["outputs"][17] = None
    with pytest.raises(Rejected, match="client 8's request 1 got no answer"):
        judge.check_cold_start(seen)


def _row(versions):
    """The versioned model's output row for these layer versions (first layer first)."""
    return [float(sum(versions[j:])) for j in range(len(versions))]


def test_a_torn_or_stale_answer_while_weights_are_updated_is_refused(observed):
    seen = _solution(observed, "check_weight_updates")
    run = seen["trials"][0]["reads"][0]
    version = round(run[-1])
    run[4:] = _row([version] * 4 + [version - 1] * 4)
    with pytest.raises(Rejected, match="torn"):
        judge.check_weight_updates(seen)
    seen = _solution(observed, "check_weight_updates")
    last = [r for r in seen["trials"][2]["reads"] if r[0] == 5][-1]
    last[4:] = _row([judge.FIRST_VERSION + judge.UPDATES - 1] * judge.LAYERS)
    with pytest.raises(Rejected, match="version 6"):
        judge.check_weight_updates(seen)


def test_an_update_before_any_request_not_served_is_refused(observed):
    seen = _solution(observed, "check_weight_updates")
    step = seen["update_first"]
    step["outputs"][1] = list(step["first"][1])
    with pytest.raises(Rejected, match="after an update before any request, request 1 got"):
        judge.check_weight_updates(seen)
    seen = _solution(observed, "check_weight_updates")
    seen["update_first"]["outputs"][2] = None
    with pytest.raises(Rejected, match="request 2 got no answer"):
        judge.check_weight_updates(seen)
    seen = _solution(observed, "check_weight_updates")
    step = seen["update_first"]
    step["expected"], step["outputs"] = copy.deepcopy(step["first"]), copy.deepcopy(step["first"])
    with pytest.raises(Rejected, match="the new weights answer what the first weights do"):
        judge.check_weight_updates(seen)


def _versioned_row(versions):
    """The versioned model's answer for these layer versions (``variables.read_versions``)."""
    return [float(sum(versions[index:])) for index in range(len(versions))]


def test_a_torn_answer_held_mid_call_or_an_update_missed_or_lost_after_it_is_refused(observed):
    seen = _solution(observed, "check_weight_updates")
    layers = variables.LAYERS
    first = capstone.FIRST_VERSION
    assert seen["mid_call"]["held"] == _versioned_row([first] * layers)
    torn = [first] * (layers // 2) + [first + 1] * (layers // 2)
    seen["mid_call"]["held"] = _versioned_row(torn)
    with pytest.raises(Rejected, match=r"held mid-call .*versions \[1, 1, 1, 1, 2, 2, 2, 2\]"):
        judge.check_weight_updates(seen)
    seen = _solution(observed, "check_weight_updates")
    seen["mid_call"]["after"] = _versioned_row([first] * layers)
    with pytest.raises(Rejected, match="sent after that update returned"):
        judge.check_weight_updates(seen)
    seen = _solution(observed, "check_weight_updates")
    assert seen["mid_set"] == {"held": True, "after": _versioned_row([first + 2] * layers)}
    seen["mid_set"]["after"] = _versioned_row([first + 1] * layers)  # the second update lost
    with pytest.raises(Rejected, match="while another was written into the model"):
        judge.check_weight_updates(seen)


def test_an_explored_schedule_that_lost_or_swapped_a_request_is_refused(observed):
    seen = _solution(observed, "check_accounting")
    schedules = seen["explored"]["clients"]["schedules"]
    schedules[7]["answers"][0], schedules[7]["answers"][2] = (schedules[7]["answers"][2],
                                                              schedules[7]["answers"][0])
    with pytest.raises(Rejected, match="schedule 8 with two clients, request 0 got"):
        judge.check_accounting(seen)
    seen = _solution(observed, "check_accounting")
    seen["explored"]["closing"]["schedules"][3]["outcome"] = "pending"
    with pytest.raises(Rejected, match="schedule 4 with close\\(\\) racing predict\\(\\), the "
                                       "request ended 'pending'"):
        judge.check_accounting(seen)
    seen = _solution(observed, "check_accounting")
    answered = next(s for s in seen["explored"]["closing"]["schedules"]
                    if s["outcome"] == "answered")
    answered["answer"] = [2.0, 2.5, -2.0, 4.0]  # request 1's answer
    with pytest.raises(Rejected, match="not its own answer"):
        judge.check_accounting(seen)
    seen = _solution(observed, "check_accounting")
    seen["explored"]["closing"]["schedules"][0]["closed"] = False
    with pytest.raises(Rejected, match="close\\(\\) did not return"):
        judge.check_accounting(seen)
    for scenario in ("clients", "closing"):
        seen = _solution(observed, "check_accounting")
        assert all(s["left_running"] == 0 for s in seen["explored"][scenario]["schedules"])
        seen["explored"][scenario]["schedules"][2]["left_running"] = 1
        with pytest.raises(Rejected, match="schedule 3 .* close\\(\\) returned while 1 of "
                                           "the service's threads still ran"):
            judge.check_accounting(seen)


def test_an_explored_search_cut_short_or_a_scenario_left_out_is_refused(observed):
    seen = _solution(observed, "check_accounting")
    clients = seen["explored"]["clients"]
    clients["schedules_run"] -= 1
    del clients["schedules"][-1]
    with pytest.raises(Rejected, match="schedules ran"):
        judge.check_accounting(seen)
    seen = _solution(observed, "check_accounting")
    del seen["explored"]["closing"]
    with pytest.raises(Rejected, match="scenarios"):
        judge.check_accounting(seen)


def test_a_service_not_explored_on_the_stub_model_is_judged_on_real_threads(observed):
    seen = _solution(observed, "check_accounting")
    seen["explored"] = None
    judge.check_accounting(seen)


def test_a_request_lost_at_close_or_a_count_lost_is_refused(observed):
    seen = _solution(observed, "check_accounting")
    seen["close"]["outcomes"][5] = "pending"
    seen["close"]["outputs"][5] = None
    with pytest.raises(Rejected, match="client 1's request 1 ended 'pending'"):
        judge.check_accounting(seen)
    seen = _solution(observed, "check_accounting")
    seen["concurrent"]["stats"]["requests"] -= 1
    with pytest.raises(Rejected, match="a count was lost"):
        judge.check_accounting(seen)
    seen = _solution(observed, "check_accounting")
    seen["lone"]["stats"]["batches"] += 1  # a batch counted for a lone malformed request
    with pytest.raises(Rejected, match="so it is no batch"):
        judge.check_accounting(seen)


def test_a_request_accepted_before_close_and_refused_is_refused(observed):
    seen = _solution(observed, "check_accounting")
    index = seen["close"]["accepted"].index(True)
    seen["close"]["outcomes"][index] = "RuntimeError"
    seen["close"]["outputs"][index] = None
    client, request = divmod(index, capstone.CLOSE_REQUESTS)
    with pytest.raises(Rejected, match=f"client {client}'s request {request} waited for its "
                                       "answer as close\\(\\) came \\(accepted\\)"):
        judge.check_accounting(seen)
    seen = _solution(observed, "check_accounting")
    del seen["close"]["accepted"]
    with pytest.raises(Malformed, match="'accepted' is missing"):
        judge.check_accounting(seen)


def test_a_lock_per_call_rate_or_call_count_or_a_copy_per_client_is_refused(observed):
    seen = _solution(observed, "check_throughput")
    for run, lock in zip(seen["answer_runs"], seen["lock_runs"], strict=True):
        run["seconds"] = lock[1]
    with pytest.raises(Rejected, match="1.00x the global lock's"):
        judge.check_throughput(seen)
    for per_call in (1, 2):  # as the lock makes; as flat combining made in a lucky run
        seen = _solution(observed, "check_throughput")
        for run in seen["answer_runs"]:
            run["calls"] = -(-run["requests"] // per_call)
        with pytest.raises(Rejected, match="fewer than 3 requests per call"):
            judge.check_throughput(seen)
    seen = _solution(observed, "check_throughput")
    seen["extra_bytes"] = capstone.CLIENTS * judge.COPY_BYTES
    with pytest.raises(Rejected, match="more than 2 copies"):
        judge.check_throughput(seen)
    seen = _solution(observed, "check_throughput")
    seen["answer_runs"][2]["computed"][9] = False
    with pytest.raises(Rejected, match="without the model computing them"):
        judge.check_throughput(seen)


@pytest.mark.parametrize(("name", "key"), [
    ("check_cold_start", "trials"), ("check_cold_start", "trials_run"),
    ("check_weight_updates", "trials"), ("check_weight_updates", "update_first"),
    ("check_weight_updates", "mid_call"), ("check_weight_updates", "mid_set"),
    ("check_accounting", "close"), ("check_accounting", "concurrent"),
    ("check_accounting", "lone"),
    ("check_accounting", "explored"), ("check_throughput", "lock_runs"),
    ("check_throughput", "extra_bytes"), ("check_throughput", "smoke")])
def test_a_report_without_a_decisive_observation_is_refused(observed, name, key):
    seen = _solution(observed, name)
    del seen[key]
    with pytest.raises(Malformed, match=key):
        getattr(judge, name)(seen)


def test_the_judges_constants_are_the_checks_settings():
    for name in ("CLIENTS", "COLD_TRIALS", "COLD_REQUESTS", "UPDATE_TRIALS", "UPDATE_CLIENTS",
                 "UPDATES", "FIRST_VERSION", "ACCOUNT_SEQUENTIAL", "ACCOUNT_CLIENTS",
                 "ACCOUNT_REQUESTS", "ACCOUNT_BAD_CLIENTS", "CLOSE_CLIENTS", "CLOSE_REQUESTS",
                 "THROUGHPUT_ROUNDS", "THROUGHPUT_REQUESTS", "MIN_SPEEDUP", "MAX_EXTRA_COPIES",
                 "MIN_REQUESTS_PER_CALL",
                 "UPDATE_FIRST_REQUESTS", "EXPLORE_SCHEDULES", "EXPLORE_SAMPLES"):
        assert getattr(judge, name) == getattr(capstone, name), name
    assert judge.SCENARIOS == [name for name, *_ in bookkeeping._SCENARIOS]
    assert judge.EXPLORED_REQUESTS == bookkeeping._REQUESTS
    for request in range(judge.EXPLORED_REQUESTS):
        assert judge._stub_answer(request) == bookkeeping.stub_answer(request)
        model = bookkeeping.StubModel()
        assert model.predict_on_batch(bookkeeping.stub_row(request)[None]).tolist() == [
            judge._stub_answer(request)]
    assert judge.EXPECTED_WEIGHTS == warmup.EXPECTED_WEIGHTS
    assert judge.LAYERS == variables.LAYERS
    model = capstone.serving_model(capstone.SEED)
    model(np.zeros((1, capstone.FEATURES), dtype="float32"))
    assert judge.COPY_BYTES == capstone.weight_bytes(model)
    rows = capstone.requests_for(capstone.SEED, 1, 1)[0]
    assert capstone.reference_outputs(capstone.SEED, rows).shape == (1, judge.OUTPUTS)
    _, bad = _rows_with_bad(capstone.SEED, capstone.ACCOUNT_CLIENTS, capstone.ACCOUNT_REQUESTS,
                            capstone.ACCOUNT_BAD_CLIENTS)
    assert bad == {(c, judge.BAD_REQUEST) for c in range(judge.ACCOUNT_BAD_CLIENTS)}
    want = np.array([0.5, -2.0, 1e-6, 30.0])
    for scale in (0.5, 0.99, 1.01, 2.0):  # the check's tolerance, either side of its edge
        got = want + scale * (judge.ATOL + judge.RTOL * np.abs(want))
        accepted = True
        try:
            judge._close(got.tolist(), want.tolist(), "a request")
        except Rejected:
            accepted = False
        assert accepted == capstone.same_answer(got, want), scale
