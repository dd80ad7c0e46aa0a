"""Lesson 08's judge: the pool's processes, outputs, memory and leftovers with its explored
bookkeeping, the ledger's workers and totals, and choose's choices on the grader's
measurements (the rule recomputed here), from what ran."""

from __future__ import annotations

import hashlib
import json
import statistics

from autograder.judges import Malformed, expect, field, items

# The check's settings (``autograder.checks.processes.settings``; a test ties them).
MB = 2**20
#: Exercise 1: the pool's workers, the graded requests (threads x requests each), the bytes of
#: the model's weights (a float32 embedding table 98,304 x 64, a 64 x 4 kernel and 4 biases),
#: the most private memory a worker may hold (half the weights) and the most shared memory
#: the pool may make (1.5 copies).
POOL_WORKERS = 2
POOL_REQUESTS = 4 * 6
#: The longest idle time before the pool is asked again, and its margin (settings).
IDLE_MAX_S, IDLE_MARGIN_S = 15.0, 1.0
OUTPUTS = 4
WEIGHTS_BYTES = (98_304 * 64 + 64 * 4 + 4) * 4
PRIVATE_SHARE = 0.5
SEGMENT_COPIES = 1.5
#: How close an output must be to the model's (``np.allclose``'s rtol and atol, as the check).
RTOL = 1e-5
ATOL = 1e-6
#: The model's output for each graded request, in order (``processes.model._graded_requests``).
EXPECTED_OUTPUTS = (
    (-0.41371590349022247, 3.198706743181442, 0.04613864212023927, 3.8957940016718653),
    (4.425566003541232, -1.681290035222685, 0.35297338457378846, -3.4028846974910083),
    (2.1825203074721737, 1.4921582360511387, -0.9389714608649097, 2.927731869477159),
    (3.260365106652883, -0.2368252167232856, -0.2040025598767723, -0.14076051784121402),
    (2.013181833088062, 0.8981742696365111, -0.5855269110401773, 0.31014254590479684),
    (2.4604215311242523, 5.2548999922696815, -3.013550610728976, 2.819116830504263),
    (1.9903346376661495, 3.83678206253918, 0.15429753049336925, 3.049467822565912),
    (-1.0499080136598762, 0.8898012731671765, -1.552253798339731, 2.703929663148542),
    (4.247606330402186, 1.5442787885704938, 1.4836730765149364, -1.097220660323086),
    (0.6698280214205086, 0.8091031866441163, -2.434022607590369, 1.2553696496075766),
    (-2.760196628871612, 4.885933462955778, 0.5182442513551573, 3.6449416463875246),
    (-0.7788268349626346, 5.564661981914298, -0.20203494893263063, 1.347759539660121),
    (0.11639003526565483, 1.846175802599814, 0.5099763741653904, -0.314169297371792),
    (4.562844912758379, 0.06621802236902052, -0.3130798869441657, -0.03716962609774965),
    (2.133000173443559, 3.962282573562135, 2.643451367500296, 2.073720468253848),
    (2.440816749234316, 0.6087997017401365, -1.658971895255733, 0.09147176993254724),
    (3.1710217309055144, 3.15424855232426, -2.4425760309549807, -0.5100659529980769),
    (1.4748025610656053, 2.3692809567155453, 0.8027351438778862, -1.9982346349275488),
    (1.2093990941471453, 2.2180674595222105, 0.7893943304336368, -0.5452620451994739),
    (2.860441039921064, 0.6012199046024853, -1.599984915658815, 1.3264973447237964),
    (0.16300320162973914, 5.935398903225296, -4.27436236268681, 4.160578031184455),
    (4.343766105395316, -0.555352499654159, -0.7322063594126672, 3.577972136752764),
    (2.3638688510773753, 3.5457881608004165, -1.8411621807100205, -1.1795575754042757),
    (-1.1174221937970663, 3.0586139660304745, 2.71575767879607, 3.0170210289154795),
)
#: The bookkeeping explored: two clients, the most schedules and the seeded samples after the
#: bound, each exploration's workers and tokens (eager, then gathering, then eager with every
#: client sending client 0's tokens), and what a stub worker answers client ``k``, whose
#: request's first token is ``k + 1`` (``bookkeeping.stub_output``), with ``np.allclose``'s
#: default tolerance, as the check.
BOOKKEEPING_CLIENTS = 2
BOOKKEEPING_SCHEDULES = 3000
BOOKKEEPING_SAMPLES = 20
EXPLORATIONS = [[True, False], [False, False], [True, True]]
STUB_RTOL = 1e-5
STUB_ATOL = 1e-8
#: Exercise 2: the ledger's workers and the totals its accounts hold after 3 x 3,000 updates,
#: none lost (``process_workers.expected_totals``).
LEDGER_WORKERS = 3
EXPECTED_TOTALS = [3422, 3415, 3429, 3435, 3296, 3326, 3344, 3351]
#: The account each worker's last update goes to, and the range of the extra amount the grader
#: draws for it (``process_workers.extra_amount``): the totals hold those amounts too.
LAST_ACCOUNTS = [6, 0, 6]
LEDGER_EXTRA = (1_000, 1_000_000)
#: Exercise 3: the cases, the SHA-256 of their measurements as the judge reads them
#: (:func:`fingerprint`), and the rule's margin.
CHOICE_CASES = 43
CHOICE_CASES_SHA256 = "98f2f95df6d98b9224177cb3a42ac170412c3a8736776b90130c43240e018677"
MARGIN = 1.2

