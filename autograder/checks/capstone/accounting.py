"""Part 3, accounting and close: each request answered once, exact stats, a clean close()."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from autograder.checks.capstone.clients import (
    ClientRun,
    _close_quietly,
    _is_grader_thread,
    _new_threads,
    _start,
    _stuck_message,
    describe_threads,
    run_clients,
    wait_for_progress,
    wait_until,
)
from autograder.checks.capstone.models import (
    CallGate,
    _row,
    reference_outputs,
    requests_for,
    same_answer,
    serving_model,
    slow_model,
)
from autograder.checks.capstone.settings import (
    ACCOUNT_BAD_CLIENTS,
    ACCOUNT_CLIENTS,
    ACCOUNT_REQUESTS,
    ACCOUNT_SEQUENTIAL,
    BAD_SHAPES,
    CLOSE_CLIENTS,
    CLOSE_REQUESTS,
    FEATURES,
    HANDOVER_S,
    JOIN_GRACE_S,
    SEED,
    STALL_S,
    STUCK_S,
)
from autograder.checks.kit import describe_error, waiting_for_another, waiting_for_room
from autograder.checks.plain import plain


def _stats(service: Any) -> dict[str, Any]:
    """``service.stats()`` as plain data; AssertionError (and ``service`` closed) if not counts."""
    try:
        stats = service.stats()
        if not isinstance(stats, dict):
            raise AssertionError(f"stats() returned {type(stats).__name__}, expected a dict "
                                 "with 'requests', 'batches' and 'errors'")
        stats = plain(stats, "stats()", dict)
        missing = [key for key in ("requests", "batches", "errors") if key not in stats]
        if missing:
            raise AssertionError(f"stats() returned {stats!r}: the keys {missing} are missing; "
                                 "expected 'requests', 'batches' and 'errors'")
        for key in ("requests", "batches", "errors"):
            plain(stats[key], f"stats()[{key!r}]", (int, float))
    except AssertionError:
        _close_quietly(service)
        raise
    return stats


def _answers_problems(run: ClientRun, expected: dict[tuple[int, int], np.ndarray],
                      bad: set[tuple[int, int]], *, refused_ok: bool = False) -> list[str]:
    """Every call: its own row's answer, ``ValueError`` for malformed rows, nothing else."""
    problems = []
    for mine in run.calls:
        for call in mine:
            if not call.end:
                continue
            key = (call.client, call.index)
            if key in bad:
                if not isinstance(call.error, ValueError):
                    got = (f"raised {describe_error(call.error)}" if call.error else
                           "returned an answer")
                    problems.append(f"client {call.client}'s malformed request (a row of "
                                    f"shape {tuple(call.x.shape)}, expected ({FEATURES},)) "
                                    f"{got}; expected ValueError in that caller only")
            elif call.error is not None:
                if refused_ok and isinstance(call.error, RuntimeError):
                    continue
                problems.append(f"client {call.client}'s request {call.index} raised "
                                f"{describe_error(call.error)}; expected its answer")
            elif not same_answer(call.output, expected[key]):
                problems.append(f"client {call.client}'s request {call.index} got "
                                f"{np.round(np.asarray(call.output, dtype=float), 4)}, "
                                f"expected {np.round(expected[key], 4)} (the model's output "
                                "for its own row: answers went to the wrong caller, or were "
                                "lost)")
            if len(problems) >= 2:
                return problems
    return problems


def _outcome(call: Any) -> str:
    """How one request ended, in the judge's words."""
    if not call.end:
        return "pending"
    if call.error is None:
        return "answered"
    for kind in (ValueError, RuntimeError):
        if isinstance(call.error, kind):
            return kind.__name__
    return "other"


def _phase_seen(run: ClientRun, expected: dict[tuple[int, int], np.ndarray],
                stats: dict[str, Any]) -> dict[str, Any]:
    """One phase as the judge reads it: every request, client by client (how it ended, its
    answer, its row's model output, None for a malformed row, and when it was sent), and
    ``stats()`` after it."""
    calls = [call for mine in run.calls for call in mine]
    return {"outcomes": [_outcome(call) for call in calls],
            "outputs": [_row(call.output) if call.end and call.error is None else None
                        for call in calls],
            "expected": [_row(expected.get((call.client, call.index))) for call in calls],
            "starts": [float(call.start) for call in calls],
            "stats": {key: stats[key] for key in ("requests", "batches", "errors")}}


def _rows_with_bad(seed: int, clients: int, per_client: int, bad_clients: int
                   ) -> tuple[list[list[np.ndarray]], set[tuple[int, int]]]:
    """Request rows; the third request of the first ``bad_clients`` clients is malformed, in
    turn: a row of the wrong width, then rows of the right number of values in the wrong shape
    (:data:`BAD_SHAPES`), which a reshape would accept but the service must refuse."""
    rows = requests_for(seed, clients, per_client)
    bad = set()
    for c in range(bad_clients):
        rows[c][2] = np.ones(BAD_SHAPES[c % len(BAD_SHAPES)], dtype="float32")
        bad.add((c, 2))
    return rows, bad


