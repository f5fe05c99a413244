"""The random agent: legal, and uniform over whole captures (not over pick sequences)."""

from __future__ import annotations

from collections import Counter

import numpy as np

from scopa_env.engine import core
from scopa_env.games.policy import ActBatch, RandomAgent
from scopa_env.rules.cards import parse_card
from tests.helpers import position


def test_uniform_over_captures():
    # table: Ad 6c 2s 5b 3d 4c   play 7c -> {A,6} {2,5} {3,4} {A,2,4}: each capture 1/4
    # (uniform picks would favour the captures sharing cards: Ad 3/12 + ...)
    rules, base = position("classic", ["7c Kd Kc", "Ks Kb Qd"], "Ad 6c 2s 5b 3d 4c")
    core.step(rules, base, np.array([parse_card("7c")]))
    n = 4000
    st = core.State.concat([base] * n)
    agent = RandomAgent(rules, 0)
    seen: Counter[frozenset[int]] = Counter()
    while True:
        todo = np.flatnonzero(st.phase == core.Phase.CHOOSE)
        if todo.size == 0:
            break
        mask = core.legal_action_mask(rules, st)
        acts = np.zeros(n, dtype=np.int64)
        acts[todo] = agent.act(ActBatch(rules, np.zeros((todo.size, 0), np.float32), mask[todo], st, todo))
        info = core.step(rules, st, acts, on_illegal="report")  # games already done ignore action 0
        assert not info.illegal[todo].any()
        for g in np.flatnonzero(info.move_done):
            seen[frozenset(np.flatnonzero(info.capture[g]).tolist())] += 1
    assert len(seen) == 4 and sum(seen.values()) == n
    freq = np.array(list(seen.values())) / n
    assert np.abs(freq - 0.25).max() < 0.035, seen


def test_equal_rank_choice_uniform_and_legal():
    # table: 5d 5s 5b 2c   play 5c -> one of three fives
    rules, base = position("classic", ["5c Kd Kc", "Ks Kb Qd"], "5d 5s 5b 2c")
    core.step(rules, base, np.array([parse_card("5c")]))
    n = 3000
    st = core.State.concat([base] * n)
    mask = core.legal_action_mask(rules, st)
    acts = RandomAgent(rules, 1).act(ActBatch(rules, np.zeros((n, 0), np.float32), mask, st, np.arange(n)))
    counts = Counter(acts.tolist())
    assert set(counts) == {parse_card(c) for c in ("5d", "5s", "5b")}
    assert max(abs(c / n - 1 / 3) for c in counts.values()) < 0.04
