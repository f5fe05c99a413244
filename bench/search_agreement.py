"""Where a search overrides its network, is it signal or noise? Agreement of a search with itself and with a network.

Plays ``--hands`` hands of the network's self-play (``--net``, the fast bot by default; classic) and, at every
decision, asks the search (``--search``, an agent spec) for its move twice, with two different seeds (fresh worlds).
Prints, with 95% Wilson intervals over decisions:

- how often the search plays the network's move;
- how often the search agrees with itself across the two seeds;
- of the decisions where the first search overrides the network, how often the second search makes the same
  override (a real finding is found again with fresh worlds; noise is not).

Then one JSON line::

    python bench/search_agreement.py --hands 200 --search bot:path=agents/bots/classic-search
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from agents.cli.threads import pin_blas_threads  # noqa: E402

pin_blas_threads(force=True)  # before numpy loads: one BLAS thread (the search's many small products)

import numpy as np  # noqa: E402

from agents.base import AgentSpecError, make_agent  # noqa: E402
from agents.cli.numbers import int_arg  # noqa: E402
from agents.cli.settings import (  # noqa: E402
    add_field_options,
    parse_options,
    setting,
)
from agents.evaluation.ratings import wilson_interval  # noqa: E402
from scopa_env.engine import core, observation  # noqa: E402
from scopa_env.games.policy import ActBatch  # noqa: E402
from scopa_env.rules import get_rules  # noqa: E402

DEFAULT_NET = "bot:path=agents/bots/classic"
DEFAULT_SEARCH = "bot:path=agents/bots/classic-search"


def share(hits: int, n: int) -> dict[str, float]:
    """``hits / n`` with its 95% Wilson interval (``agents.evaluation.ratings.wilson_interval``), as fractions."""
    iv = wilson_interval(hits, n)
    return {"share": iv.value, "low": iv.low, "high": iv.high, "n": n}


def measure(search: str, net: str, hands: int, seed: int) -> dict[str, dict[str, float]]:
    rules = get_rules("classic")
    network = make_agent(net, rules, seed=seed)
    first, second = make_agent(search, rules, seed=seed + 1), make_agent(search, rules, seed=seed + 2)
    st = core.reset(rules, np.arange(hands, dtype=np.uint64) + np.uint64(seed))
    agree_net = agree_self = overrides = found_again = decisions = 0
    start_hand = st.hand_no.copy()
    while True:
        live = np.flatnonzero(~st.done & (st.hand_no == start_hand))
        if live.size == 0:
            break
        obs, mask = observation.observe(rules, st), core.legal_action_mask(rules, st)
        batch = ActBatch(rules, obs[live], mask[live], st, live)
        a_net = np.asarray(network.act(batch))
        a1, a2 = np.asarray(first.act(batch)), np.asarray(second.act(batch))
        decisions += live.size
        agree_net += int((a1 == a_net).sum())
        agree_self += int((a1 == a2).sum())
        over = a1 != a_net
        overrides += int(over.sum())
        found_again += int((over & (a2 == a1)).sum())
        actions = mask.argmax(axis=1).astype(np.int64)  # a game already past its first hand: any legal move
        actions[live] = a_net  # the game goes on as the network plays it
        core.step(rules, st, actions)
    return {
        "search_plays_the_networks_move": share(agree_net, decisions),
        "search_agrees_with_itself": share(agree_self, decisions),
        "override_found_again": share(found_again, overrides),
    }


@dataclass
class Options:
    """The command line's options (``agents.cli.settings``: each field's doc is its help)."""

    search: str = setting(DEFAULT_SEARCH, f"the search's agent spec (default {DEFAULT_SEARCH})", show_default=False)
    net: str = setting(DEFAULT_NET, f"the network that plays the hands (default {DEFAULT_NET})", show_default=False)
    hands: int = setting(200, "hands of self-play, 1..100000 (200)", parse=int_arg(1, 100_000), show_default=False)
    seed: int = setting(0, "deals' and searches' seed, 0..2**31 (0)", parse=int_arg(0, 2**31), show_default=False)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python bench/search_agreement.py",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    add_field_options(p, Options, typed=True, once=False)
    args = parse_options(p, Options, argv)
    try:
        for spec in (args.search, args.net):
            make_agent(spec, "classic", seed=0)
    except (AgentSpecError, ValueError) as e:
        p.error(str(e))
    out = measure(args.search, args.net, args.hands, args.seed)
    for name, r in out.items():
        print(f"{name.replace('_', ' '):34s} {r['share']:6.1%}  [{r['low']:.1%}, {r['high']:.1%}]  of {r['n']}")
    print(json.dumps({"search": args.search, "net": args.net, "hands": args.hands, "seed": args.seed, **out}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
