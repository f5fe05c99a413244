"""A learned leaf value in place of pimc's greedy rollouts: ``vpimc``, an experiment for issue 53's learned search.

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
end of the hand, the rest of the search as it is::

    python bench/value_pimc.py collect --hands 25000 --seed 102 --all-seats --out runs/value/d2.npz
    python bench/value_pimc.py fit --data runs/value/d2.npz --arch 512,256 --epochs 4 --out runs/value/v2.npz
    python evaluate.py --plugin scopa_bench.value_pimc --variant scopone-scientifico \
        --gauntlet "v=vpimc:value=runs/value/v2.npz,worlds=256,endgame=10,reply=3" \
        --agents "tuned=pimc:worlds=256,endgame=10,prior=2" --hands 400 --seed 9101 --workers 1

``collect`` plays hands with a network's policy (a bot directory; its card sampled from the softmax at ``--temp``,
greedy's capture for that card, as ``az``'s rollouts) and keeps, after every move, the features from the mover's
chair (``--all-seats``: from every chair) and the hand's final margin of that chair's side. ``fit`` fits the MLP
(mean squared error) and writes its weights as plain arrays (read with ``allow_pickle=False``: nothing in the file
runs). Blind to hidden cards as pimc is: the features are read from the sampled worlds, which are dealt from what
the acting seat has seen. An experiment, not a baseline (measured in docs/strength.md).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from agents.base import AgentSpecError, load_network, register_agent
from agents.baselines.features import generate_moves
from agents.baselines.greedy import greedy_moves
from agents.cli.settings import add_field_options, int_arg, parse_options, setting
from agents.nets.az import net_rollout_policy, one_blas_thread
from agents.nets.weights import MAX_NPZ_BYTES, read_npz
from agents.search.endgame import best_actions
from agents.search.lookahead import (
    apply_moves,
    mean_margins,
    move_margins,
    play_ply,
    resolve_knocks,
    sample_worlds,
    search_plan,
)
from agents.search.pimc import PIMCAgent
from scopa_env.engine import core
from scopa_env.engine.core import Phase, State
from scopa_env.engine.state_moves import remaining_plies
from scopa_env.games.policy import Policy
from scopa_env.rules import Rules, get_rules
from scopa_env.rules.scoring import margin_vs_mean_of_others

__all__ = ["ValueNet", "ValuePIMC", "collect", "features", "fit"]

SCOPE_SCALE = 5.0
Found = tuple[Any, npt.NDArray[np.float64], npt.NDArray[np.intp]]
"""A search's candidates (the first world's), mean margins per row (n, width; -inf past a row's moves), first index."""
MAX_DATA_BYTES = 1 << 34  # collect's data: 289 bytes a position (a million hands from every chair: 45 GB)


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
    """The value MLP (ReLU) from its plain-array file: ``W0, b0, W1, b1, ...`` (in, out) matrices."""

    def __init__(self, path: str | Path) -> None:
        z = read_arrays(path, MAX_NPZ_BYTES)
        k = len([f for f in z if f.startswith("W")])
        self.layers = [(z[f"W{i}"].astype(np.float32), z[f"b{i}"].astype(np.float32)) for i in range(k)]

    def __call__(self, x: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
        for i, (w, b) in enumerate(self.layers):
            x = x @ w + b
            if i < len(self.layers) - 1:
                np.maximum(x, 0.0, out=x)
        return x[:, 0].astype(np.float64)


class ValuePIMC(PIMCAgent):
    """pimc with a value network at the leaves instead of greedy rollouts (the module docstring)."""

    name = "vpimc"

    def __init__(self, rules: Rules, seed: int | None = None, value: str = "", reply: int = 0, **options: Any) -> None:
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
        self.value = None if value == "greedy" else ValueNet(value)

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
            net = cast(ValueNet, self.value)
            value[live] = net(scale(rules, raw)) + scope_margin(rules, raw)
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
    "EXPERIMENT: pimc with a value network at the leaves (bench/value_pimc.py); value=PATH, reply=N, "
    "mix=W (greedy rollouts' weight beside the value), rworlds=N (their worlds), pimc's options",
)
def _make_vpimc(rules: Rules, seed: int | None = None, **options: Any) -> Policy:
    return ValuePIMC(rules, seed, **options)


def collect(
    variant: str, net_path: str, hands: int, seed: int, temp: float, batch: int = 1000, all_seats: bool = False
) -> dict[str, npt.NDArray[Any]]:
    """Play ``hands`` hands with the network's policy; return the features after every move (from the mover's seat)
    and the hand's final margin of the mover's side."""
    rules = get_rules(variant)
    net = load_network(rules, net_path)
    rng = np.random.default_rng(seed)
    policy = net_rollout_policy(net, temp, lambda: rng)
    xs, ys, hs = [], [], []
    start = time.monotonic()
    for first in range(0, hands, batch):
        b = min(batch, hands - first)
        state = core.reset(rules, (seed * 1_000_003 + first + np.arange(b)).astype(np.uint64))
        resolve_knocks(rules, state)
        feats: list[npt.NDArray[np.uint8]] = []
        owner: list[tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]] = []
        points = np.zeros((b, rules.num_sides))
        with one_blas_thread():
            while True:
                live = np.flatnonzero(state.phase != Phase.DONE)
                if live.size == 0:
                    break
                mover = state.current.astype(np.intp).copy()
                ended, pts = play_ply(rules, state, live, policy)
                points[ended] = pts[ended]
                keep = live[~ended[live]]
                if keep.size:
                    after = state.take(keep)
                    for k in range(rules.num_players if all_seats else 1):  # the mover's chair, then the others'
                        seat = (mover[keep] + k) % rules.num_players
                        feats.append(raw_features(rules, after, seat))
                        owner.append((keep, seat))
        side_of = np.asarray(rules.seat_side, dtype=np.intp)
        margins = margin_vs_mean_of_others(points)
        for f, (g, m) in zip(feats, owner, strict=True):
            xs.append(f)
            ys.append(margins[g, side_of[m]].astype(np.float32))
            hs.append((first + g).astype(np.int32))
        done = first + b
        el = time.monotonic() - start
        print(
            f"collect: {done}/{hands} hands, {sum(len(y) for y in ys):,} positions, {el:.0f}s, "
            f"ETA {el / done * (hands - done):.0f}s",
            file=sys.stderr,
            flush=True,
        )
    return {"x": np.concatenate(xs), "y": np.concatenate(ys), "hand": np.concatenate(hs)}