_NUMBER = (int, float)


def _close(got: list, want: tuple | list, rtol: float, atol: float) -> bool:
    return len(got) == len(want) and all(
        abs(g - w) <= atol + rtol * abs(w) for g, w in zip(got, want, strict=True))


def _none_left(seen: dict, key: str, what: str) -> None:
    """``seen[key]``: an empty list, or a rejection naming ``what`` it holds."""
    left = items(seen, key, (int, str), at_least=0, at_most=1000)
    expect(not left, f"{what}: {left}")


# --------------------------------------------------------------------------- exercise 1


def _explored(run: dict) -> list:
    """An exploration's schedules: as many as ran, and as many as the graded search runs."""
    ran = field(run, "schedules_run", int)
    covered = field(run, "covered", bool)
    bounded = field(run, "bounded", int)
    graded, samples = BOOKKEEPING_SCHEDULES, BOOKKEEPING_SAMPLES
    expect(ran == graded or (covered and 0 < ran == bounded < graded)
           or (not covered and 0 < bounded and ran == bounded + samples < graded),
           f"{ran} schedules ran ({bounded} within the search's bound), not the graded "
           f"{graded} or the bound and {samples} more")
    return items(run, "schedules", list, at_least=ran, at_most=ran)


def _stub_output(client: int) -> list[float]:
    first = client + 1
    return [float(first), first + 0.5, -float(first), 2.0 * first]


#: How close()'s held thread may have gone on ("" when none was held; "finish" only when
#: close() returned while it was held, which fails).
CLOSE_RELEASED_BY = ("", "join", "quiet", "timeout", "finish")


