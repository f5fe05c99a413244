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
| Action Values      | Discrete(D), D = 40 cards (52 in `simple-8`)                    |
| Observation Shape  | `observation`: (obs_size,) float32, 336 in `classic`; `action_mask`: (D,) int8 |
| Observation Values | [0, 1] except the `scores`, `scope`, `table_sum` and `plays` blocks (see below) |

## Description

Scopa is the Italian fishing card game: players take turns playing a card from their hand to the table, capturing
a table card of the same rank or, failing that, a set of table cards whose values add up to the played card's
value. Sweeping the table clean is a *scopa* (one point). At the end of each hand each side scores one point for
most cards (*carte*), most coins (*denari*), the seven of coins (*settebello*), the best *primiera*, plus its
*scope*; the first side to reach the target (11 in `classic`) with a strict lead wins the match. The rules are in
`RULES.md`; every named variant of `scopa_env.rules.VARIANTS` is available: two players (`classic`, `classic-15`,
`classic-21`, `scopa-d-assi`), four in two teams (`scopa-a-quattro`, `scopone-scientifico`, `simple-4-teams`),
six in three teams (`simple-6-teams`) and the beginners' games for 2 to 8 players (`simple-N`).

This environment is a thin layer over the batched numpy rules core (`scopa_env.core`) playing one game: it maps
seats to agent names, calls `core.step`, and pays rewards from what the core reports. Seat `i` is agent
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
section 7) and an `"action_mask"` (see *Legal Actions Mask*). The vector is `scopa_env.core.observe` for the
observing seat; its layout is `scopa_env.core.observation_layout(rules)` (version `core.OBS_VERSION`). With D cards,
S sides, N seats and R ranks (classic: D = 40, S = 2, N = 2, R = 10, size 336):

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
whole deck's capture values / 40); `observation_bounds` computes them. The `plays` block depends on the table only:
it spells out the capture arithmetic a player does at a glance, which a small network learns slowly from card bits.

## Legal Actions Mask

`observation["action_mask"]` is an int8 vector of length D with a 1 for every legal action of the agent to act, and
all zeros for the other agents and once the game is over. `scopa_v0.env` wraps the raw env like PettingZoo's
classic games: an illegal action ends the game with a reward of -1 for the offending agent and 0 for the others
(`TerminateIllegalWrapper`); `raw_env` raises `scopa_env.core.IllegalActionError` naming the legal actions.
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

`reset(seed=s)` plays the game whose deals are fixed by seed `s` (`scopa_env.shuffle`); a later `reset()` without a
seed plays the next game of the same seed chain (`shuffle.derive_seed`), so a seeded env is reproducible.
`reset(options={"state": saved})` starts from a position saved with `scopa_env.state_io.state_to_json`. The game's
seed fixes every hidden card (the other hands, the stock order), so it stays inside the env: no `infos` entry and no
public attribute holds it, nor the game state (`infos` are empty dicts).

## Parallel API

`scopa_v0.parallel_env(variant=..., render_mode=None, reward="match", max_hands=100, illegal="terminate")` is the
same game as a PettingZoo `ParallelEnv` (`scopa_env.parallel`): each `step(actions)` plays the action of the agent
to act, the one whose `action_mask` has ones; the other agents get all-zero masks and their actions are ignored.
The masks are also in `infos[agent]["action_mask"]`. An illegal action ends the match with -1 for its agent
(`illegal="raise"` raises instead).

## Version History

* v0: Initial release (observation version `core.OBS_VERSION` = 2: version 1 had no `table_sum` and `plays`
  blocks; it never shipped in a release).