def accounting_problems(service_class: Callable[..., Any], *, seed: int = SEED,
                        record: list[CloseRun] | None = None,
                        observed: dict | None = None) -> list[str]:
    """Run the four phases of part 3 and return what went wrong (empty when all is right).

    1. One client sends :data:`ACCOUNT_SEQUENTIAL` requests one after another: each answer is
       right and afterwards ``stats()`` is exactly that many requests, as many batches (one
       model call per request when requests come one at a time) and no error.
    2. :data:`ACCOUNT_CLIENTS` clients send :data:`ACCOUNT_REQUESTS` each, released together;
       the third request of :data:`ACCOUNT_BAD_CLIENTS` of them is malformed
       (:data:`BAD_SHAPES`). Each answer is the client's own row's; each malformed request
       raises ``ValueError`` in its caller; ``stats()`` counts every request once, the
       malformed ones as errors, and between one and one-per-request batches for the rest.
    3. One malformed request, sent alone: ``ValueError``, and ``stats()`` counts one more
       request and one more error, but no batch (no model call answered it).
    4. On a new service over :func:`slow_model`, :data:`CLOSE_CLIENTS` clients send
       :data:`CLOSE_REQUESTS` each, and ``close()`` is called while requests wait in the
       service's queue, by construction rather than by timing: the first model call after
       the service was built (the early clients' first batch) is held inside the model; only
       then do the late clients (every other one) send their first request; once each is
       seen waiting inside ``predict()`` for its answer (handed over: the batch that could
       take it is held), ``close()`` is called on its own thread; once ``close()`` is seen
       waiting (for the service's threads) or has returned, the held call goes on. So a
       service that stops without answering what it had queued loses the late requests in
       every run, however loaded the machine (the waits for "seen" are bounded by
       :data:`HANDOVER_S`: a service that waits in another way, a lock held around the
       model in the caller's thread for instance, is closed then, and graded the same).
       Every request gets its answer or ``RuntimeError`` (refused: the service is closed), and a
       late request seen waiting for its answer when ``close()`` was called (accepted: not still
       waiting for room in a full ``queue.Queue``) gets its answer; none hangs; ``close()`` returns
       in time; the threads the service started have ended within :data:`JOIN_GRACE_S` of
       ``close()`` returning; the statistics count the requests that were not refused; ``predict``
       after ``close()`` raises ``RuntimeError``.

    Args:
        service_class: The answer.
        seed: Seeds the models and requests.
        record: Receives the close test's :class:`CloseRun` (what ``close()`` met).
        observed: Receives what each phase that passed saw, for the judge: ``"sequential"``,
            ``"concurrent"`` and ``"lone"`` (:func:`_phase_seen`) and ``"close"`` (the same,
            and when ``close()`` returned, whether it did, the service's threads still
            running after it, and how a ``predict()`` after it ended).
    """
    before = set(threading.enumerate())
    model = serving_model(seed)
    rows = requests_for(seed, 1, ACCOUNT_SEQUENTIAL)
    try:
        service = service_class(model, rows[0][0].copy())
    except Exception as error:  # noqa: BLE001 - reported to the student
        return [f"InferenceService(model, example) raised {describe_error(error)}"]

    # Phase 1: one client, one request at a time.
    run = run_clients(service, rows, deadline_s=STUCK_S)
    if run.stuck:
        return [_stuck_message(run, "one client sent its requests one at a time", before)]
    expected = _expected(seed, rows)
    problems = _answers_problems(run, expected, set())
    if problems:
        return problems
    stats = _stats(service)
    want = {"requests": ACCOUNT_SEQUENTIAL, "batches": ACCOUNT_SEQUENTIAL, "errors": 0}
    if {k: stats[k] for k in want} != want:
        return [f"after one client sent {ACCOUNT_SEQUENTIAL} requests one at a time, stats() "
                f"was {stats!r}; expected {want} (requests come one at a time, so each is a "
                "batch of one)"]
    if observed is not None:
        observed["sequential"] = _phase_seen(run, expected, stats)

    # Phase 2: many clients at once, a few malformed requests.
    rows, bad = _rows_with_bad(seed + 1, ACCOUNT_CLIENTS, ACCOUNT_REQUESTS,
                               ACCOUNT_BAD_CLIENTS)
    run = run_clients(service, rows, deadline_s=STUCK_S)
    if run.stuck:
        return [_stuck_message(run, f"{ACCOUNT_CLIENTS} clients sent requests at once",
                               before)]
    expected = _expected(seed, rows)
    problems = _answers_problems(run, expected, bad)
    if problems:
        return problems
    stats = _stats(service)
    total = ACCOUNT_SEQUENTIAL + ACCOUNT_CLIENTS * ACCOUNT_REQUESTS
    good = total - len(bad)
    if stats["requests"] != total or stats["errors"] != len(bad):
        return [f"after {total} requests ({len(bad)} of them malformed) stats() was {stats!r};"
                f" expected requests == {total} and errors == {len(bad)}: a count was lost or "
                "made twice"]
    if not ACCOUNT_SEQUENTIAL + 1 <= stats["batches"] <= good:
        return [f"after {good} well-formed requests stats() reported {stats['batches']} "
                f"batches; expected between {ACCOUNT_SEQUENTIAL + 1} and {good} (one model call"
                " serves one or more requests)"]
    if observed is not None:
        observed["concurrent"] = _phase_seen(run, expected, stats)

    # Phase 3: one malformed request, alone: no model call answers it.
    run = run_clients(service, [[np.ones(BAD_SHAPES[0], dtype="float32")]], deadline_s=STUCK_S)
    if run.stuck:
        return [_stuck_message(run, "one client sent one malformed request", before)]
    problems = _answers_problems(run, {}, {(0, 0)})
    if problems:
        return problems
    lone = _stats(service)
    want = {"requests": stats["requests"] + 1, "batches": stats["batches"],
            "errors": stats["errors"] + 1}
    if {k: lone[k] for k in want} != want:
        return [f"after one malformed request, sent alone, stats() went from {stats!r} to "
                f"{lone!r}; expected {want}: it is a request and an error, but no batch (no "
                "model call answered it)"]
    if observed is not None:
        observed["lone"] = _phase_seen(run, {}, lone)
    try:
        return _close_problems(service_class, seed, before | set(threading.enumerate()),
                               record, observed)
    finally:
        _close_quietly(service)


