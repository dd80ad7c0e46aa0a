"""Exercise 5's run: three trainers call ``publish_locked`` under the controlled scheduler."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from autograder.checks.plain import plain
from autograder.checks.tracing.references import reference_find_conflicts, reference_log_access
from autograder.checks.tracing.settings import PUBLISH_SCORES, SAMPLES, SCHEDULES, SEED
from autograder.harness import primitives
from autograder.harness.tamper import opaque

#: The trainers' lock: the harness's lock that knows its holder, so that a timed ``acquire``
#: in the answer may give up in a schedule, as a ``threading.Lock``'s may on a loaded machine.
OwnedLock = primitives.OwnedLock


def run_publish_locked(publish_locked: Callable[..., Any], *, seed: int = SEED,
                       schedules: int = SCHEDULES, observed: list | None = None) -> Any:
    """Three trainers publish under the controlled scheduler; see :func:`check_publish_locked`.

    When ``observed`` is given, each passing schedule appends what it saw (for the judge): the
    record's ``[by, score]``, every logged access as ``[thread, op, resource, start, end,
    lock]``, every save as ``[who, whether its thread held the lock]``, every call of
    ``access`` as ``[who, op, whether its thread held the lock]`` and the trainers whose save
    had run when their ``publish_locked`` returned.
    """

    from autograder.harness import explore

    def setup() -> dict[str, Any]:
        return {"best": {"score": float("-inf"), "by": None}, "lock": OwnedLock(),
                "log": [], "saves": [], "accesses": [], "saved_on_return": {}}

    def make_worker(name: str) -> Callable[[dict[str, Any]], None]:
        def worker(state: dict[str, Any]) -> None:
            def save(who: str) -> None:
                state["saves"].append((who, state["lock"].held_here()))

            def access(op: str, resource: str, fn: Callable[[], Any], lock: Any = None) -> Any:
                state["accesses"].append((name, op, state["lock"].held_here()))
                return reference_log_access(state["log"], op, resource, fn, lock=lock)

            # Opaque: the answer cannot reach the log or the saves through them.
            publish_locked(state["best"], state["lock"], name, PUBLISH_SCORES[name],
                           opaque(access), opaque(save))
            state["saved_on_return"][name] = any(who == name for who, _ in state["saves"])

        worker.__name__ = f"publish_{name.replace('-', '_')}"
        return worker

    def check(state: dict[str, Any]) -> None:
        # What publish_locked wrote, logged (op, resource, lock) and saved, as plain data.
        best = plain(state["best"], "reading the record publish_locked updated")
        log = plain(state["log"], "reading the accesses publish_locked logged")
        saves = plain(state["saves"], "reading the names publish_locked saved")
        top = max(PUBLISH_SCORES, key=PUBLISH_SCORES.get)
        assert best.get("by") == top and best.get("score") == PUBLISH_SCORES[top], (
            f"expected the record to hold {top}'s {PUBLISH_SCORES[top]}, got {best}: an update "
            "was lost (read, compare and write must happen under the lock together)")
        ops = sorted({(r["thread"], r["op"]) for r in log})
        assert sum(op == "read" for _, op in ops) == len(PUBLISH_SCORES), (
            f"expected every trainer's read of the record to be logged through access, "
            f"got {ops}")
        unnamed = [r for r in log if r.get("lock") != "best_lock"]
        assert not unnamed, (
            f"expected every access to be logged with lock='best_lock' (the lock it holds), "
            f"got a {unnamed[0]['op']} logged with lock={unnamed[0].get('lock')!r}")
        conflicts = reference_find_conflicts(log)
        assert not conflicts, (
            f"expected no conflicting accesses in the log, got {len(conflicts)}")
        unlocked = [(who, op) for who, op, held in state["accesses"] if not held]
        assert not unlocked, (
            f"expected every access made through access() while holding lock (the one "
            f"threading.Lock passed in, shared by all trainers), but {unlocked[0][0]}'s "
            f"{unlocked[0][1]} ran without it")
        writers = sorted({who for who, op, _ in state["accesses"] if op == "write"})
        savers = sorted({who for who, _ in saves if isinstance(who, str)})
        assert savers == writers, (
            f"expected the trainers whose score beat the record (those that wrote it, "
            f"through access()) to save, and only they: wrote {writers}, saved {savers}. "
            "Decide to save from what you saw under the lock, not from a read after it")
        locked_saves = [who for who, held in saves if held]
        assert not locked_saves, (
            f"expected save() to run with the lock released (the checkpoint write is slow I/O), "
            f"but {locked_saves[0]} saved while holding it")
        assert any(who == top for who, _ in saves), (
            f"expected {top}, whose score beat the record, to save its checkpoint; saves: "
            f"{[who for who, _ in saves]}")
        unsaved = [who for who in writers if not state["saved_on_return"].get(who)]
        assert not unsaved, (
            f"expected publish_locked to return once its checkpoint is saved, but "
            f"{unsaved[0]}'s returned before its save() ran (a thread started for it and not "
            "joined, say): call save(name) itself, after releasing the lock")
        tied = tied_savers([who for who, _ in saves])
        assert not tied, (
            f"expected one save at most among trainers with the same score, but {tied} all "
            f"saved ({PUBLISH_SCORES[tied[0]]}): the second found the first's score in the "
            "record, and a score equal to the record does not beat it")
        if observed is not None:
            observed.append({
                "best": [_scalar(best.get("by")), _scalar(best.get("score"))],
                "log": [[r.get("thread"), _scalar(r.get("op")), _scalar(r.get("resource")),
                         r.get("start"), r.get("end"), _scalar(r.get("lock"))] for r in log],
                "saves": [[_scalar(who), held] for who, held in saves],
                "accesses": [[who, op, held] for who, op, held in state["accesses"]],
                "saved_on_return": sorted(who for who, saved in state["saved_on_return"].items()
                                          if saved)})

    workers = [make_worker(name) for name in PUBLISH_SCORES]
    return explore(setup, workers, check, seed=seed, max_schedules=schedules, timeout_s=60.0,
                   samples=SAMPLES)


def tied_savers(savers: list[Any]) -> list[str]:
    """The trainers in ``savers`` that share their score with another saver (a tie that was
    published twice), sorted; empty when none."""
    names = sorted({who for who in savers if isinstance(who, str) and who in PUBLISH_SCORES})
    return [who for who in names
            if sum(PUBLISH_SCORES[other] == PUBLISH_SCORES[who] for other in names) > 1]


def _scalar(value: Any) -> Any:
    """A plain value the answer chose (an op, a resource, a name) as one scalar: itself, or
    its repr when it is a container."""
    if value is None or type(value) in (str, int, float, bool):
        return value
    return repr(value)[:200]
