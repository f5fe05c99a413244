"""
# Scopa

| Import             | `from scopa_env import scopa_v0`                                |
|--------------------|-----------------------------------------------------------------|
| Creation           | `scopa_v0.env(variant="classic")`, or `scopa_v0.raw_env(...)`   |
| Actions            | Discrete                                                        |
| Parallel API       | Yes: `scopa_v0.parallel_env(...)` (turn-based: one agent acts per step) |
| Manual Control     | No                                                              |
| Agents             | `agents = ["player_0", ..., "player_{N-1}"]`                    |
| Agents             | N = 2..8, by variant (`scopa_env.rules.VARIANTS`)               |
| Action Shape       | ()                                                              |
| Action Values      | Discrete(A): A = D cards, 40 (52 in `simple-8`); cirulla D + 3 = 43 |
| Observation Shape  | `observation`: (obs_size,) float32, 336 in `classic` (429 `cirulla`); `action_mask`: (A,) int8 |
| Observation Values | [0, 1] except the `scores`, `scope`, `table_sum` and `plays` blocks (see below) |

## Description

Scopa is the Italian fishing card game: players take turns playing a card from their hand to the table, capturing
a table card of the same rank or, failing that, a set of table cards whose values add up to the played card's
value. Sweeping the table clean is a *scopa* (one point). At the end of each hand each side scores one point for
most cards (*carte*), most coins (*denari*), the seven of coins (*settebello*), the best *primiera*, plus its
*scope*; the first side to reach the target (11 in `classic`) with a strict lead wins the match. The rules are in
`RULES.md`; every named variant of `scopa_env.rules.VARIANTS` is available: two players (`classic`, `classic-15`,
`classic-21`, `scopa-d-assi`), four in two teams (`scopa-a-quattro`, `scopone-scientifico`, `simple-4-teams`),
six in three teams (`simple-6-teams`), the beginners' games for 2 to 8 players (`simple-N`) and Cirulla for 2, 3
and 4 players (`cirulla`, `cirulla-3`, `cirulla-4`; see *Cirulla* below).

This environment plays one game on `scopa_env.engine.single.SingleGame`, the single-game engine that plays exactly the
batched numpy core's rules (`scopa_env.engine.core`; `tests/test_single.py` checks them move for move and observation
for observation): it maps seats to agent names, steps the game, and pays rewards from what it reports. Seat `i` is agent
`player_i`; play goes `player_0 -> player_1 -> ...`, starting each hand after the dealer (the first dealer is drawn
from the game's seed). With teams, seats `{0, 2}` play against `{1, 3}` (and `{0, 3} {1, 4} {2, 5}` with six).

## Action Space

One action is one card id: `Discrete(D)`. A card id is `suit * num_ranks + rank`:

| actions | cards | suit |
|---------|-------|------|
| 0-9 | `Ad` `2d` `3d` `4d` `5d` `6d` `7d` `Jd` `Qd` `Kd` | coins (denari) |
| 10-19 | `Ac` ... `Kc` | cups (coppe) |
| 20-29 | `As` ... `Ks` | swords (spade) |
| 30-39 | `Ab` ... `Kb` | clubs (bastoni) |

Within a suit the ranks go `A 2 3 4 5 6 7 J Q K` (`7d`, the settebello, is action 6). In `simple-8` the 52-card
deck has 13 ranks per suit (`A 2 3 4 5 6 7 8 9 T J Q K`), so the suits start at 0, 13, 26 and 39.

A move takes one or more actions:

- **PLAY**: the acting player plays a card from their hand (the action is that card). If it captures nothing it is
  laid on the table; if it has exactly one legal capture, the capture is made at once.
- **CHOOSE** (only when several captures are legal): the same player then picks the captured table cards one at a
  time (the action is a table card); the mask allows exactly the cards that belong to some legal capture still
  consistent with the picks so far, and the capture completes automatically as soon as it is determined. Every
  legal capture can be chosen.

## Observation Space

The observation is a dictionary with an `"observation"` vector (what the observing seat may know, RULES.md
section 7) and an `"action_mask"` (see *Legal Actions Mask*). The vector is `scopa_env.engine.observation.observe` for
the observing seat; its layout is `scopa_env.engine.observation.observation_layout(rules)` (version
`observation.OBS_VERSION`). With D cards, S sides, N seats and R ranks (classic: D = 40, S = 2, N = 2, R = 10, size
336):

| block | size | classic indices | meaning |
|-------|------|-----------------|---------|
| hand | D | 0-39 | own hand (1 = card held) |
| table | D | 40-79 | cards face up on the table |
| pending | D | 80-119 | the card played whose capture is being chosen (CHOOSE phase) |
| picked | D | 120-159 | table cards picked so far for that capture |
| unseen | D | 160-199 | cards this seat has not seen: other players' hands and the stock |
| piles | S x D | 200-279 | cards captured this hand by each side, own side first, then in seat order |
| scores | S | 280-281 | match points of each side / target, own side first (may exceed 1) |
| scope | S | 282-283 | scope of each side this hand / 10, own side first (may exceed 1) |
| stock | 1 | 284 | cards left in the stock / deck size |
| hand_sizes | N | 285-286 | cards in each seat's hand / largest packet, own seat first, then in play order |
| dealer | N | 287-288 | one-hot: the dealer's seat relative to this seat (0 = self) |
| seat | N | 289-290 | one-hot: this seat's absolute index |
| last_capturer | S + 1 | 291-293 | one-hot: side of the last capture this hand, relative; last entry = nobody |
| choosing | 1 | 294 | 1 in the CHOOSE phase |
| table_sum | 1 | 295 | sum of the table cards' capture values / 40 |
| plays | 4 x R | 296-335 | per value v = 1..R: would capture; would clear the table; could take 7d; sum after / 40 |

Other players' hands and the order of the stock never enter the observation: they appear only through the
`unseen` set and the hand sizes, which do not change when those cards are reshuffled. The `Box` bounds are
`[0, 1]` except `scores` (up to `max_hands * (4 + P) / target`, P = the most plays a side makes in a hand, which
bounds the points of a hand), `scope` (up to `P / 10`) and the table sums of `table_sum` and `plays` (up to the
whole deck's capture values / 40); `scopa_env.engine.observation.observation_bounds` computes them. The `plays` block
depends on the table only: it spells out the capture arithmetic a player does at a glance, which a small network
learns slowly from card bits.

## Legal Actions Mask

`observation["action_mask"]` is an int8 vector of length D with a 1 for every legal action of the agent to act, and
all zeros for the other agents and once the game is over. `scopa_v0.env` wraps the raw env like PettingZoo's
classic games: an illegal action ends the game with a reward of -1 for the offending agent and 0 for the others
(`TerminateIllegalWrapper`'s rule; the checks of PettingZoo's `TerminateIllegalWrapper`, `AssertOutOfBoundsWrapper`
and `OrderEnforcingWrapper` run in one layer, `ClassicWrapper`, tested against that stack, which
`scopa_env.envs.aec.pettingzoo_wrapped` builds); `raw_env` raises `scopa_env.engine.core.IllegalActionError` naming the
legal actions.
Both refuse an action that is not an integer card id (`step(24.7)`, `step("24")`, `step(True)`: `TypeError`;
`None` is the action of an agent that is done), and `raw_env.step` raises `RuntimeError` before `reset()` and once
every agent has passed its final step.

## Rewards

Set by the `reward` argument; every seat of a side gets its side's reward, and every seat receives its final
reward at the end of the game, whoever made the last move (as with all AEC envs, a reward shows in `last()` when
that agent is next selected, including the final pass with `action=None`).

| `reward` | when | each seat receives |
|----------|------|--------------------|
| `"match"` (default) | end of the match | +1 if its side won, -1 if another side won, 0 if the match was truncated |
| `"points"` | end of every hand | its side's points that hand minus the best of the other sides' points |

With two sides both are zero-sum between the sides. With three or more sides `"match"` pays -1 to every losing side.

## Episode End

The game terminates when the match is won: at the end of a hand a side has reached the target with strictly more
points than every other side (a tie at the top plays another hand). It is truncated (every agent truncated, match
reward 0) if no side has won after `max_hands` hands, which keeps the observation bounded; with the default of 100
hands this does not happen in practice.

## Arguments

``` python
scopa_v0.env(variant="classic", render_mode=None, reward="match", max_hands=100)
```

`variant`: a name in `scopa_env.rules.VARIANTS` (or a `Rules` object).

`render_mode`: `None`, `"ansi"` (`render()` returns a text picture of the table, the acting player's hand, the
piles and the scores, with suit symbols) or `"human"` (prints that picture after every step).

`reward`: `"match"` or `"points"` (see *Rewards*).

`max_hands`: truncate an undecided match after this many hands.

`reset(seed=s)` plays the game whose deals are fixed by seed `s` (`scopa_env.rules.shuffle`); a later `reset()` without
a seed plays the next game of the same seed chain (`shuffle.derive_seed`), so a seeded env is reproducible.
`reset(options={"state": saved})` starts from a position saved with `scopa_env.records.state_io.state_to_json`. The
game's seed fixes every hidden card (the other hands, the stock order), so it stays inside the env: no `infos` entry and
no public attribute holds it, nor the game state (`infos` are empty dicts).

## Parallel API

`scopa_v0.parallel_env(variant=..., render_mode=None, reward="match", max_hands=100, illegal="terminate")` is the
same game as a PettingZoo `ParallelEnv` (`scopa_env.envs.parallel`): each `step(actions)` plays the action of the agent
to act, the one whose `action_mask` has ones; the other agents get all-zero masks and their actions are ignored.
The masks are also in `infos[agent]["action_mask"]`. An illegal action ends the match with -1 for its agent
(`illegal="raise"` raises instead).

## Cirulla

Cirulla's variants (`cirulla`, `cirulla-3`, `cirulla-4`: RULES.md section 6, the project's decisions in
docs/rules.md) add three actions after the D card ids, so A = D + 3:

| action | name | phase | meaning |
|--------|------|-------|---------|
| 0..D-1 | a card | PLAY / CHOOSE | as above; a capture may also be a *fifteen* (cards adding up to 15 with it) |
| D (40) | `stop` | KNOCK | do not knock |
| D (40) | `stop` | CHOOSE | take exactly the cards picked so far (when they are a capture inside a larger one) |
| D+1 (41) | `knock-sum` | KNOCK | reveal the hand: values adding up to 9 or less (3 points; `7c` any value) |
| D+2 (42) | `knock-tris` | KNOCK | reveal the hand: three of a kind (10 points; `7c` may be the third) |

After each deal every player with a qualifying hand, in play order, gets a KNOCK decision (phase 3) before play
resumes; the mask then holds `stop` and the knocks the hand allows. The observation is version 3
(`scopa_env.engine.observation.observation_version`): the classic blocks as above (`plays` under cirulla's captures),
then

| block | size | meaning |
|-------|------|---------|
| revealed | N x D | cards revealed by knocks and still in each seat's hand, own seat first, then in play order |
| knocks | S | knock points of each side this hand / 10, own side first |
| knocking | 1 | 1 in the KNOCK phase |
| fifteens | R | per card value v: a card of value v played now could make a fifteen |

Cirulla games run on `scopa_env.engine.single.SingleGame` too (the compiled single-game kernel plays every variant).

## Version History

* v0: Initial release (observation version `observation.OBS_VERSION` = 2: version 1 had no `table_sum` and `plays`
  blocks; it never shipped in a release). Cirulla's variants came later with observation version 3; the others
  kept version 2.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator
from typing import Any, Literal

import gymnasium
import numpy as np
import numpy.typing as npt
from gymnasium import spaces
from gymnasium.utils import EzPickle
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers
from pettingzoo.utils.env import AECIterable
from pettingzoo.utils.env_logger import EnvLogger
from pettingzoo.utils.wrappers.order_enforcing import AECOrderEnforcingIterable

from scopa_env.engine import core
from scopa_env.engine.observation import observation_bounds, validate_max_hands
from scopa_env.engine.render import check_render_mode, render_text, show_text
from scopa_env.engine.single import SingleGame, game_from_state, new_game
from scopa_env.games.learner import MAX_SEED, REWARD_MODES, check_seed, validate_reward
from scopa_env.records.state_io import state_from_json
from scopa_env.rules import Rules, get_rules
from scopa_env.rules.scoring import margin_vs_best_other, match_results
from scopa_env.rules.shuffle import derive_seed

__all__ = [
    "REWARD_MODES",
    "ClassicWrapper",
    "check_action",
    "env",
    "env_metadata",
    "match_results",
    "observation_bounds",
    "pettingzoo_wrapped",
    "raw_env",
    "validate_max_hands",
    "validate_reward",
]

ENV_NAME = "scopa_v0"


def env_metadata(*, parallelizable: bool) -> dict[str, Any]:
    """The PettingZoo ``metadata`` of the AEC env (``parallelizable=False``) and the parallel env (``True``)."""
    return {"render_modes": ["human", "ansi"], "name": ENV_NAME, "is_parallelizable": parallelizable, "render_fps": 1}


def _saved_state(rules: Rules, saved: Any) -> core.State:
    """``reset(options={"state": saved})``'s game: a ``core.State`` of one game (copied) or ``state_io`` JSON."""
    if isinstance(saved, core.State):
        if saved.batch_size != 1:
            raise ValueError(f"options['state'] must hold one game, got a batch of {saved.batch_size}")
        core.legal_action_mask(rules, saved)  # refuses a state of other rules, naming both
        state = saved.copy()
    else:
        state = state_from_json(saved, rules)
    if state.done[0]:
        raise ValueError("options['state'] is a finished match: there is nothing left to play in it")
    return state


