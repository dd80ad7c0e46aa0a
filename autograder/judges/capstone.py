"""Lesson 07's judge: the service's answers, versions, counts, close() and speed, from what ran."""

from __future__ import annotations

import statistics

from autograder.judges import Malformed, expect, explored, field, fresh_versions, items

# The check's settings (``autograder.checks.capstone.settings``; a test ties them).
#: Numbers in one answer (the served model's outputs), and how close an answer must be to
#: the model's own output for its row (``np.allclose``'s rtol and atol, as the check).
OUTPUTS = 4
RTOL = 1e-4
ATOL = 1e-5
#: Clients released together (cold start, throughput).
CLIENTS = 16
#: Part 1: trials, requests per client, and the weights the served model holds once built.
COLD_TRIALS = 5
COLD_REQUESTS = 2
EXPECTED_WEIGHTS = 4
#: Part 2: trials, clients, updates, the version served first, and the layers of the
#: versioned model (each answer's first LAYERS numbers name every layer's version).
UPDATE_TRIALS = 3
UPDATE_CLIENTS = 6
UPDATES = 6
FIRST_VERSION = 1
LAYERS = 8
#: Part 2's update before any request: the requests sent after it.
UPDATE_FIRST_REQUESTS = 3
#: Part 3: one client in sequence, then many at once (the third request of the first few
#: malformed), then clients sending while close() comes.
ACCOUNT_SEQUENTIAL = 5
ACCOUNT_CLIENTS = 16
ACCOUNT_REQUESTS = 8
ACCOUNT_BAD_CLIENTS = 4
BAD_REQUEST = 2
CLOSE_CLIENTS = 12
CLOSE_REQUESTS = 4
#: Part 3's explored bookkeeping, per scenario: the most schedules and the seeded samples
#: after the bound; the scenarios; the requests of the ``clients`` scenario. What the stub
#: model answers request ``i`` is :func:`_stub_answer` (``bookkeeping.stub_answer``).
EXPLORE_SCHEDULES = 3000
EXPLORE_SAMPLES = 20
SCENARIOS = ["clients", "closing"]
EXPLORED_REQUESTS = 3
#: Part 4: timed rounds, requests per client in a round (and in the unmeasured first run),
#: the least ratio to the global lock, the least requests per model call in the timed runs,
#: the extra copies allowed, and the bytes of one copy
#: of the served model's weights (8 x 16 + 16 + 16 x 4 + 4 float32 numbers).
THROUGHPUT_ROUNDS = 3
THROUGHPUT_REQUESTS = 4
WARMUP_REQUESTS = 2
MIN_SPEEDUP = 2.0
MIN_REQUESTS_PER_CALL = 3.0
MAX_EXTRA_COPIES = 2
COPY_BYTES = 848

_NUMBER = (int, float)
_COUNT = (int, float, bool)


def _floats(values: object, what: str, count: int) -> list[float]:
    """``values``: a list of exactly ``count`` floats."""
    return items({what: values}, what, float, at_least=count, at_most=count)


def _near(got: list[float], want: list[float]) -> bool:
    """``np.allclose(got, want)`` with the check's tolerance."""
    return all(abs(g - w) <= ATOL + RTOL * abs(w) for g, w in zip(got, want, strict=True))


def _close(output: object, expected: object, what: str) -> None:
    """An answer the model's own output for its row (``np.allclose``), or a rejection."""
    expect(output is not None, f"{what} got no answer")
    got = _floats(output, what, OUTPUTS)
    want = _floats(expected, f"{what}'s expected output", OUTPUTS)
    expect(_near(got, want), f"{what} got {[round(g, 4) for g in got]}, not the model's output "
                             f"for its row {[round(w, 4) for w in want]}")


def _smoke(seen: dict) -> None:
    smoke = field(seen, "smoke", dict)
    _close(field(smoke, "output", list), field(smoke, "expected", list),
           "on one thread, the request")


def _trials(seen: dict, graded: int) -> list:
    ran = field(seen, "trials_run", int)
    expect(ran == graded, f"{ran} trials ran, not the graded {graded}")
    return items(seen, "trials", dict, at_least=graded, at_most=graded)


def _rows(seen: dict, key: str, count: int) -> list:
    return items(seen, key, (list, type(None)), at_least=count, at_most=count)


