"""``az``: sampled-deal search with a trained network inside — its policy as rollout policy and as prior.

The search is ``pimc``'s (``agents.search.pimc``): the cards the acting seat has not seen are dealt at random into
``worlds`` determinizations (only the unseen *set* is read, so the agent is blind to hidden cards), every candidate
move is searched ``depth`` plies deep in each world, and positions at the horizon are played out to the end of the
hand. What the network changes:

- **rollouts**: the horizon positions are played out by the network (``rollout=net``, the default): at every ply
  each world's seat to act plays the card of highest logit in its own observation of that world, and the capture
  that ``greedy`` would pick for that card (``rollout=greedy`` keeps pimc's rollout policy); with ``temp=T > 0``
  the card is sampled from the network's softmax at temperature T instead (stochastic playouts: each world's
  playout differs, so the mean over worlds averages over the network's own uncertainty);
- **prior**: the mean margin of each move gets ``prior`` times the network's log-probability of the move's card
  (clipped at -5) instead of pimc's hand-written expert heuristic; ``prior=0`` ranks the moves by the search
  alone;
- **expert prior** (``expert=w``, default 0): w times pimc's expert heuristic is added to the margins as well;
- **end game**: as pimc, the last ``endgame`` plies of a hand (stock empty) are solved exactly in each world.

The network is a ``bot:`` export directory (numpy, torch-free: the shipped search bot) or a ``train.py`` checkpoint
(``.zip``, read as weights only). Everything runs batched: all worlds of all decisions of a batch advance together,
and a rollout ply is one ``observation.observe``, one forward pass and one ``core.step`` on the whole batch.

Spec: ``az:path=agents/bots/classic,worlds=16,depth=1,endgame=6,prior=0.5,rollout=net,temp=0,expert=0``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agents.base import AgentSpecError, register_agent, set_network_loader
from agents.nets.az import AZAgent, NetEvaluator
from agents.nets.bot_search import BotError
from agents.nets.weights import open_network
from scopa_env.games.policy import Policy
from scopa_env.rules import Rules

__all__: list[str] = []  # opened through agents.base.load_network (searches) and make_agent (the az spec)


_NETS: dict[tuple[str, str, float], NetEvaluator] = {}


def _load_net(rules: Rules, path: str | Path) -> NetEvaluator:
    """The network of a bot export directory (torch-free) or of a ``train.py`` checkpoint ``.zip`` (cached)."""
    p = Path(str(path))
    if not p.exists():
        raise AgentSpecError(f"agent az: {p} does not exist; give a bot directory (agents/bots/classic) or a .zip")
    key = (str(p.resolve()), rules.name, p.stat().st_mtime)
    net = _NETS.get(key)
    if net is not None:
        return net
    try:
        network = open_network(rules, p, who="agent az: ")
    except BotError as e:
        raise AgentSpecError(f"agent az:path={path}: {e}") from None
    net = NetEvaluator(rules, network.layers, network.activation, network.source)
    _NETS[key] = net
    return net


@register_agent(
    "az",
    "sampled-deal search with a network's rollouts and prior: az:path=DIR|FILE.zip[,worlds=16,depth=1,endgame=6,"
    "prior=0.5,rollout=net|greedy,temp=0,expert=0]",
)
def _make_az(rules: Rules, seed: int | None = None, path: str | None = None, **options: Any) -> Policy:
    """``az:path=...``: the network opened (cached), the other options ``AZAgent``'s keyword arguments."""
    if not path:
        raise AgentSpecError("agent az needs a network: az:path=agents/bots/classic (a bot directory or a .zip)")
    return AZAgent(rules, _load_net(rules, path), seed, **options)


set_network_loader(_load_net)  # pimc:model=PATH opens its network through the registry (agents.base.load_network)