def env(**kwargs: Any) -> AECEnv:
    """The Scopa AEC env wrapped like PettingZoo's classic games (illegal move = loss, bounds and order checks).

    Arguments as for ``raw_env``. The four checks of ``pettingzoo_wrapped`` (PettingZoo's ``TerminateIllegalWrapper``,
    ``AssertOutOfBoundsWrapper`` and ``OrderEnforcingWrapper`` around this package's action-type check) run in one
    layer, ``ClassicWrapper``, which behaves the same at a fraction of the cost per turn.
    """
    return ClassicWrapper(raw_env(**kwargs))


def pettingzoo_wrapped(**kwargs: Any) -> AECEnv:
    """``env``'s checks as the stack of PettingZoo's own wrappers (the reference ``ClassicWrapper`` is tested against).

    Arguments as for ``raw_env``.
    """
    aec: AECEnv = raw_env(**kwargs)
    aec = wrappers.TerminateIllegalWrapper(aec, illegal_reward=-1)
    aec = wrappers.AssertOutOfBoundsWrapper(aec)
    aec = _CheckActionType(aec)
    aec = wrappers.OrderEnforcingWrapper(aec)
    return aec


_BEFORE_RESET = frozenset(
    {"rewards", "terminations", "truncations", "infos", "agent_selection", "num_agents", "agents"}
)
"""Attributes ``OrderEnforcingWrapper`` refuses to read before ``reset``."""