def fit(
    rules: Rules,
    x: npt.NDArray[np.uint8],
    y: npt.NDArray[np.float32],
    arch: list[int],
    epochs: int,
    seed: int,
    threads: int,
    hand: npt.NDArray[np.int64] | None = None,
) -> tuple[dict[str, npt.NDArray[np.float32]], dict[str, float]]:
    """Fit the value MLP to ``y`` (MSE, Adam, cosine decay); 5% held out: whole hands where ``hand`` (each row's
    hand) is given, since a hand's positions (and each from four chairs) share its outcome, else rows. Returns the
    arrays and the fit's losses."""
    import torch

    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    rng = np.random.default_rng(seed)
    if hand is None:
        order = rng.permutation(len(y))
        hold, train = order[: len(y) // 20], order[len(y) // 20 :]
    else:
        held_hands = rng.random(int(hand.max()) + 1) < 0.05
        held_hands[int(rng.integers(held_hands.size))] = True  # at least one
        hold, train = np.flatnonzero(held_hands[hand]), np.flatnonzero(~held_hands[hand])
    sizes = [x.shape[1], *arch, 1]
    mods: list[Any] = []
    for i in range(len(sizes) - 1):
        mods.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            mods.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*mods)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    steps = epochs * (len(train) // 2048 + 1)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    y = (y - scope_margin(rules, x)).astype(np.float32)  # the network predicts what the scope so far leaves open
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)  # x: raw features (uint8)
    col = torch.ones(x.shape[1])
    col[scope_columns(rules)] = 1.0 / SCOPE_SCALE

    def inp(idx: Any) -> Any:
        return xt[idx].float() * col

    def held() -> float:
        with torch.no_grad():
            out = torch.cat([model(inp(hold[k : k + 65536]))[:, 0] for k in range(0, len(hold), 65536)])
            return float(((out - yt[hold]) ** 2).mean())

    base = float(((yt[hold] - yt[train].mean()) ** 2).mean())
    print(f"fit: {len(train):,} rows, held-out MSE of the mean {base:.3f}", file=sys.stderr, flush=True)
    for e in range(epochs):
        perm = torch.from_numpy(rng.permutation(train))
        for k in range(0, len(perm), 2048):
            idx = perm[k : k + 2048]
            loss = ((model(inp(idx))[:, 0] - yt[idx]) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        print(f"fit: epoch {e + 1}/{epochs}: held-out MSE {held():.3f}", file=sys.stderr, flush=True)
    arrays: dict[str, npt.NDArray[np.float32]] = {}
    linears = [m for m in mods if isinstance(m, torch.nn.Linear)]
    for i, lin in enumerate(linears):
        arrays[f"W{i}"] = lin.weight.detach().numpy().T.copy()
        arrays[f"b{i}"] = lin.bias.detach().numpy().copy()
    return arrays, {"held_out_mse": held(), "mean_only_mse": base}


@dataclass
class Options:
    """The command line's options (``agents.cli.settings``: each field's doc is its help)."""

    step: str = setting(option="step", choices=["collect", "fit"], doc="collect positions, or fit the value network")
    out: Path = setting(doc="the data file (collect) or the value network (fit) to write, .npz")
    data: list[Path] = setting(default_factory=list, doc="fit: the data files written by collect", nargs="*")
    variant: str = setting("scopone-scientifico", "the variant")
    net: str = setting("agents/bots/scopone-scientifico", "collect: the network whose play makes the positions")
    hands: int = setting(20000, "collect: hands played, 1..10**6", parse=int_arg(1, 10**6))
    seed: int = setting(0, "collect: the deals' and the sampling's seed; fit: the weights', split's and order's")
    temp: float = setting(0.5, "collect: the temperature of the network's softmax the cards are sampled from")
    all_seats: bool = setting(False, "collect: every position from every seat's chair", negatable=False)
    arch: str = setting("512,256", "fit: hidden layer sizes, comma-separated")
    epochs: int = setting(6, "fit: passes over the rows", parse=int_arg(1, 1000))
    threads: int = setting(2, "fit: torch threads", parse=int_arg(1, 64))


def read_arrays(path: str | Path, max_bytes: int = MAX_DATA_BYTES) -> dict[str, npt.NDArray[Any]]:
    """The arrays of a file this module wrote, through the project's guarded reader (no pickles, sizes checked)."""
    return read_npz(path, max_bytes=max_bytes)


def read_data(paths: list[Path]) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.float32], npt.NDArray[np.int64] | None]:
    """The rows of collect's files, one after another, and each row's hand (numbered apart in each file; None where a
    file has none). Read one file at a time into arrays of the full size: a few GB a file is read at most once more."""
    xs: list[npt.NDArray[np.uint8]] = []
    ys: list[npt.NDArray[np.float32]] = []
    hands: list[npt.NDArray[np.int64]] | None = []
    next_hand = 0
    for path in paths:
        q = read_arrays(path)
        xs.append(q.pop("x"))
        ys.append(q.pop("y"))
        if hands is not None and "hand" in q:
            hands.append(q["hand"].astype(np.int64) + next_hand)
            next_hand = int(hands[-1].max()) + 1
        else:
            hands = None
        del q
    if len(xs) == 1:
        return xs[0], ys[0], hands[0] if hands else None
    x = np.empty((sum(len(v) for v in xs), xs[0].shape[1]), dtype=np.uint8)
    at = 0
    while xs:  # each part freed as it is copied
        part = xs.pop(0)
        x[at : at + len(part)] = part
        at += len(part)
        del part
    return x, np.concatenate(ys), np.concatenate(hands) if hands else None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python bench/value_pimc.py",
        description=(__doc__ or "").split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_field_options(p, Options, typed=True, once=False)
    a = parse_options(p, Options, argv)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    if a.step == "collect":
        data = collect(a.variant, a.net, a.hands, a.seed, a.temp, all_seats=a.all_seats)
        np.savez_compressed(a.out, x=data["x"], y=data["y"], hand=data["hand"])
        print(f"wrote {len(data['y']):,} positions to {a.out}")
        return 0
    if not a.data:
        p.error("fit needs --data FILE [FILE ...] (what collect wrote)")
    x, y, hand = read_data(a.data)
    arch = [int(v) for v in a.arch.split(",")]
    arrays, report = fit(get_rules(a.variant), x, y, arch, a.epochs, a.seed, a.threads, hand)
    np.savez(a.out, **arrays)  # type: ignore[arg-type]
    print(f"wrote {a.out}: {report}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
