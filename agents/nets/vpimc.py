"""``vpimc``: pimc with a learned leaf value (issue 53's learned search), and the value network it reads.

pimc values a move, in each sampled deal, by playing the rest of the hand out with ``greedy`` (a policy that loses
to pimc by six points a hand in scopone); the tuned search corrects that with twice the expert heuristic. ``vpimc``
plays the move in each sampled deal, lets greedy answer for the next ``reply`` plies (0: none), and then values the
position with a **value network**: an MLP over the deal as the sampled world has it (every hand, the table, the
piles, the scope, who moves next, all from the acting seat's chair) that predicts the hand's final margin of that
seat's side (the scope already made, known exactly, is added to its output). The last ``endgame`` plies are still
solved exactly in each sampled deal, as pimc does, and the expert heuristic can be added (``prior``, 0 by default).
``mix=w`` (0 by default) values each leaf ``(1 - w) x value + w x greedy rollout to the end of the hand``, as AlphaGo
mixed its value network with rollouts: the rollouts run on the compiled kernel as pimc's, over ``rworlds`` sampled
deals of their own (the mean over worlds is linear in the leaves, so the two means can be taken apart).
``value=greedy`` is the ablation: the value network replaced by its hand-written counterpart, greedy's rollout to the
end of the hand, the rest of the search as it is. Blind to hidden cards as pimc is: the features are read from the
sampled worlds, which are dealt from what the acting seat has seen.

``bench/value_pimc.py`` collects the positions and fits the network (``read_value_net`` reads what it writes: plain
arrays, nothing in the file runs); a search bot whose card's search is ``vpimc`` carries it as ``value.npz``
(``agents.nets.weights.VALUE``, read by ``agents.nets.bot``). Measured in docs/strength.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from agents.base import AgentSpecError, register_agent
from agents.baselines.features import generate_moves
from agents.baselines.greedy import greedy_moves
from agents.nets.az import one_blas_thread
from agents.nets.weights import read_npz
from agents.search.endgame import best_actions
from agents.search.lookahead import (
    apply_moves,
    mean_margins,
    move_margins,
    play_ply,
    sample_worlds,
    search_plan,
)
from agents.search.pimc import PIMCAgent
from scopa_env.engine.core import State
from scopa_env.engine.state_moves import remaining_plies
from scopa_env.games.policy import Policy
from scopa_env.rules import Rules
from scopa_env.rules.scoring import margin_vs_mean_of_others

__all__ = [
    "ValueNet",
    "ValuePIMC",
    "feature_size",
    "features",
    "raw_features",
    "read_value_net",
    "scale",
    "scope_columns",
    "scope_margin",
]

MAX_VALUE_BYTES = 1 << 28
"""The most bytes of arrays a value network file may hold (256 MB; the 512-256 network is 0.7 MB)."""
SCOPE_SCALE = 5.0
Found = tuple[Any, npt.NDArray[np.float64], npt.NDArray[np.intp]]
"""A search's candidates (the first world's), mean margins per row (n, width; -inf past a row's moves), first index."""


def feature_size(rules: Rules) -> int:
    n, s, d = rules.num_players, rules.num_sides, rules.num_cards
    return n * d + d + s * d + s + (s + 1) + n


def scope_columns(rules: Rules) -> slice:
    """Where the scope counts sit in the features: after the hands, the table and the piles."""
    at = (rules.num_players + 1 + rules.num_sides) * rules.num_cards
    return slice(at, at + rules.num_sides)


def features(rules: Rules, st: State, seat: npt.NDArray[np.intp]) -> npt.NDArray[np.float32]:
    """(B, F) the whole deal of each game from seat ``seat[i]``'s chair: every hand (that seat's first, then the
    next seats in turn), the table, the piles and scope (its side first), the last capturer, the seat to move."""
    return scale(rules, raw_features(rules, st, seat))


def scale(rules: Rules, raw: npt.NDArray[np.uint8]) -> npt.NDArray[np.float32]:
    """The network's input from ``raw_features`` (the scope counts scaled)."""
    x = raw.astype(np.float32)
    x[:, scope_columns(rules)] /= SCOPE_SCALE
    return x


def scope_margin(rules: Rules, raw: npt.NDArray[np.uint8]) -> npt.NDArray[np.float64]:
    """(B,) the scope already made, the mover's side less the mean of the others: points of the hand's final margin
    that are already known exactly. The network predicts the rest."""
    sc = raw[:, scope_columns(rules)].astype(np.float64)
    return sc[:, 0] - sc[:, 1:].mean(axis=1)


def raw_features(rules: Rules, st: State, seat: npt.NDArray[np.intp]) -> npt.NDArray[np.uint8]:
    """``features`` before scaling, as small integers (what ``collect`` stores)."""
    n, s = rules.num_players, rules.num_sides
    b = st.batch_size
    rows = np.arange(b)[:, None]
    side_of = np.asarray(rules.seat_side, dtype=np.intp)
    seat = np.asarray(seat, dtype=np.intp)
    side = side_of[seat]
    rel_seats = (seat[:, None] + np.arange(n)[None, :]) % n
    rel_sides = (side[:, None] + np.arange(s)[None, :]) % s
    hands = st.hands[rows, rel_seats].reshape(b, -1)
    piles = st.piles[rows, rel_sides].reshape(b, -1)
    scope = np.minimum(st.scope[rows, rel_sides], 255)
    last = np.zeros((b, s + 1), dtype=np.uint8)
    lc = st.last_capturer.astype(np.intp)
    last[np.arange(b), np.where(lc < 0, 0, 1 + (lc - side) % s)] = 1.0
    to_move = np.zeros((b, n), dtype=np.uint8)
    to_move[np.arange(b), (st.current.astype(np.intp) - seat) % n] = 1
    parts = [hands, st.table, piles, scope, last, to_move]
    return np.concatenate([p.astype(np.uint8) for p in parts], axis=1)


class ValueNet:
    """The value MLP (ReLU between layers): ``layers`` of (in, out) weight matrices and their biases, float32."""

    def __init__(self, layers: list[tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]]) -> None:
        self.layers = layers

    def __call__(self, x: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
        for i, (w, b) in enumerate(self.layers):
            x = x @ w + b
            if i < len(self.layers) - 1:
                np.maximum(x, 0.0, out=x)
        return x[:, 0].astype(np.float64)


def read_value_net(path: str | Path, rules: Rules) -> ValueNet:
    """The value network of ``path`` (``W0, b0, W1, b1, ...``, as ``bench/value_pimc.py fit`` writes them) for
    ``rules``, read as untrusted input: plain arrays only (nothing in the file runs), at most ``MAX_VALUE_BYTES``, the
    layers chained from ``feature_size(rules)`` inputs to one output, every weight finite. Raises ``ValueError`` saying
    what is wrong (``OSError`` when the file cannot be read); the caller names the file."""
    z = read_npz(path, max_bytes=MAX_VALUE_BYTES)
    k = len([f for f in z if f.startswith("W")])
    if k == 0 or set(z) != {f"{p}{i}" for i in range(k) for p in "Wb"}:
        raise ValueError(f"not a value network (arrays W0, b0, W1, b1, ...; it holds {sorted(z)[:8]})")
    width = feature_size(rules)
    layers = []
    for i in range(k):
        w, b = z[f"W{i}"], z[f"b{i}"]
        out = 1 if i == k - 1 else (w.shape[1] if w.ndim == 2 else -1)
        if w.dtype.kind != "f" or b.dtype.kind != "f" or w.shape != (width, out) or b.shape != (out,):
            takes = f"the {width} features of {rules.name}" if i == 0 else f"layer {i - 1}'s {width} outputs"
            raise ValueError(
                f"layer {i} is W {w.shape} {w.dtype}, b {b.shape} {b.dtype}: a value network's layer {i} takes "
                f"{takes} and gives {'one value' if i == k - 1 else 'some'} (float arrays)"
            )
        if not (np.isfinite(w).all() and np.isfinite(b).all()):
            raise ValueError(f"layer {i} holds NaN or infinite weights (a fit that diverged)")
        layers.append((w.astype(np.float32), b.astype(np.float32)))
        width = out
    return ValueNet(layers)


class ValuePIMC(PIMCAgent):
    """pimc with a value network at the leaves instead of greedy rollouts (the module docstring)."""

    name = "vpimc"

    def __init__(
        self, rules: Rules, seed: int | None = None, value: str | ValueNet = "", reply: int = 0, **options: Any
    ) -> None:
        try:  # the rest of the options are pimc's
            mix, rworlds = float(options.pop("mix", 0.0)), int(options.pop("rworlds", 0))
        except (TypeError, ValueError) as e:
            raise AgentSpecError(f"vpimc: mix must be a number and rworlds a whole number ({e})") from None
        options.setdefault("prior", 0.0)
        super().__init__(rules, seed, **options)
        if reply < 0:
            raise AgentSpecError("vpimc: reply must be >= 0 (plies played by greedy after the move, before the value)")
        if not 0.0 <= mix < 1.0:
            raise AgentSpecError("vpimc: mix must be in [0, 1) (the weight of greedy rollouts beside the value)")
        if rworlds < 0:
            raise AgentSpecError("vpimc: rworlds must be >= 0 (0: as many as worlds)")
        self.reply = int(reply)
        self.mix = mix
        self.rworlds = rworlds or self.worlds
        if self.depth != 1:
            raise AgentSpecError("vpimc: depth must be 1 (the value network takes the place of the rollouts)")
        if not value:
            raise AgentSpecError(
                "vpimc: give value=PATH, a value network written by bench/value_pimc.py fit (or value=greedy, the "
                "ablation: greedy rollouts in its place)"
            )
        self.value: ValueNet | None
        if isinstance(value, ValueNet):
            self.value = value
        elif value == "greedy":
            self.value = None
        else:
            try:
                self.value = read_value_net(value, rules)
            except (OSError, ValueError) as e:
                raise AgentSpecError(f"vpimc: value={value}: {e}") from None

    def _play(self, state: State, games: npt.NDArray[np.intp]) -> npt.NDArray[np.int64]:
        exact = remaining_plies(self.rules, state, games) <= self.endgame
        actions = np.zeros(games.size, dtype=np.int64)
        if exact.any():  # pimc's exact end game over sampled deals, unchanged
            actions[exact] = super()._play(state, games[exact])
        if (~exact).any():
            rest = games[~exact]
            with one_blas_thread():
                found = self.value_search(state, rest)
            if self.mix > 0:
                found = self.mixed(state, rest, found)
            actions[~exact] = best_actions(state, rest, found)
        return actions

    def mixed(self, state: State, games: npt.NDArray[np.intp], found: Found) -> Found:
        """``found`` (the value search's margins, prior included: the mix scales the prior too) with the weight ``mix``
        moved to pimc's greedy rollouts to the end of the hand, over ``rworlds`` worlds of their own: each move's leaf
        is valued ``(1 - mix) x value + mix x rollout`` (the two means are linear in the leaves, so their worlds need
        not be the same). The candidates are the acting seat's (the same in every world); checked to line up."""
        moves, vtot, first = found
        rmoves, rtot, rfirst = self.rollout_search(state, games, self.rworlds, with_prior=False)
        valid = np.isfinite(vtot)
        if vtot.shape != rtot.shape or not np.array_equal(valid, np.isfinite(rtot)):
            raise AssertionError("vpimc: the value search's and the rollouts' candidates differ")
        rows, j = np.nonzero(valid)
        if not np.array_equal(moves.card[first[rows] + j], rmoves.card[rfirst[rows] + j]):
            raise AssertionError("vpimc: the value search's and the rollouts' candidates are in another order")
        out = np.full_like(vtot, -np.inf)
        out[valid] = (1.0 - self.mix) * vtot[valid] + self.mix * rtot[valid]
        return moves, out, first

    def value_search(self, state: State, games: npt.NDArray[np.intp]) -> Found:
        """``move_margins``' result with each move valued by the value network in every sampled deal (``value=greedy``,
        the ablation: by its hand-written counterpart, greedy's rollout from there to the end of the hand, which with
        the greedy reply plies before it is pimc's rollout from the move, searched on the kernel as pimc's)."""
        rules = self.rules
        if self.value is None:
            return self.rollout_search(state, games, self.worlds, with_prior=True)
        counts = np.full(games.size, self.worlds, dtype=np.intp)
        worlds, wrow = sample_worlds(rules, state, games, counts, self.rng)
        moves = generate_moves(rules, worlds, np.arange(worlds.batch_size))
        children = worlds.take(moves.row)
        mover = children.current.astype(np.intp).copy()
        ended, pts = apply_moves(rules, children, moves.card, moves.capture)
        for _ in range(self.reply):  # the next plies played by greedy in each world, as pimc's rollouts begin
            live = np.flatnonzero(~ended)
            if live.size == 0:
                break
            now_ended, now_pts = play_ply(rules, children, live, greedy_moves)
            pts[now_ended] = now_pts[now_ended]
            ended |= now_ended
        side_of = np.asarray(rules.seat_side, dtype=np.intp)
        value = margin_vs_mean_of_others(pts)[np.arange(len(moves)), side_of[mover]]
        live = np.flatnonzero(~ended)
        if live.size:
            raw = raw_features(rules, children.take(live), mover[live])
            value[live] = self.value(scale(rules, raw)) + scope_margin(rules, raw)
        return mean_margins(rules, state, games, moves, wrow, counts, value, self.prior_weights(games, True))

    def prior_weights(self, games: npt.NDArray[np.intp], with_prior: bool) -> npt.NDArray[np.float64] | None:
        """The expert heuristic's weight for each game (as pimc's), None where there is none."""
        return np.full(games.size, self.prior) if with_prior and self.prior > 0 else None

    def rollout_search(self, state: State, games: npt.NDArray[np.intp], worlds: int, with_prior: bool) -> Found:
        """pimc's own search of these (not exact) games: ``worlds`` sampled deals (one for an open book,
        ``search_plan``), greedy rolled out to the end of the hand from each move, on the kernel."""
        exact, counts, limits = search_plan(self.rules, state, games, worlds, self.depth, self.endgame)
        assert not exact.any(), "vpimc: the exact end game is pimc's own"
        prior = self.prior_weights(games, with_prior)
        return move_margins(self.rules, state, games, counts, limits, greedy_moves, self.rng, prior)


@register_agent(
    "vpimc",
    "pimc with a value network at the leaves (agents.nets.vpimc); value=PATH (or greedy: the ablation), reply=N, "
    "mix=W (greedy rollouts' weight beside the value), rworlds=N (their worlds), pimc's options",
)
@register_agent(
    "vpimc",
    "pimc with a value network at the leaves (agents.nets.vpimc); value=PATH (or greedy: the ablation), reply=N, "
    "mix=W (greedy rollouts' weight beside the value), rworlds=N (their worlds), pimc's options",
)
def _make_vpimc(rules: Rules, seed: int | None = None, **options: Any) -> Policy:
    return ValuePIMC(rules, seed, **options)