class ClassicWrapper(wrappers.OrderEnforcingWrapper):  # type: ignore[type-arg]
    """``pettingzoo_wrapped``'s four wrappers in one layer around a ``raw_env``, with the same behaviour.

    - order (``OrderEnforcingWrapper``, which this class is): ``reset()`` before ``step``, ``observe``, ``render``,
      ``agent_iter`` and the attributes ``agents``, ``terminations``...; a warning for a step after the end;
    - action type (``check_action``): ``TypeError`` for an action that is not a card id;
    - bounds (``AssertOutOfBoundsWrapper``): ``check_action`` has refused every action outside the action space by
      then, so its assertion cannot fail and is not repeated;
    - illegal moves (``TerminateIllegalWrapper(illegal_reward=-1)``): an action outside the ``action_mask`` last
      observed for the agent to act ends the game, -1 for its author and 0 for the others, with PettingZoo's warning.

    Attributes are read from the raw env directly instead of through four ``__getattr__`` in turn; PettingZoo's loops
    read them several times a turn. ``tests/test_single.py`` plays the same random games, illegal moves, wrong types
    and out-of-order calls included, on both and compares every result, warning and error.
    """

    def __init__(self, env: raw_env, illegal_reward: float = -1) -> None:
        if not isinstance(env, raw_env):
            raise TypeError(f"ClassicWrapper wraps a scopa_env.envs.aec.raw_env, got {type(env).__name__}")
        super().__init__(env)
        self._raw = env
        self._illegal_value = illegal_reward
        self._prev_obs: dict[str, npt.NDArray[Any]] | None = None
        self._terminated = False  # terminated by an illegal move
        self._view: raw_env | _NotReset = _NOT_RESET  # the raw env once reset (see _raw_attribute)

    num_agents = property(operator.attrgetter("_view.num_agents"), doc="The raw env's ``num_agents`` (read-only).")
    """Read by PettingZoo's loops at every ``agent_iter``: a property, not ``__getattr__``, which runs after a failed
    look-up."""

    def __getattr__(self, name: str) -> Any:
        if name in _BEFORE_RESET and not self._has_reset:
            raise AttributeError(f"{name} cannot be accessed before reset")
        if name.startswith("_") and name != "_cumulative_rewards":
            raise AttributeError(f"accessing private attribute '{name}' is prohibited")
        return getattr(self._raw, name)

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        self._terminated = False
        self._prev_obs = None
        self._view = self._raw  # OrderEnforcingWrapper.reset marks the env reset before resetting it
        super().reset(seed=seed, options=options)

    def observe(self, agent: str) -> dict[str, npt.NDArray[Any]]:
        if not self._has_reset:
            EnvLogger.error_observe_before_reset()
        obs = self._raw.observe(agent)
        if agent == self._raw.agent_selection:
            self._prev_obs = obs
        return obs

    def last(
        self, observe: bool = True
    ) -> tuple[dict[str, npt.NDArray[Any]] | None, float, bool, bool, dict[str, Any]]:
        if not self._has_reset:
            raise AttributeError("agent_selection cannot be accessed before reset")
        raw = self._raw
        agent = raw.agent_selection
        observation = None
        if observe:  # ``observe`` of the agent to act: the observation its selecting step made, if not handed out
            ready = raw._ready
            if ready is not None and ready[0] == agent:
                raw._ready = None
                observation = ready[1]
            else:
                observation = raw.observe(agent)
            self._prev_obs = observation
        return (
            observation,
            raw._cumulative_rewards[agent],
            raw.terminations[agent],
            raw.truncations[agent],
            raw.infos[agent],
        )

    def step(self, action: Any) -> None:
        raw = self._raw
        if not self._has_reset:
            EnvLogger.error_step_before_reset()
        self._has_updated = True
        if not raw.agents:
            EnvLogger.warn_step_after_terminated_truncated()
            return
        if not (type(action) is int and 0 <= action < raw._num_cards):  # check_action's common case, inline
            check_action(raw, action)
        agent = raw.agent_selection
        prev = self._prev_obs
        if prev is None:
            prev = self.observe(agent)
        self._prev_obs = None
        if raw.terminations[agent] or raw.truncations[agent]:  # an agent that is done: its final step
            if self._terminated:  # the game ended with an illegal move
                raw._was_dead_step(action)
            else:
                raw._step(action)
        elif prev["action_mask"][action]:
            raw._step_live(agent, action)  # check_action has passed
        else:
            EnvLogger.warn_on_illegal_move()
            raw._ready = None
            raw._cumulative_rewards[agent] = 0
            raw.terminations = dict.fromkeys(raw.agents, True)
            raw.truncations = dict.fromkeys(raw.agents, True)
            raw.rewards = dict.fromkeys(raw.truncations, 0)
            raw.rewards[agent] = float(self._illegal_value)
            raw._accumulate_rewards()
            raw._deads_step_first()
            self._terminated = True

    def agent_iter(self, max_iter: int = 2**63) -> AECIterable[str, Any, Any]:
        """``OrderEnforcingWrapper.agent_iter``: the agent to act, up to ``max_iter`` times, while any agent is left;
        ``AssertionError`` unless ``step`` or ``reset`` was called since the last one. Its iterators are generators
        that read the raw env directly (PettingZoo's iterator objects cost more than a fused step)."""
        if not self._has_reset:
            EnvLogger.error_agent_iter_before_reset()
        return _AgentIterable(self, max_iter)