def check_cold_start(seen: dict) -> None:
    """The one-thread answer, and in every trial: the model's four weights and every client's
    answers, each the model's output for the client's own row."""
    _smoke(seen)
    requests = CLIENTS * COLD_REQUESTS
    for number, trial in enumerate(_trials(seen, COLD_TRIALS), 1):
        weights = field(trial, "weights", int)
        expect(weights == EXPECTED_WEIGHTS,
               f"in trial {number} the model held {weights} weights after serving, not "
               f"{EXPECTED_WEIGHTS}: it was built by several threads at once")
        outputs, expected = _rows(trial, "outputs", requests), _rows(trial, "expected", requests)
        for index, (output, want) in enumerate(zip(outputs, expected, strict=True)):
            client, request = divmod(index, COLD_REQUESTS)
            _close(output, want, f"in trial {number}, client {client}'s request {request}")


def _versions(row: list) -> list[int]:
    """Each layer's version in an answer of the versioned model (``read_versions``)."""
    return [round(row[i] - row[i + 1]) for i in range(LAYERS - 1)] + [round(row[-1])]


def _update_trial(trial: dict, number: int) -> None:
    quiet = items(trial, "quiet", int, at_least=2, at_most=2)
    expect(quiet == [FIRST_VERSION, FIRST_VERSION],
           f"in trial {number}, an update published while the service was idle gave the next "
           f"request version {quiet[1]}, not {quiet[0]}")
    published = {}
    for entry in items(trial, "published", list, at_least=UPDATES, at_most=UPDATES):
        version, at = entry if len(entry) == 2 else (None, None)
        if type(version) is not int or type(at) is not float:
            raise Malformed("an update is not [version, time]")
        published[version] = at
    wanted = list(range(FIRST_VERSION + 1, FIRST_VERSION + UPDATES + 1))
    expect(sorted(published) == wanted,
           f"in trial {number} the updates that returned were {sorted(published)}, not {wanted}")
    last_version = wanted[-1]
    by_client: dict[int, list] = {client: [] for client in range(UPDATE_CLIENTS)}
    for run in items(trial, "reads", list, at_least=UPDATE_CLIENTS, at_most=10_000):
        if len(run) != 4 + LAYERS or type(run[0]) is not int or type(run[1]) is not int \
                or any(type(value) is not float for value in run[2:]):
            raise Malformed("a run of answers is not [client, count, first, last, *row]")
        expect(run[0] in by_client and run[1] >= 1 and run[2] <= run[3],
               f"in trial {number} a run of answers names client {run[0]}, {run[1]} answers")
        by_client[run[0]].append(run)
    for client, runs in by_client.items():
        expect(bool(runs), f"in trial {number} client {client} got no answer")
        reads = []
        for _, _, _, latest, *row in runs:
            versions = _versions(row)
            expect(min(versions) == max(versions),
                   f"in trial {number} client {client} got an answer computed with layers of "
                   f"versions {versions}: a torn answer")
            reads.append((versions[0], latest))
        fresh_versions(reads, published, first=FIRST_VERSION, last=last_version,
                       who=f"in trial {number} client {client}")


def _update_first(seen: dict) -> None:
    """After an update before any request, every request got the new weights' output for its
    row, which is not what the model's first weights answer (the step tells them apart)."""
    step = field(seen, "update_first", dict)
    count = UPDATE_FIRST_REQUESTS
    outputs, expected = _rows(step, "outputs", count), _rows(step, "expected", count)
    first = _rows(step, "first", count)
    for index, (output, want, old) in enumerate(zip(outputs, expected, first, strict=True)):
        what = f"after an update before any request, request {index}"
        _close(output, want, what)
        expect(not _near(_floats(want, f"{what}'s expected output", OUTPUTS),
                         _floats(old, f"{what}'s first output", OUTPUTS)),
               f"{what}: the new weights answer what the first weights do")


