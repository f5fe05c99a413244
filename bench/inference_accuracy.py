"""How much do ``pimc:infer``'s worlds know about the opponent's hand? A diagnostic (it reads hidden cards).

Plays hands of ``pimc:infer=...`` (seat 0 and seat 1 in turn) against ``--opponent``; at every decision where the
agent has recorded opponent moves of the current deal it deals ``worlds`` uniform worlds and ``worlds`` inferred
ones, and counts how many of the opponent's true cards each world's opponent hand holds. Prints, per opponent
model, the mean fraction of the true hand found (uniform worlds: about hand size / unseen cards) and the
decisions measured, then one JSON line::

    python bench/inference_accuracy.py --hands 100 --specs "pimc:infer=0.1,pool=8" \\
        "pimc:infer=1,pool=8,model=agents/bots/classic" --opponent pimc
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from agents.base import make_agent
from agents.cli.settings import add_field_options, parse_options, setting
from agents.search.lookahead import sample_worlds
from agents.search.pimc import PIMCAgent
from scopa_env.engine import core, observation
from scopa_env.games.policy import ActBatch
from scopa_env.rules import get_rules


def measure(spec: str, opponent: str, hands: int, seed: int) -> dict[str, float]:
    rules = get_rules("classic")
    agent = make_agent(spec, rules, seed=seed)
    if not isinstance(agent, PIMCAgent) or agent.sampler is None or agent.memory is None:
        raise ValueError(f"{spec}: not a pimc spec with inference on (infer > 0) in classic")
    opp = make_agent(opponent, rules, seed=seed + 1)
    rng = np.random.default_rng(seed)
    found = {"uniform": 0.0, "inferred": 0.0}
    decisions = 0
    for h in range(hands):
        st = core.reset(rules, np.array([seed * 1000 + h], dtype=np.uint64))
        agent.seed(seed + h)
        me = h % 2
        pos = int(st.stock_pos[0])
        games = np.zeros(1, np.intp)
        while not st.done[0] and int(st.stock_pos[0]) >= pos:
            pos = int(st.stock_pos[0])
            mask = core.legal_action_mask(rules, st)
            batch = ActBatch(rules, observation.observe(rules, st), mask, st, games)
            if int(st.current[0]) == me:
                action = agent.act(batch)  # observes the opponent's last move; the memory then holds this deal's
                if agent.memory.recorded(st, 0) and st.hands[0, 1 - me].any():
                    truth = st.hands[0, 1 - me]
                    for name, sampler in (("uniform", sample_worlds), ("inferred", agent.sampler)):
                        worlds, _ = sampler(rules, st, games, np.array([64]), rng)
                        found[name] += float((worlds.hands[:, 1 - me] & truth).sum(axis=1).mean() / truth.sum())
                    decisions += 1
            else:
                action = opp.act(batch)
            core.step(rules, st, np.asarray(action, dtype=np.int64))
    return {k: v / max(decisions, 1) for k, v in found.items()} | {"decisions": decisions}


def _int_from(low: int) -> Callable[[str], int]:
    """An argparse type: an integer in ``low..2**31``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if not low <= value <= 2**31:
            raise argparse.ArgumentTypeError(f"must be in {low}..2**31, got {value}")
        return value

    return parse


@dataclass
class Options:
    """The command line's options (``agents.cli.settings``: each field's doc is its help)."""

    specs: list[str] = setting(
        doc="pimc specs with infer > 0",
        default_factory=lambda: ["pimc:infer=0.1,pool=8"],
        nargs="+",
        show_default=False,
    )
    opponent: str = setting("pimc", "the opponent's spec (default pimc)", show_default=False)
    hands: int = setting(100, "hands per spec (default 100)", parse=_int_from(1), show_default=False)
    seed: int = setting(0, "deals and agents' seed, 0..2**31 (default 0)", parse=_int_from(0), show_default=False)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    add_field_options(p, Options, typed=True, once=False)
    args = parse_options(p, Options, argv)
    out = {}
    for spec in args.specs:
        try:
            r = measure(spec, args.opponent, args.hands, args.seed)
        except ValueError as e:
            p.error(str(e))
        out[spec] = r
        print(
            f"{spec:55s} true cards found: uniform {r['uniform']:.3f}, inferred {r['inferred']:.3f} "
            f"({int(r['decisions'])} decisions)"
        )
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