def check_pool(seen: dict) -> None:
    """Every worker started with spawn and ran the grader's target; every request got the
    model's output for itself; no serving worker held a private copy of the weights, the
    shared memory held about one copy, nothing was left after close(); and, when the
    bookkeeping was explored, every schedule of both explorations gave each client its own
    answer and close() of the stubbed pool waited for the pool's threads."""
    workers = field(seen, "workers", int)
    expect(workers >= POOL_WORKERS, f"{workers} worker processes started, not {POOL_WORKERS}")
    not_spawned = field(seen, "not_spawned", int)
    expect(not_spawned == 0, f"{not_spawned} worker processes were not started with spawn")
    served, other = field(seen, "served", int), field(seen, "other_target", int)
    expect(other == 0 or served >= POOL_WORKERS,
           f"{other} worker processes ran another target (and {served} the grader's)")
    by_workers = field(seen, "by_workers", int)
    expect(by_workers >= POOL_REQUESTS,
           f"the workers answered {by_workers} of the {POOL_REQUESTS} requests")
    outputs = items(seen, "outputs", (list, type(None)), at_least=POOL_REQUESTS,
                    at_most=POOL_REQUESTS)
    for index, (output, want) in enumerate(zip(outputs, EXPECTED_OUTPUTS, strict=True)):
        expect(output is not None, f"predict() returned None for request {index}")
        got = items({"output": output}, "output", float, at_least=0, at_most=64)
        expect(_close(got, want, RTOL, ATOL),
               f"request {index} got {[round(g, 3) for g in got]}, not its own output "
               f"{[round(w, 3) for w in want]}: an answer went to another request")
    idle_s = field(seen, "idle_s", _NUMBER)
    expect(0 <= idle_s <= IDLE_MAX_S + IDLE_MARGIN_S, f"the pool was left idle {idle_s} s")
    again = field(seen, "after_idle", list)
    got = items({"after_idle": again}, "after_idle", float, at_least=0, at_most=64)
    expect(_close(got, EXPECTED_OUTPUTS[0], RTOL, ATOL),
           f"after the pool was idle, request 0 got {[round(g, 3) for g in got]}, not its "
           f"output {[round(w, 3) for w in EXPECTED_OUTPUTS[0]]}")
    weights_mb = WEIGHTS_BYTES / MB
    private = items(seen, "private_mb", _NUMBER, at_least=0, at_most=1000)
    expect(all(mb <= PRIVATE_SHARE * weights_mb for mb in private),
           f"a worker held {max(private, default=0):.0f} MB of private memory for "
           f"{weights_mb:.0f} MB of weights: its own copy")
    segment_mb = field(seen, "segment_mb", _NUMBER)
    expect(segment_mb <= SEGMENT_COPIES * weights_mb,
           f"the shared-memory blocks held {segment_mb:.0f} MB for {weights_mb:.0f} MB of "
           "weights: more than one copy")
    still = field(seen, "still_running", int)
    expect(still == 0, f"{still} workers still ran after close()")
    left = items(seen, "leftovers", int, at_least=2, at_most=2)
    expect(left == [0, 0], f"{left[0]} processes and {left[1]} segments were left")
    explorations = items(seen, "bookkeeping", dict, at_least=0, at_most=len(EXPLORATIONS))
    kinds = [[field(run, "eager", bool), field(run, "same_tokens", bool)]
             for run in explorations]
    expect(kinds in ([], EXPLORATIONS),
           f"the bookkeeping was explored as {kinds} (eager workers, same tokens), not "
           f"{EXPLORATIONS}")
    for run in explorations:
        wanted = [v for client in range(BOOKKEEPING_CLIENTS)
                  for v in _stub_output(0 if run["same_tokens"] else client)]
        workers_were = ("eager" if run["eager"] else "gathering") + " workers" + (
            " and every client sending the same tokens" if run["same_tokens"] else "")
        for number, answers in enumerate(_explored(run), 1):
            got = items({"answers": answers}, "answers", float, at_least=0,
                        at_most=len(wanted))
            expect(_close(got, wanted, STUB_RTOL, STUB_ATOL),
                   f"schedule {number} with {workers_were}: the clients got {got}, not "
                   f"their own answers {wanted}")
    _closed_after_its_threads(seen, explored=bool(explorations))


def _closed_after_its_threads(seen: dict, *, explored: bool) -> None:
    """When the bookkeeping was explored, close() of the stubbed pool returned, without
    raising, and not while a thread the pool started still ran (held, or not yet released by
    a join); none ran on afterwards."""
    closing = field(seen, "closing", (dict, type(None)))
    if not explored:
        expect(closing is None, "close() was watched on stub workers the bookkeeping never ran on")
        return
    expect(closing is not None, "close() of the pool on stub workers was not watched")
    field(closing, "threads", int)
    field(closing, "held", bool)
    released_by = field(closing, "released_by", str)
    expect(released_by in CLOSE_RELEASED_BY, "the close run does not say how its thread went on")
    expect(field(closing, "returned", bool) and not field(closing, "raised", bool),
           "close() on stub workers did not return, or raised")
    expect(not field(closing, "returned_while_held", bool)
           and field(closing, "running_at_return", int) == 0,
           "close() returned while a thread the pool started was still running")
    expect(field(closing, "left_running", int) == 0,
           "a thread the pool started still ran after close() returned")
    field(closing, "worker_held", bool)
    expect(field(closing, "worker_released_by", str) in CLOSE_RELEASED_BY,
           "the close run does not say how its worker went on")
    expect(field(closing, "worker_running_at_return", bool) is False,
           "close() returned while a worker process was still running")