def _mid_call(seen: dict) -> None:
    """The request held halfway through its model call while an update ran got one version,
    the old or the new; the request sent after that update returned got the new one."""
    step = field(seen, "mid_call", dict)
    field(step, "returned_while_held", bool)
    for key, what, allowed in (
            ("held", "the request held mid-call while update_weights() ran",
             (FIRST_VERSION, FIRST_VERSION + 1)),
            ("after", "the request sent after that update returned", (FIRST_VERSION + 1,))):
        row = field(step, key, list)
        if len(row) < LAYERS or any(type(value) is not float for value in row):
            raise Malformed(f"{key} is not an answer of the versioned model")
        versions = _versions(row)
        expect(min(versions) == max(versions) and versions[0] in allowed,
               f"{what} got an answer computed with layers of versions {versions}, not one of "
               f"versions {list(allowed)}")


def _mid_set(seen: dict) -> None:
    """The request sent once an update that came while another was written had returned got
    that last update."""
    step = field(seen, "mid_set", dict)
    field(step, "held", bool)
    row = field(step, "after", list)
    if len(row) < LAYERS or any(type(value) is not float for value in row):
        raise Malformed("after is not an answer of the versioned model")
    versions, last = _versions(row), FIRST_VERSION + 2
    expect(versions == [last] * LAYERS,
           f"after an update that came while another was written into the model, the next "
           f"request got an answer computed with layers of versions {versions}, not {last}")


def check_weight_updates(seen: dict) -> None:
    """The one-thread answer; in every trial: every update returned, and every client's
    answers were of one version each, published, never older than an update that had returned
    before the request, never going backwards, and the last one the last version; after an
    update before any request, the requests got the new weights; a request held mid-call
    while an update ran got one version, the request after it the new one; and after an
    update that came while another was written, the next request got the last one."""
    _smoke(seen)
    for number, trial in enumerate(_trials(seen, UPDATE_TRIALS), 1):
        _update_trial(trial, number)
    _update_first(seen)
    _mid_call(seen)
    _mid_set(seen)


def _phase(seen: dict, name: str, clients: int, requests: int, *, bad: set = frozenset(),
           refused_ok: bool = False) -> tuple[dict, int, list[float]]:
    """One phase's requests checked; its ``stats()``, answers and the answered requests' send
    times."""
    phase = field(seen, name, dict)
    count = clients * requests
    outcomes = items(phase, "outcomes", str, at_least=count, at_most=count)
    outputs, expected = _rows(phase, "outputs", count), _rows(phase, "expected", count)
    starts = items(phase, "starts", float, at_least=count, at_most=count)
    answered = []
    for index, outcome in enumerate(outcomes):
        client, request = divmod(index, requests)
        what = f"in the {name} phase, client {client}'s request {request}"
        if (client, request) in bad:
            expect(outcome == "ValueError",
                   f"{what} (malformed) ended {outcome!r}, not with ValueError")
            continue
        if refused_ok and outcome == "RuntimeError":
            continue
        expect(outcome == "answered", f"{what} ended {outcome!r}, not with its answer")
        _close(outputs[index], expected[index], what)
        answered.append(starts[index])
    stats = field(phase, "stats", dict)
    counts = {key: field(stats, key, _COUNT) for key in ("requests", "batches", "errors")}
    return counts, len(answered), answered


def _stub_answer(request: int) -> list[float]:
    """What the explored runs' stub model answers request ``request``."""
    first = float(request + 1)
    return [first, first + 0.5, -first, 2.0 * first]