def _expected(seed: int, rows: list[list[np.ndarray]]) -> dict[tuple[int, int], np.ndarray]:
    """Answers of :func:`serving_model` ``(seed)`` for ``rows`` (malformed rows skipped)."""
    keys = [(c, i) for c, mine in enumerate(rows) for i, x in enumerate(mine)
            if x.shape == (FEATURES,)]
    outputs = reference_outputs(seed, [rows[c][i] for c, i in keys])
    return dict(zip(keys, outputs, strict=True))


@dataclass
class CloseRun:
    """How the close test's ``close()`` met the service (for the tests of this check).

    Attributes:
        held: A model call was held when the late clients started (the service was serving
            the early clients' first batch).
        handed_over: Late clients seen waiting for their first answer inside ``predict()``
            (their request handed over, not yet taken: the model was held) when ``close()``
            was called.
        close_waiting: ``close()`` was seen waiting (or had returned) before the held model
            call was let go.
    """

    held: bool = False
    handed_over: int = 0
    close_waiting: bool = False


def _close_and_look(service: Any, before: set[threading.Thread], closing: dict) -> None:
    """Call ``service.close()``; the moment it returns, name the service's threads still
    running (the close test holds the model until ``close()`` is seen waiting, so a ``close()``
    that does not join returns while its batcher is still held there: never by chance)."""
    service.close()
    closing["running_at_return"] = [str(threading.Thread.getName(t)) for t in
                                    _new_threads(before) if not _is_grader_thread(t)]