class _AgentIterable(AECOrderEnforcingIterable):  # type: ignore[type-arg]
    """``ClassicWrapper.agent_iter``'s iterable: each ``iter`` starts a new count of ``max_iter``, as PettingZoo's."""

    def __iter__(self) -> Iterator[str]:  # type: ignore[override]
        return _agents(self.env, self.env._raw, self.max_iter)


def _agents(wrapper: ClassicWrapper, raw: raw_env, max_iter: int) -> Iterator[str]:
    """``AECOrderEnforcingIterator``'s agents as a generator: the same checks in the same order."""
    while raw.agents and max_iter > 0:
        max_iter -= 1
        agent = raw.agent_selection
        if not wrapper._has_updated:
            raise AssertionError("need to call step() or reset() in a loop over `agent_iter`")
        wrapper._has_updated = False
        yield agent


class _NotReset:
    """What ``ClassicWrapper._view`` holds until ``reset``: reading any attribute raises ``OrderEnforcingWrapper``'s
    error (after which Python asks ``ClassicWrapper.__getattr__``, which raises it too)."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"{name} cannot be accessed before reset")


_NOT_RESET = _NotReset()


def _raw_attribute(name: str, checked: bool) -> property:
    """A property of ``ClassicWrapper`` reading (and writing) the raw env's ``name``; with ``checked``, refused before
    ``reset`` as ``OrderEnforcingWrapper`` does (read through ``_view``, the raw env once reset). Faster than
    ``__getattr__``, which runs after a failed look-up; the read is one ``attrgetter`` call."""

    def put(self: ClassicWrapper, value: Any) -> None:
        setattr(self._raw, name, value)

    get = operator.attrgetter(f"_view.{name}" if checked else f"_raw.{name}")
    return property(get, put, doc=f"The raw env's ``{name}``.")


for _name in (*sorted(_BEFORE_RESET - {"num_agents"}), "_cumulative_rewards"):
    setattr(ClassicWrapper, _name, _raw_attribute(_name, checked=_name in _BEFORE_RESET))


def check_action(aec: Any, action: Any) -> None:
    """Raise unless ``action`` can be given to ``aec.step`` (the raw env, or a wrapper around it) right now.

    An action is a card id (a Python or numpy integer, or a 0-d integer array; not a bool, a float or a string),
    or ``None`` for an agent that is already done; once every agent has passed its final step there is none to take.
    A card id out of range raises ``scopa_env.engine.core.IllegalActionError``; whether it is legal, the env decides.
    """
    raw = aec.unwrapped  # read the raw env's attributes once, not through every wrapper's __getattr__
    if not raw.agents:
        raise RuntimeError("the match is over and every agent has passed its final step: call reset() to play again")
    agent = raw.agent_selection
    if action is None:
        if not (raw.terminations[agent] or raw.truncations[agent]):
            raise ValueError(f"{agent} is still playing: step() needs a card id, got None")
        return
    if type(action) is int and 0 <= action < raw._num_cards:  # the common case, checked first
        return
    is_int = isinstance(action, (int, np.integer)) or (
        isinstance(action, np.ndarray) and action.shape == () and action.dtype.kind in "iu"
    )
    num_cards = raw._num_cards
    if isinstance(action, (bool, np.bool_)) or not is_int:
        raise TypeError(
            f"the action must be a card id, an integer 0..{num_cards - 1} (None for an agent that is done), "
            f"got {action!r} of type {type(action).__name__}"
        )
    if not 0 <= int(action) < num_cards:
        raise core.IllegalActionError(f"action {int(action)} is not a card id: card ids are 0..{num_cards - 1}")


class _CheckActionType(wrappers.BaseWrapper):  # type: ignore[type-arg]
    """Refuses actions of the wrong type with ``check_action``'s ``TypeError`` before the other wrappers see them.

    It also reads the raw env's public attributes (``agents``, ``terminations``...) straight from the raw env instead
    of through every wrapper's ``__getattr__`` in turn: the wrappers below it define none of them, so the values are
    the same, and PettingZoo's loops read them several times a turn.
    """

    def __init__(self, env: AECEnv) -> None:
        super().__init__(env)
        self._raw = env.unwrapped

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") and name != "_cumulative_rewards":
            raise AttributeError(f"accessing private attribute '{name}' is prohibited")
        return getattr(self._raw, name)

    def step(self, action: Any) -> None:
        check_action(self, action)
        super().step(action)

    def __str__(self) -> str:
        return str(self.env)


class raw_env(AECEnv, EzPickle):
    """Scopa for N seats as a PettingZoo AEC env; see the module docstring."""

    metadata: dict[str, Any] = env_metadata(parallelizable=False)  # PettingZoo reads it as a class attribute

    def __init__(
        self,
        variant: str | Rules = "classic",
        render_mode: Literal["ansi", "human"] | None = None,
        reward: Literal["match", "points"] = "match",
        max_hands: int = 100,
    ) -> None:
        EzPickle.__init__(self, variant, render_mode, reward, max_hands)
        super().__init__()
        self.rules = get_rules(variant)
        check_render_mode(render_mode)
        self.render_mode = render_mode
        self.reward_mode = validate_reward(reward)
        self.max_hands = validate_max_hands(max_hands)
        n, d = self.rules.num_players, self.rules.num_actions  # card ids (and cirulla's stop / knocks)
        self._num_cards = d
        self.possible_agents = [f"player_{i}" for i in range(n)]
        self.agent_name_mapping = {a: i for i, a in enumerate(self.possible_agents)}
        self._side_of = np.array(self.rules.seat_side, dtype=np.int64)
        low, high = observation_bounds(self.rules, self.max_hands)
        self.observation_spaces = {
            a: spaces.Dict(
                {
                    "observation": spaces.Box(low=low, high=high, dtype=np.float32),
                    "action_mask": spaces.Box(low=0, high=1, shape=(d,), dtype=np.int8),
                }
            )
            for a in self.possible_agents
        }
        self.action_spaces: dict[str, spaces.Space[Any]] = {a: spaces.Discrete(d) for a in self.possible_agents}
        self._game: SingleGame | None = None  # the game: hidden cards and seed, never shown to agents
        self._ready: tuple[str, dict[str, npt.NDArray[Any]]] | None = None
        """The observation of the agent to act, made with the step that selected it (``play_observed``), handed
        over by the next ``observe`` of that agent; any other change of the game or the selection drops it."""
        self.hands_played = 0
        """Hands finished in the current game."""
        self._next_seed: int | None = None

    # ------------------------------------------------------------------------------------------------ spaces

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self.action_spaces[agent]

    # ------------------------------------------------------------------------------------------------ API

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Start a match: with ``seed``, the game of that seed; without, the next game of the seed chain.

        ``options={"state": saved}`` starts from a saved position instead (``scopa_env.records.state_io``: JSON text,
        its dict, or a ``core.State`` batch of one of this variant); the next ``reset()`` plays the next game of that
        game's seed chain. Other keys of ``options`` are ignored.
        """
        saved = None if options is None else options.get("state")
        if saved is not None:
            if seed is not None:
                raise ValueError("reset() got both a seed and options['state']: a saved game carries its own seed")
            state = _saved_state(self.rules, saved)
            game_seed = int(state.seed[0])
        elif seed is not None:
            game_seed = check_seed("seed", seed, MAX_SEED)
        elif self._next_seed is not None:
            game_seed = self._next_seed
        else:
            game_seed = int(np.random.default_rng().integers(MAX_SEED))
        self._next_seed = int(derive_seed(np.array([game_seed], dtype=np.uint64))[0])
        game = new_game(self.rules, game_seed) if saved is None else game_from_state(self.rules, state)
        self._game = game
        self._ready = None
        self.hands_played = game.hand_no
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos: dict[str, dict[str, Any]] = {a: {} for a in self.agents}
        self.agent_selection = self.possible_agents[game.current]

    def observe(self, agent: str) -> dict[str, npt.NDArray[Any]]:
        """``{"observation": (obs_size,) float32, "action_mask": (D,) int8}`` for ``agent``'s seat."""
        ready = self._ready
        if ready is not None and ready[0] == agent and agent == self.agent_selection:
            self._ready = None  # handed over once: a later call builds new arrays
            return ready[1]
        game = self._game
        if game is None:
            game = self._require_game()
        seat = self.agent_name_mapping.get(agent) if isinstance(agent, str) else None
        if seat is None:
            raise ValueError(f"unknown agent {agent!r}; the agents are {', '.join(self.possible_agents)}")
        # the mask is all zeros for the other agents and once the match is over (the game's legal actions are none
        # once it is won; a match cut off at max_hands is over too)
        obs, mask = game.observe_masked(seat, agent == self.agent_selection and self.hands_played < self.max_hands)
        return {"observation": obs, "action_mask": mask}

    def step(self, action: int | np.integer | None) -> None:
        """Apply the selected agent's action (a card id); ``None`` for an agent that is already done.

        Raises ``RuntimeError`` before ``reset`` and once every agent has passed its final step, ``TypeError`` for
        an action that is not an integer (or ``None``), ``ValueError`` for ``None`` from an agent still playing
        and ``scopa_env.engine.core.IllegalActionError`` (a ``ValueError``) for a card id that is not legal.
        """
        self._require_game()
        check_action(self, action)
        self._step(action)

    def _step(self, action: int | np.integer | None) -> None:
        """``step`` once ``check_action`` has passed."""
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._ready = None
            self._was_dead_step(action)
        else:
            self._step_live(agent, action)  # type: ignore[arg-type]

    def _step_live(self, agent: str, action: int) -> None:
        """``_step`` of ``agent``, the agent to act and not done, with a card id (``check_action`` has passed)."""
        game = self._game
        if game is None:
            game = self._require_game()
        self._ready = None
        self._cumulative_rewards[agent] = 0.0
        self.rewards = dict.fromkeys(self.agents, 0.0)
        info, obs, mask, seat = game.play_observed(action, self.max_hands - self.hands_played)
        if info is not None:  # the hand is over
            self.hands_played += 1
            if self.reward_mode == "points":
                assert info.hand_points is not None
                side_rewards = margin_vs_best_other(info.hand_points[None, :, -1])[0]
                self._pay(side_rewards)
            if info.match_over:
                if self.reward_mode == "match":
                    self._pay(match_results(np.array([info.winner]), self.rules.num_sides)[0])
                self.terminations = dict.fromkeys(self.agents, True)
            elif self.hands_played >= self.max_hands:
                self.truncations = dict.fromkeys(self.agents, True)
            self._accumulate_rewards()  # rewards are paid at the end of a hand only: otherwise they are all 0
        self.agent_selection = agent = self.possible_agents[seat]
        self._ready = (agent, {"observation": obs, "action_mask": mask})  # what observe(agent) returns next
        if self.render_mode == "human":
            self.render()

    def render(self) -> str | None:
        """``"ansi"``: the picture as text; ``"human"``: print it. Other players' hands are hidden."""
        if self.render_mode is None:
            gymnasium.logger.warn("You are calling render() without a render_mode; pass render_mode='ansi' or 'human'.")
            return None
        state = self._require_state()
        text = render_text(self.rules, state, game=0, seat=self.agent_name_mapping[self.agent_selection])
        return show_text(text, self.render_mode)

    def close(self) -> None:
        """Nothing to release (text rendering only)."""

    def __str__(self) -> str:
        return ENV_NAME

    # ------------------------------------------------------------------------------------------------ helpers

    @property
    def _state(self) -> core.State | None:
        """The game as a ``core.State`` batch of one (a new copy at every read; None before ``reset``), for the
        agents that read the state (``scopa_env.envs.interop.act_env``), rendering and ``state_io``. Assigning a
        ``core.State`` of one game replaces the game with it."""
        return None if self._game is None else self._game.to_state()

    @_state.setter
    def _state(self, state: core.State | None) -> None:
        if state is not None and state.batch_size != 1:
            raise ValueError(f"the env plays one game, got a state of {state.batch_size}")
        self._game = None if state is None else game_from_state(self.rules, state)
        self._ready = None

    def _require_game(self) -> SingleGame:
        if self._game is None:
            raise RuntimeError("the env has no game yet: call reset() first")
        return self._game

    def _require_state(self) -> core.State:
        return self._require_game().to_state()

    def _pay(self, side_rewards: npt.NDArray[np.integer]) -> None:
        for agent in self.agents:
            self.rewards[agent] += float(side_rewards[self._side_of[self.agent_name_mapping[agent]]])