def _explored_bookkeeping(seen: dict) -> None:
    """When the service was explored on the stub model: both scenarios, each as long as the
    graded search; in every ``clients`` schedule each request got its own answer, in every
    ``closing`` schedule the request got its own answer or RuntimeError and close()
    returned."""
    scenarios = field(seen, "explored", (dict, type(None)))
    if scenarios is None:
        return
    expect(sorted(scenarios) == SCENARIOS,
           f"the bookkeeping was explored in the scenarios {sorted(scenarios)}, not {SCENARIOS}")
    clients = explored(field(scenarios, "clients", dict), EXPLORE_SCHEDULES, EXPLORE_SAMPLES)
    for number, schedule in enumerate(clients, 1):
        answers = items(schedule, "answers", list, at_least=EXPLORED_REQUESTS,
                        at_most=EXPLORED_REQUESTS)
        for request, answer in enumerate(answers):
            what = f"in explored schedule {number} with two clients, request {request}"
            got = _floats(answer, what, OUTPUTS)
            expect(_near(got, _stub_answer(request)),
                   f"{what} got {got}, not its own answer {_stub_answer(request)}")
        expect(field(schedule, "left_running", int) == 0,
               f"in explored schedule {number} with two clients, close() returned while "
               f"{schedule['left_running']} of the service's threads still ran")
        requests, batches, errors = items(schedule, "stats", _COUNT, at_least=3, at_most=3)
        expect(requests == EXPLORED_REQUESTS and errors == 0
               and 1 <= batches <= EXPLORED_REQUESTS,
               f"in explored schedule {number} with two clients, stats() said requests "
               f"{requests}, batches {batches}, errors {errors} with no request in flight")
    closing = explored(field(scenarios, "closing", dict), EXPLORE_SCHEDULES, EXPLORE_SAMPLES)
    for number, schedule in enumerate(closing, 1):
        what = f"in explored schedule {number} with close() racing predict(), the request"
        outcome = field(schedule, "outcome", str)
        answer = field(schedule, "answer", (list, type(None)))
        if outcome == "RuntimeError":
            expect(answer is None, f"{what} was refused and answered")
        else:
            expect(outcome == "answered", f"{what} ended {outcome!r}")
            got = _floats(answer, what, OUTPUTS)
            expect(_near(got, _stub_answer(0)),
                   f"{what} got {got}, not its own answer {_stub_answer(0)}")
        expect(field(schedule, "closed", bool), f"{what}: close() did not return")
        expect(field(schedule, "left_running", int) == 0,
               f"{what}: close() returned while {schedule['left_running']} of the service's "
               "threads still ran")


def check_accounting(seen: dict) -> None:
    """The one-thread answer; each phase's requests answered with their own rows (malformed
    ones raising ValueError) and ``stats()`` exact; after close(): every request answered or
    refused (answered when it waited for its answer as close() came), none answered once close()
    had returned, some answered, the service's threads ended, the counts those answered, and a
    later request refused; and, when the bookkeeping was explored, every schedule of both scenarios
    answered each request (see :func:`_explored_bookkeeping`)."""
    _smoke(seen)
    stats, _, _ = _phase(seen, "sequential", 1, ACCOUNT_SEQUENTIAL)
    want = {"requests": ACCOUNT_SEQUENTIAL, "batches": ACCOUNT_SEQUENTIAL, "errors": 0}
    expect(stats == want, f"after the sequential requests stats() was {stats}, not {want}")
    bad = {(client, BAD_REQUEST) for client in range(ACCOUNT_BAD_CLIENTS)}
    stats, _, _ = _phase(seen, "concurrent", ACCOUNT_CLIENTS, ACCOUNT_REQUESTS, bad=bad)
    total = ACCOUNT_SEQUENTIAL + ACCOUNT_CLIENTS * ACCOUNT_REQUESTS
    expect(stats["requests"] == total and stats["errors"] == len(bad),
           f"after {total} requests ({len(bad)} malformed) stats() was {stats}: a count was "
           "lost or made twice")
    expect(ACCOUNT_SEQUENTIAL + 1 <= stats["batches"] <= total - len(bad),
           f"stats() reported {stats['batches']} batches, not {ACCOUNT_SEQUENTIAL + 1} to "
           f"{total - len(bad)}")
    lone, _, _ = _phase(seen, "lone", 1, 1, bad={(0, 0)})
    want = {"requests": total + 1, "batches": stats["batches"], "errors": len(bad) + 1}
    expect(lone == want, f"after one malformed request sent alone stats() was {lone}, not "
                         f"{want}: no model call answered it, so it is no batch")
    stats, served, starts = _phase(seen, "close", CLOSE_CLIENTS, CLOSE_REQUESTS,
                                   refused_ok=True)
    close = field(seen, "close", dict)
    count = CLOSE_CLIENTS * CLOSE_REQUESTS
    accepted = items(close, "accepted", bool, at_least=count, at_most=count)
    outcomes = items(close, "outcomes", str, at_least=count, at_most=count)
    for index, (was_accepted, outcome) in enumerate(zip(accepted, outcomes, strict=True)):
        client, request = divmod(index, CLOSE_REQUESTS)
        expect(not was_accepted or outcome == "answered",
               f"client {client}'s request {request} waited for its answer as close() came "
               f"(accepted) and ended {outcome!r}: close() must answer what it accepted")
    expect(field(close, "closed", bool) is True, "close() did not return")
    left = field(close, "left", int)
    expect(left == 0, f"{left} thread(s) the service started still ran after close()")
    running = field(close, "running_at_return", int)
    expect(running == 0, f"{running} thread(s) the service started still ran when close() "
                         "returned: it did not join them")
    returned = field(close, "returned", float)
    expect(all(start <= returned for start in starts),
           "a request sent after close() had returned was answered")
    expect(served > 0, "every request was refused once close() came: the queue was dropped")
    expect(stats["requests"] == served and stats["errors"] == 0,
           f"after close() stats() was {stats}, not {served} requests and 0 errors")
    after = field(close, "after_close", str)
    expect(after == "RuntimeError", f"predict() after close() ended {after!r}")
    _explored_bookkeeping(seen)