"""

from __future__ import annotations

from typing import Any, Literal

import gymnasium
import numpy as np
import numpy.typing as npt
from gymnasium import spaces
from gymnasium.utils import EzPickle
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from scopa_env import core
from scopa_env.learner import MAX_SEED, REWARD_MODES, check_seed, validate_max_hands, validate_reward
from scopa_env.render import render_text
from scopa_env.rules import CATEGORIES, Rules, get_rules
from scopa_env.scoring import margin_vs_best_other, match_results
from scopa_env.shuffle import derive_seed
from scopa_env.state_io import state_from_json

__all__ = [
    "REWARD_MODES",
    "check_action",
    "env",
    "match_results",
    "observation_bounds",
    "raw_env",
    "validate_max_hands",
    "validate_reward",
]

ENV_NAME = "scopa_v0"
_BOUNDED_BLOCKS = {
    "hand", "table", "pending", "picked", "unseen", "piles", "stock", "hand_sizes", "dealer", "seat",
    "last_capturer", "choosing",
}  # fmt: skip
"""Observation blocks whose values lie in [0, 1]; ``scores`` and ``scope`` get their own bounds."""


def observation_bounds(rules: Rules | str, max_hands: int) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    """(low, high) of every observation entry, for a match truncated after ``max_hands`` hands.

    All blocks lie in [0, 1] except ``scores`` (points / target), ``scope`` (scope / 10) and the table sums
    of ``table_sum`` and ``plays`` (capture values / 40). A side makes at most
    ``P = seats per side * cards per seat per hand`` plays in a hand, so it has at most P scope and at most
    ``len(CATEGORIES) - 1 + P`` points in a hand (one point per other category).
    """
    rules = get_rules(rules)
    max_hands = validate_max_hands(max_hands)
    layout = core.observation_layout(rules)
    size = layout[-1][2]
    plays_per_side = max(len(side) for side in rules.sides) * sum(rules.deal_sizes)
    hand_points = len(CATEGORIES) - 1 + plays_per_side
    high = np.ones(size, dtype=np.float32)
    for name, start, stop, _ in layout:
        if name == "scores":
            high[start:stop] = max(1.0, max_hands * hand_points / rules.target)
        elif name == "scope":
            high[start:stop] = max(1.0, plays_per_side / 10.0)
        elif name in ("table_sum", "plays"):  # sums of capture values / 40: at most the whole deck's
            high[start:stop] = max(1.0, float(rules.deck.value.astype(np.int64).sum()) / 40.0)
        elif name not in _BOUNDED_BLOCKS:
            raise RuntimeError(
                f"observation block {name!r} (core.OBS_VERSION {core.OBS_VERSION}) has no known bound; "
                "add it to scopa_env.aec.observation_bounds"
            )
    return np.zeros(size, dtype=np.float32), high


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

    Arguments as for ``raw_env``.
    """
    aec: AECEnv = raw_env(**kwargs)
    aec = wrappers.TerminateIllegalWrapper(aec, illegal_reward=-1)
    aec = wrappers.AssertOutOfBoundsWrapper(aec)
    aec = _CheckActionType(aec)
    aec = wrappers.OrderEnforcingWrapper(aec)
    return aec


def check_action(aec: Any, action: Any) -> None:
    """Raise unless ``action`` can be given to ``aec.step`` (the raw env, or a wrapper around it) right now.

    An action is a card id (a Python or numpy integer, or a 0-d integer array; not a bool, a float or a string),
    or ``None`` for an agent that is already done; once every agent has passed its final step there is none to take.
    A card id out of range raises ``scopa_env.core.IllegalActionError``; whether it is legal, the env decides.
    """
    if not aec.agents:
        raise RuntimeError("the match is over and every agent has passed its final step: call reset() to play again")
    agent = aec.agent_selection
    if action is None:
        if not (aec.terminations[agent] or aec.truncations[agent]):
            raise ValueError(f"{agent} is still playing: step() needs a card id, got None")
        return
    is_int = isinstance(action, (int, np.integer)) or (
        isinstance(action, np.ndarray) and action.shape == () and action.dtype.kind in "iu"
    )
    num_cards = aec.unwrapped.rules.num_cards
    if isinstance(action, (bool, np.bool_)) or not is_int:
        raise TypeError(
            f"the action must be a card id, an integer 0..{num_cards - 1} (None for an agent that is done), "
            f"got {action!r} of type {type(action).__name__}"
        )
    if not 0 <= int(action) < num_cards:
        raise core.IllegalActionError(f"action {int(action)} is not a card id: card ids are 0..{num_cards - 1}")


class _CheckActionType(wrappers.BaseWrapper):  # type: ignore[type-arg]
    """Refuses actions of the wrong type with ``check_action``'s ``TypeError`` before the other wrappers see them."""

    def step(self, action: Any) -> None:
        check_action(self, action)
        super().step(action)

    def __str__(self) -> str:
        return str(self.env)


