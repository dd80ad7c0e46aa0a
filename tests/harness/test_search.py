"""Search strategies, driven by a simulated program (no threads)."""

import math
import random

from autograder.harness.search import Exhaustive, PriorityChange, RandomWalk, Replay


def simulate(strategy, lengths):
    """Run threads of the given lengths one step at a time; return the interleaving."""
    left = list(lengths)
    order, current, step = [], None, 0
    while any(left):
        step += 1
        runnable = [i for i, n in enumerate(left) if n]
        chosen = strategy.choose(step, current if current in runnable else None, runnable)
        assert chosen in runnable
        order.append(chosen)
        left[chosen] -= 1
        current = chosen
    return tuple(order)


def test_exhaustive_runs_every_interleaving_once_then_stops():
    search = Exhaustive()
    seen = []
    while True:
        seen.append(simulate(search, [3, 2]))
        if not search.advance():
            break
    assert len(seen) == len(set(seen)) == math.comb(5, 2)
    assert not search.deviated


def test_exhaustive_notices_a_program_that_does_not_repeat_itself():
    search = Exhaustive()
    simulate(search, [2, 2])
    search.advance()
    simulate(search, [1, 3])
    assert search.deviated


def test_replay_follows_the_recorded_switches():
    assert simulate(Replay({1: 1, 3: 0}), [2, 2]) == (1, 1, 0, 0)


def test_replay_that_cannot_follow_says_where_and_carries_on():
    replay = Replay({1: 1, 2: 1, 3: 1})
    assert simulate(replay, [2, 2]) == (1, 1, 0, 0)
    assert "step 3" in replay.deviation


def test_random_walk_preempts_at_most_bound_times():
    for seed in range(50):
        order = simulate(RandomWalk(random.Random(seed), 2, 20), [10, 10])
        switches = sum(a != b for a, b in zip(order, order[1:], strict=False))
        assert switches <= 2 + 1  # the bound, plus the forced switch when a thread ends


def test_random_walk_is_seeded():
    def orders(seed):
        return [simulate(RandomWalk(random.Random(f"{seed}/{i}"), 3, 20), [10, 10])
                for i in range(10)]

    assert orders(1) == orders(1)
    assert orders(1) != orders(2)


def test_pct_without_priority_changes_runs_one_thread_to_the_end_first():
    for seed in range(20):
        order = simulate(PriorityChange(random.Random(seed), 1, 20), [5, 5])
        assert order in ((0,) * 5 + (1,) * 5, (1,) * 5 + (0,) * 5)


def test_pct_with_depth_two_switches_at_its_change_point():
    orders = {simulate(PriorityChange(random.Random(seed), 2, 10), [5, 5])
              for seed in range(40)}
    assert any(0 < order.index(1) < 5 for order in orders if order[0] == 0)