def _rate(requests: int, seconds: float) -> float:
    return requests / max(seconds, 1e-9)


def check_throughput(seen: dict) -> None:
    """The one-thread answer; at most the allowed extra copies of the model's weights; every
    run of both designs served every request, the answer's each with its row's output computed
    by the model; at least the graded requests per model call over the timed runs; and the
    median of the rounds' ratios to the lock at least the graded one."""
    _smoke(seen)
    copy, extra = field(seen, "copy_bytes", int), field(seen, "extra_bytes", int)
    expect(copy == COPY_BYTES, f"one copy of the model's weights was {copy} bytes, not "
                               f"{COPY_BYTES}")
    expect(extra <= MAX_EXTRA_COPIES * COPY_BYTES,
           f"the service created {extra} bytes of weights, more than {MAX_EXTRA_COPIES} copies")
    runs = THROUGHPUT_ROUNDS + 1
    wanted = [CLIENTS * WARMUP_REQUESTS] + [CLIENTS * THROUGHPUT_REQUESTS] * THROUGHPUT_ROUNDS
    lock_rates, answer_rates = [], []
    requests_timed = calls_timed = 0
    for number, (run, requests) in enumerate(zip(items(seen, "lock_runs", list, at_least=runs,
                                                       at_most=runs), wanted, strict=True)):
        served, seconds = items({"run": run}, "run", _NUMBER, at_least=2, at_most=2)
        if type(served) is not int or type(seconds) is not float:
            raise Malformed("a lock run is not [requests, seconds]")
        expect(served == requests and seconds > 0,
               f"the lock's run {number} served {served} requests, not {requests}")
        lock_rates.append(_rate(served, seconds))
    for number, (run, requests) in enumerate(zip(items(seen, "answer_runs", dict,
                                                       at_least=runs, at_most=runs),
                                                 wanted, strict=True)):
        served, seconds = field(run, "requests", int), field(run, "seconds", float)
        expect(served == requests and seconds > 0,
               f"the answer's run {number} served {served} requests, not {requests}")
        outputs, expected = _rows(run, "outputs", served), _rows(run, "expected", served)
        computed = items(run, "computed", bool, at_least=served, at_most=served)
        for index, (output, want) in enumerate(zip(outputs, expected, strict=True)):
            _close(output, want, f"in the answer's run {number}, request {index}")
        missed = computed.count(False)
        expect(missed == 0, f"in the answer's run {number}, {missed} requests were answered "
                            "without the model computing them")
        answer_rates.append(_rate(served, seconds))
        model_calls = field(run, "calls", int)
        expect(model_calls >= 1, f"in the answer's run {number} the model made no call")
        if number:
            requests_timed += served
            calls_timed += model_calls
    expect(requests_timed >= MIN_REQUESTS_PER_CALL * calls_timed,
           f"the answer made {calls_timed} model calls for {requests_timed} requests in the "
           f"timed runs, fewer than {MIN_REQUESTS_PER_CALL:g} requests per call")
    ratio = statistics.median(answer / lock for answer, lock
                              in zip(answer_rates[1:], lock_rates[1:], strict=True))
    expect(ratio >= MIN_SPEEDUP, f"the answer served {ratio:.2f}x the global lock's requests/s, "
                                 f"not at least {MIN_SPEEDUP:g}x")