class raw_env(AECEnv, EzPickle):
    """Scopa for N seats as a PettingZoo AEC env; see the module docstring."""

    metadata: dict[str, Any] = {  # noqa: RUF012 (PettingZoo reads it as a class attribute)
        "render_modes": ["human", "ansi"],
        "name": ENV_NAME,
        "is_parallelizable": False,
        "render_fps": 1,
    }

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
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None, 'ansi' or 'human', got {render_mode!r}")
        self.render_mode = render_mode
        self.reward_mode = validate_reward(reward)
        self.max_hands = validate_max_hands(max_hands)
        n, d = self.rules.num_players, self.rules.num_cards
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
        self.action_spaces = {a: spaces.Discrete(d) for a in self.possible_agents}
        self._state: core.State | None = None  # the game (batch of one): hidden cards and seed, never shown to agents
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

        ``options={"state": saved}`` starts from a saved position instead (``scopa_env.state_io``: JSON text, its
        dict, or a ``core.State`` batch of one of this variant); the next ``reset()`` plays the next game of that
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
        if saved is None:
            state = core.reset(self.rules, np.array([game_seed], dtype=np.uint64))
        self._state = state
        self.hands_played = int(state.hand_no[0])
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos: dict[str, dict[str, Any]] = {a: {} for a in self.agents}
        self.agent_selection = self.possible_agents[int(self._state.current[0])]

    def observe(self, agent: str) -> dict[str, npt.NDArray[Any]]:
        """``{"observation": (obs_size,) float32, "action_mask": (D,) int8}`` for ``agent``'s seat."""
        state = self._require_state()
        seat = self.agent_name_mapping.get(agent) if isinstance(agent, str) else None
        if seat is None:
            raise ValueError(f"unknown agent {agent!r}; the agents are {', '.join(self.possible_agents)}")
        obs = core.observe(self.rules, state, seats=np.array([seat]))[0]
        over = state.done[0] or self.hands_played >= self.max_hands  # a match cut off at max_hands is over too
        if agent == self.agent_selection and not over:
            mask = core.legal_action_mask(self.rules, state)[0].astype(np.int8)
        else:
            mask = np.zeros(self.rules.num_cards, dtype=np.int8)
        return {"observation": obs, "action_mask": mask}

    def step(self, action: int | np.integer | None) -> None:
        """Apply the selected agent's action (a card id); ``None`` for an agent that is already done.

        Raises ``RuntimeError`` before ``reset`` and once every agent has passed its final step, ``TypeError`` for
        an action that is not an integer (or ``None``), ``ValueError`` for ``None`` from an agent still playing
        and ``scopa_env.core.IllegalActionError`` (a ``ValueError``) for a card id that is not legal.
        """
        state = self._require_state()
        check_action(self, action)
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        self._cumulative_rewards[agent] = 0.0
        self.rewards = dict.fromkeys(self.agents, 0.0)
        info = core.step(self.rules, state, np.array([int(action)], dtype=np.int64))  # type: ignore[arg-type]
        if info.hand_over[0]:
            self.hands_played += 1
            if self.reward_mode == "points":
                side_rewards = margin_vs_best_other(info.hand_points[:, :, -1])[0]
                self._pay(side_rewards)
            if info.match_over[0]:
                if self.reward_mode == "match":
                    self._pay(match_results(info.winner, self.rules.num_sides)[0])
                self.terminations = dict.fromkeys(self.agents, True)
            elif self.hands_played >= self.max_hands:
                self.truncations = dict.fromkeys(self.agents, True)
        self._accumulate_rewards()
        self.agent_selection = self.possible_agents[int(state.current[0])]
        if self.render_mode == "human":
            self.render()

    def render(self) -> str | None:
        """``"ansi"``: the picture as text; ``"human"``: print it. Other players' hands are hidden."""
        if self.render_mode is None:
            gymnasium.logger.warn("You are calling render() without a render_mode; pass render_mode='ansi' or 'human'.")
            return None
        state = self._require_state()
        text = render_text(self.rules, state, game=0, seat=self.agent_name_mapping[self.agent_selection])
        if self.render_mode == "human":
            print(text + "\n")
            return None
        return text

    def close(self) -> None:
        """Nothing to release (text rendering only)."""

    def __str__(self) -> str:
        return ENV_NAME

    # ------------------------------------------------------------------------------------------------ helpers

    def _require_state(self) -> core.State:
        if self._state is None:
            raise RuntimeError("the env has no game yet: call reset() first")
        return self._state

    def _pay(self, side_rewards: npt.NDArray[np.integer]) -> None:
        for agent in self.agents:
            self.rewards[agent] += float(side_rewards[self._side_of[self.agent_name_mapping[agent]]])