def _close_problems(service_class: Callable[..., Any], seed: int,
                    before: set[threading.Thread],
                    record: list[CloseRun] | None = None,
                    observed: dict | None = None) -> list[str]:
    gate = CallGate(STUCK_S)  # held inside the slow layer, on whichever thread called it
    model = slow_model(seed, record=gate)
    rows = requests_for(seed + 2, CLOSE_CLIENTS, CLOSE_REQUESTS)
    try:
        service = service_class(model, rows[0][0].copy())
    except Exception as error:  # noqa: BLE001 - reported to the student
        return [f"InferenceService(model, example) raised {describe_error(error)} on a second "
                "service"]
    expected = _expected(seed, rows)
    closing: dict[str, Any] = {}
    seen = CloseRun()
    if record is not None:
        record.append(seen)

    late = range(1, CLOSE_CLIENTS, 2)
    go_late = threading.Event()
    accepted: set[int] = set()  # late clients seen waiting for their answer as close() came

    def handed_over(run: ClientRun, c: int) -> bool:
        first = run.calls[c][0]
        return bool(first.start) and (bool(first.end) or waiting_for_another(run.threads[c]))

    def close_soon(run: ClientRun) -> None:
        # The early clients' first batch is in the model, held there: nothing is taken from
        # the queue until close() is under way, whatever the machine's load.
        try:
            seen.held = gate.entered.wait(HANDOVER_S)
            go_late.set()
            # Each late request handed over: its caller waits inside predict() for the answer.
            wait_until(lambda: all(handed_over(run, c) for c in late), HANDOVER_S)
            handed = [c for c in late if handed_over(run, c)]
            seen.handed_over = len(handed)
            accepted.update(c for c in handed if not waiting_for_room(run.threads[c]))
            closing["started"] = start = time.perf_counter()
            thread, errors = _start(lambda: _close_and_look(service, before, closing),
                                    "grader-close")
            # close() has begun (it refuses new requests) and waits for the service's threads:
            # only now may the held batch finish, and the queued requests be taken.
            seen.close_waiting = wait_until(lambda: waiting_for_another(thread), HANDOVER_S)
        finally:
            go_late.set()
            run.held_until = time.perf_counter()
            gate.release()
        wait_for_progress([thread], run, start, start + STUCK_S, clients=False)
        closing.update(finished=not thread.is_alive(), thread=thread,
                       returned=time.perf_counter())
        closing["error"] = errors[0] if errors else None

    gate.arm()
    starts = [go_late if c % 2 else None for c in range(CLOSE_CLIENTS)]
    run = run_clients(service, rows, deadline_s=STUCK_S, when_released=close_soon,
                      starts=starts)
    if not closing["finished"]:
        stuck = [closing["thread"], *_new_threads(before)]
        return [f"close() did not return while clients were sending requests, and no request"
                f" was answered for {STALL_S:g} s (a deadlock, or a join on a thread that never "
                "ends). Where the "
                f"threads are:\n{describe_threads(stuck)}"]
    if closing["error"] is not None:
        return [f"close() raised {describe_error(closing['error'])}"]
    if run.stuck:
        return [_stuck_message(run, "close() was called while clients were sending", before)]
    deadline = time.perf_counter() + JOIN_GRACE_S
    left = []
    while time.perf_counter() < deadline:
        left = [t for t in _new_threads(before) if not _is_grader_thread(t)]
        if not left:
            break
        time.sleep(0.02)
    if left:
        return [f"{len(left)} thread(s) the service started were still running "
                f"{JOIN_GRACE_S:g} s after close() returned; close() must stop and join "
                f"them. The threads left running:\n{describe_threads(left)}"]
    running = closing.get("running_at_return", [])
    if running:
        return [f"close() returned while {len(running)} thread(s) the service started were "
                f"still running ({', '.join(running[:3])}): the queued requests were answered "
                "after close() had returned. close() must join the service's threads before it "
                "returns (a sleep or no join at all lets them outlive it)"]
    problems = _answers_problems(run, expected, set(), refused_ok=True)
    if problems:
        return problems
    refused_accepted = [run.calls[c][0] for c in sorted(accepted)
                        if isinstance(run.calls[c][0].error, RuntimeError)]
    if refused_accepted:
        return [f"client {refused_accepted[0].client}'s request was already waiting inside "
                "predict() for its answer when close() was called, and it raised RuntimeError "
                f"({len(refused_accepted)} such request(s) refused); expected its answer: "
                "close() answers every request already accepted, and refuses only those that "
                "come after it"]
    late = [c for c in run.done if c.start > closing["returned"] and c.error is None]
    if late:
        return [f"client {late[0].client} sent a request after close() had returned and got "
                "an answer; expected RuntimeError (the service is closed)"]
    served = [c for c in run.done if not isinstance(c.error, RuntimeError)]
    refused = [c for c in run.done if isinstance(c.error, RuntimeError)]
    if not served:
        return ["close() was called while requests were queued, and every request was refused"
                "; expected the queued requests to be answered (close() drains them)"]
    stats = _stats(service)
    if stats["requests"] != len(served) or stats["errors"] != 0:
        return [f"after close(), stats() was {stats!r}: expected requests == {len(served)} "
                f"(answered before closing; {len(refused)} more were refused) and errors == 0"]
    try:
        service.predict(rows[0][0])
    except RuntimeError:
        if observed is not None:
            observed["close"] = {**_phase_seen(run, expected, stats),
                                 "returned": float(closing["returned"]),
                                 "closed": bool(closing["finished"]), "left": len(left),
                                 "running_at_return": len(running),
                                 "accepted": [call.client in accepted and call.index == 0
                                              for mine in run.calls for call in mine],
                                 "after_close": "RuntimeError"}
        return []
    except Exception as error:  # noqa: BLE001 - reported to the student
        return [f"predict() after close() raised {describe_error(error)}; expected "
                "RuntimeError saying the service is closed"]
    return ["predict() after close() returned an answer; expected RuntimeError saying the "
            "service is closed"]