# --------------------------------------------------------------------------- exercise 2


def check_ledger(seen: dict) -> None:
    """Every worker ran in a process of its own started with spawn, so did every other
    process, none failed, was stopped or still ran when it returned, the accounts hold every
    update, and nothing was left."""
    methods = items(seen, "methods", list, at_least=0, at_most=1000)
    started = [items({"method": m}, "method", (int, str), at_least=2, at_most=2)
               for m in methods]
    everyone = list(range(LEDGER_WORKERS))
    expect([index for index, _ in started] == everyone,
           f"the workers {[index for index, _ in started]} were seen starting, not {everyone}")
    forked = [method for _, method in started if method != "spawn"]
    expect(not forked, f"worker processes were started with {forked}, not spawn")
    ran = items(seen, "ran", int, at_least=0, at_most=1000)
    expect(ran == everyone, f"the workers {ran} ran in a process, not {everyone}")
    others = field(seen, "others_not_spawned", int)
    expect(others == 0, f"{others} other processes were not started with spawn")
    _none_left(seen, "failed", "workers raised")
    _none_left(seen, "stopped", "workers were stopped before their last update")
    _none_left(seen, "running", "workers still made updates when it returned")
    extras = items(seen, "extras", int, at_least=LEDGER_WORKERS, at_most=LEDGER_WORKERS)
    expect(all(LEDGER_EXTRA[0] <= extra < LEDGER_EXTRA[1] for extra in extras),
           f"the workers' extra amounts {extras} are not from {list(LEDGER_EXTRA)}")
    expected = list(EXPECTED_TOTALS)
    for account, extra in zip(LAST_ACCOUNTS, extras, strict=True):
        expected[account] += extra
    totals = items(seen, "totals", int, at_least=0, at_most=1000)
    expect(totals == expected,
           f"the ledger counted {sum(totals)} of {sum(expected)} ({totals}, not "
           f"{expected}): updates were lost")
    left = items(seen, "leftovers", int, at_least=2, at_most=2)
    expect(left == [0, 0], f"{left[0]} processes and {left[1]} segments were left")


# --------------------------------------------------------------------------- exercise 3


def fingerprint(cases: list[list]) -> str:
    """The SHA-256 of cases, each ``[threads' rates, their MB, processes' rates, their MB,
    budget]``."""
    text = json.dumps(cases, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def rule(threads: list[float], processes: list[float], processes_mb: float,
         budget: float) -> str:
    """The lesson's rule: processes only within the budget and with a median of the paired
    per-round ratios of at least MARGIN."""
    if processes_mb > budget:
        return "threads"
    ratios = [p / t for p, t in zip(processes, threads, strict=True)]
    return "processes" if statistics.median(ratios) >= MARGIN else "threads"


def check_choose(seen: dict) -> None:
    """On each of the grader's cases, the choice the lesson's rule makes."""
    cases = items(seen, "cases", dict, at_least=CHOICE_CASES, at_most=CHOICE_CASES)
    measured = []
    for case in cases:
        threads = items(case, "threads", float, at_least=1, at_most=100)
        processes = items(case, "processes", float, at_least=len(threads),
                          at_most=len(threads))
        measured.append([threads, field(case, "threads_mb", float), processes,
                         field(case, "processes_mb", float), field(case, "budget", float)])
    if fingerprint(measured) != CHOICE_CASES_SHA256:
        raise Malformed("the cases choose was graded on are not the grader's")
    for number, (case, (threads, _, processes, processes_mb, budget)) in enumerate(
            zip(cases, measured, strict=True), 1):
        chose = field(case, "chose", str)
        want = rule(threads, processes, processes_mb, budget)
        expect(chose == want, f"case {number}: choose returned {chose!r}, the rule says "
                              f"{want!r}")
