"""Game review: every move of a recorded game valued in points per hand, the mistakes marked, the better move shown.

    python -m agents.play.review games.jsonl                       # every decision of every game, a table
    python -m agents.play.review games.jsonl --games 0 --seat 0 --json review.json --plot review.png
    python -m agents.play.review tournament.jsonl --agent bot --games 0-19   # where a tournament's agent loses points

    review = review_record(record, seats=[0])      # one game (a line of a records file) as a JSON-ready dict

For each decision of a reviewed seat the position is rebuilt from the record and every legal move is valued by the
search ``pimc`` plays with (``agents.play.move_values``), from that seat's information only (**honest**, the default):
the cards the seat has not seen are dealt ``worlds`` times at random into the other hands and the stock
(``lookahead.sample_worlds``: only the unseen *set* is read, so the values are the same whatever the hidden cards really
were), each move is played in every world, and the rest of the hand is played by greedy rollouts
(``compiled.kernel_rollout``) or, once at most ``ENDGAME_PLIES`` moves are left with the stock empty, solved exactly in
each world (``compiled.kernel_search_tree`` to the end of the hand). Where the seat can deduce every hidden card
(``state_moves.is_open``) the one possible world is solved and the value is exact. ``open_hands`` (``--open``) values
hindsight instead: the real deal is the only world (every hand and the stock order known), solved exactly in the end
game, played out greedily before it.

A move's value is the points its side makes in the rest of the hand minus the other side's (the mean of the other
sides' with more than two: ``scoring.margin_vs_mean_of_others``), its mean over the worlds with its standard error;
every move is valued on the same worlds, so the differences between moves are measured more precisely than the values
(``loss_se``). A decision starts with ``worlds`` deals and doubles them, up to ``SETTLE_ROUNDS`` times, while its
verdict is unsettled (a gap within ``SETTLE_Z`` standard errors of a threshold). ``loss`` is the best move's value
minus the played move's. A decision is marked by its loss (``MARKS``): a blunder from ``BLUNDER`` points, a mistake
from ``MISTAKE``, an inaccuracy from ``INACCURACY``. Where a move loses points, the loss is split over the scoring
categories (``kind``): the first ``KIND_WORLDS`` worlds are played out after the best and the played move, and each
category's mean margin is compared (cards, coins, settebello, primiera, scope; cirulla's napoli, grande and knocks),
so the parts add up to the loss measured on those worlds; ``kind`` names the largest. docs/review.md explains the
numbers and the limits (a review is as strong as its search).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agents.base import make_agent
from agents.cli.atomic import atomic_open
from agents.cli.numbers import int_arg
from agents.cli.settings import MAX_SEED, add_field_options, parse_options, setting
from agents.errors import ScopaError
from agents.play.match import Event, HandOver, HandStart, HumanMatch, Knock, Move, NewDeal
from agents.play.move_values import BLUNDER, INACCURACY, MARKS, MISTAKE, MoveValues, move_text, play_out, settled_values
from agents.search import compiled
from scopa_env.engine import core, state_moves
from scopa_env.engine.core import Phase, State
from scopa_env.errors import ScopaEnvError, whole_number
from scopa_env.games.driver import play
from scopa_env.oracle.record_check import RecordFileError, check_file
from scopa_env.records.state_io import StateFormatError, state_from_record
from scopa_env.rules import Rules, get_rules
from scopa_env.rules.cards import format_card, format_cards, parse_card
from scopa_env.rules.scoring import margin_vs_mean_of_others, point_fields

__all__ = [
    "DEFAULT_WORLDS",
    "KINDS",
    "KIND_MIN_LOSS",
    "KIND_WORLDS",
    "MAX_WORLDS",
    "MatchRecorder",
    "ReviewError",
    "ReviewOptions",
    "agent_seats",
    "decision_line",
    "format_review",
    "loss_report",
    "main",
    "plot_review",
    "progress_bar",
    "read_records",
    "review_record",
    "review_records",
    "self_play_records",
]

DEFAULT_WORLDS = 256
"""Sampled deals a decision starts with by default; an unsettled verdict doubles them (``SETTLE_Z``). Together they
make a review's verdict (the best move, a mistake or not) the same for another seed on about 95% of decisions or more
(``bench/review_accuracy.py``; the measured numbers are in docs/review.md)."""
MAX_WORLDS = 20_000
"""The most sampled deals per decision (memory grows with worlds times legal moves)."""
KINDS = {
    "carte": "cards",
    "denari": "coins",
    "settebello": "settebello",
    "primiera": "primiera",
    "scope": "scopa",
    "napoli": "napoli",
    "grande": "grande",
    "knocks": "knocks",
}
"""The kind of a loss by scoring category (``scoring.point_fields``): most cards, most coins, the settebello, the
primiera (the sevens), a scopa (sweep) made or conceded; cirulla's napoli, grande and knocks."""
KIND_WORLDS = 64
"""The sampled deals (the first of a decision's) over which a loss is split into its kinds: the parts add up to the
loss measured on those deals, within the noise of the loss on all of them."""
KIND_MIN_LOSS = 0.01
"""Losses smaller than this are not split into kinds (they are noise more than a kind of loss)."""
_TIE = 1e-9
"""Values this close are equal: the played move counts as best when it ties with the best."""


class ReviewError(ScopaError, ValueError):
    """A record that cannot be reviewed (damaged, foreign, unfinished mid-move) or a review option that does not fit
    it; the message says what and how to fix it."""


# --------------------------------------------------------------------------------------------------- values


@dataclass
class _Pending:
    """A decision whose loss is still to be split over the scoring categories (``_split_losses``)."""

    decision: dict[str, Any]
    values: MoveValues
    best: int
    played: int
    side: int


def _split_losses(rules: Rules, pending: Sequence[_Pending]) -> None:
    """Fill in each pending decision's ``kinds`` (its loss split over the scoring categories, ``KINDS``'s names) and
    ``kind`` (the largest part): over the decision's own worlds, each category's mean margin after the best move
    minus after the played one. The decisions of a hand are played out together (rolled out or solved)."""
    fields = point_fields(rules)[:-1]  # the total last
    for solved in (False, True):
        group = [p for p in pending if (p.values.method != "rollouts") == solved]
        if not group:
            continue
        starts = [
            (p.values.worlds.take(np.arange(min(KIND_WORLDS, p.values.worlds.batch_size))), *p.values.moves[j])
            for p in group
            for j in (p.best, p.played)
        ]
        points = play_out(rules, starts, solved)
        for i, p in enumerate(group):
            means = [
                np.mean([margin_vs_mean_of_others(pts[:, :, f])[:, p.side] for f in range(len(fields))], axis=1)
                for pts in points[2 * i : 2 * i + 2]
            ]
            kinds = {KINDS.get(f, f): float(means[0][k] - means[1][k]) for k, f in enumerate(fields)}
            p.decision["kinds"] = kinds
            top = max(kinds, key=lambda k: kinds[k])
            p.decision["kind"] = top if kinds[top] > 0 else None


def _mark(loss: float) -> str | None:
    for name, threshold in MARKS:
        if loss >= threshold:
            return name
    return None


# --------------------------------------------------------------------------------------------------- a record


def _bad_record(problem: str) -> ReviewError:
    return ReviewError(f"not a game record this program can review: {problem}")


def _positions(rules: Rules, record: Mapping[str, Any]) -> Iterator[tuple[int, int, State, Mapping[str, Any]]]:
    """``(hand, move index in the hand, position before the move, the move)`` for every move of a record the core has
    replayed whole (``state_from_record``); cirulla's knocks are taken from the hand's ``knocks``."""
    state = core.reset(rules, np.array([int(record["seed"])], dtype=np.uint64))
    for h, hand in enumerate(record["hands"]):
        knocks = list(hand.get("knocks") or [])
        for m, move in enumerate(hand["moves"]):
            while state.phase[0] == Phase.KNOCK:
                seat, deal = int(state.current[0]), int(state.deal_no[0])
                action = core.stop_action(rules)
                if knocks and knocks[0]["seat"] == seat and knocks[0]["deal"] == deal:
                    action = rules.num_cards + {"sum": 1, "tris": 2}[knocks.pop(0)["kind"]]
                core.step(rules, state, np.array([action], dtype=np.int64))
            yield h, m, state.take([0]), move
            card = parse_card(move["card"], rules.deck)
            cap = np.zeros((1, rules.num_cards), dtype=np.bool_)
            cap[0, [parse_card(c, rules.deck) for c in move["capture"]]] = True
            while not core.step(rules, state, state_moves.move_actions(state, [card], cap)).move_done[0]:
                pass


def review_record(
    game: Mapping[str, Any],
    *,
    seats: Sequence[int] | None = None,
    worlds: int | None = None,
    open_hands: bool = False,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
    index: int = 0,
    hands: Sequence[int] | None = None,
) -> dict[str, Any]:
    """Review one game record (one line of a records file, RULES.md section 8): every move of ``seats`` (None: all)
    valued, marked and summed up per seat. ``worlds``: sampled deals per decision (None: ``DEFAULT_WORLDS``);
    ``open_hands``: hindsight (every card known); ``seed`` fixes the sampled deals (decision by decision: a move's
    values do not depend on which others are reviewed); ``progress(done, total)`` is called after each decision;
    ``index`` is the game's number in its file (the decisions' ``game``); ``hands`` the hands to review, from 0
    (None: all). Returns the JSON-ready review (docs/review.md describes it). Raises ``ReviewError`` for a record that
    does not replay."""
    return _review([(index, game)], seats, worlds, open_hands, seed, progress, hands)


def review_records(
    games: Sequence[tuple[int, Mapping[str, Any]]],
    *,
    seats: Sequence[int] | Callable[[Mapping[str, Any]], Sequence[int]] | None = None,
    worlds: int | None = None,
    open_hands: bool = False,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """``review_record`` of several games ``(number, record)`` of one variant, summed up together; ``seats`` may be a
    function of the record (``agent_seats``: the seats an agent played)."""
    return _review(games, seats, worlds, open_hands, seed, progress)


def _check_record(game: Any) -> Rules:
    if not isinstance(game, Mapping):
        raise _bad_record(f"a record is a JSON object, got {type(game).__name__}")
    try:
        state_from_record(game)  # every move replayed and checked by the core
    except StateFormatError as e:
        raise _bad_record(str(e)) from None
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, OverflowError) as e:
        raise _bad_record(f"malformed ({type(e).__name__}: {e})") from None
    return get_rules(game["variant"])


def _review(
    games: Sequence[tuple[int, Mapping[str, Any]]],
    seats: Sequence[int] | Callable[[Mapping[str, Any]], Sequence[int]] | None,
    worlds: int | None,
    open_hands: bool,
    seed: int,
    progress: Callable[[int, int], None] | None,
    hands: Sequence[int] | None = None,
) -> dict[str, Any]:
    worlds = DEFAULT_WORLDS if worlds is None else worlds
    if not whole_number(worlds, 1, MAX_WORLDS):
        raise ReviewError(f"worlds must be a whole number from 1 to {MAX_WORLDS} (sampled deals per decision)")
    if not whole_number(seed, 0, MAX_SEED):
        raise ReviewError(f"seed must be a whole number from 0 to 2**64-1, got {seed!r}")
    rules_seen: Rules | None = None
    todo: list[tuple[int, Mapping[str, Any], Rules, set[int]]] = []
    for number, game in games:
        rules = _check_record(game)
        if rules_seen is not None and rules != rules_seen:
            raise ReviewError(f"game {number} is {rules.name}, the earlier ones {rules_seen.name}: review one variant")
        rules_seen = rules
        chosen = seats(game) if callable(seats) else seats
        wanted = set(range(rules.num_players)) if chosen is None else {int(s) for s in chosen}
        bad = sorted(s for s in wanted if not 0 <= s < rules.num_players)
        if bad:
            raise ReviewError(f"seat {bad[0]}: {rules.name} has seats 0..{rules.num_players - 1}")
        todo.append((number, game, rules, wanted))
    keep = None if hands is None else set(hands)
    total = sum(
        sum(
            1
            for h, hand in enumerate(g["hands"])
            for mv in hand["moves"]
            if mv["seat"] in w and (keep is None or h in keep)
        )
        for _, g, _, w in todo
    )
    decisions: list[dict[str, Any]] = []
    for number, game, rules, wanted in todo:
        pending: list[_Pending] = []
        for h, m, state, move in _positions(rules, game):
            if pending and m == 0:  # a new hand: split the last hand's losses
                _split_losses(rules, pending)
                pending = []
            if move["seat"] not in wanted or (keep is not None and h not in keep):
                continue
            rng = np.random.default_rng([seed, int(game["seed"]), h, m])
            decision, todo_split = _decision(rules, state, move, rng, worlds, open_hands, number, h, m)
            decisions.append(decision)
            if todo_split is not None:
                pending.append(todo_split)
            if progress is not None:
                progress(len(decisions), total)
        _split_losses(rules, pending)
    variant = rules_seen.name if rules_seen is not None else None
    return {
        "mode": "open" if open_hands else "honest",
        "variant": variant,
        "worlds": int(worlds),
        "seed": int(seed),
        "thresholds": {name: value for name, value in MARKS},
        "decisions": decisions,
        "summary": _summary(decisions),
    }


def _decision(
    rules: Rules,
    state: State,
    move: Mapping[str, Any],
    rng: np.random.Generator,
    worlds: int,
    open_hands: bool,
    game: int,
    hand: int,
    ply: int,
) -> tuple[dict[str, Any], _Pending | None]:
    """One decision reviewed; with the ``_Pending`` split of its loss when the played move is not the best."""
    card = parse_card(move["card"], rules.deck)
    capture = frozenset(parse_card(c, rules.deck) for c in move["capture"])
    played = state_moves.legal_moves(rules, state, 0).index((card, capture))
    mv = settled_values(rules, state, played, worlds, rng, open_hands)
    value, se = mv.value, mv.se
    best = int(np.argmax(value))
    if value[played] >= value[best] - _TIE:
        best = played
    loss = max(0.0, float(value[best] - value[played]))
    diff = mv.margins[:, best] - mv.margins[:, played]
    loss_se = float(diff.std(ddof=1) / math.sqrt(diff.size)) if diff.size > 1 else 0.0
    decision = {
        "game": game,
        "hand": hand,
        "seat": int(move["seat"]),
        "ply": ply,
        "cards_left": int(state.hands[0].sum()) + rules.num_cards - int(state.stock_pos[0]),
        "played": move_text(rules, card, capture),
        "best": move_text(rules, *mv.moves[best]),
        "loss": loss,
        "loss_se": loss_se,
        "mark": _mark(loss),
        "exact": mv.method == "exact",
        "method": mv.method,
        "worlds": int(mv.margins.shape[0]),
        "forced": len(mv.moves) == 1,
        "kind": None,
        "kinds": {},
        "moves": [
            {
                "move": move_text(rules, c, cap),
                "card": format_card(c, rules.deck),
                "capture": format_cards(sorted(cap), rules.deck),
                "value": float(value[j]),
                "se": float(se[j]),
            }
            for j, (c, cap) in enumerate(mv.moves)
        ],
    }
    if best == played or loss < KIND_MIN_LOSS:
        return decision, None
    return decision, _Pending(decision, mv, best, played, rules.seat_side[int(move["seat"])])


def _summary(decisions: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Per seat: decisions (forced moves left out), points lost per decision and per hand, the three costliest moves,
    the loss by kind (points over all the seat's reviewed decisions; they add up to its total loss) and the marks."""
    out: dict[str, Any] = {}
    for seat in sorted({int(d["seat"]) for d in decisions}):
        mine = [d for d in decisions if d["seat"] == seat]
        chosen = [d for d in mine if not d["forced"]]
        lost = float(sum(d["loss"] for d in mine))
        hands = len({(d["game"], d["hand"]) for d in mine})
        by_kind: dict[str, float] = {}
        for d in mine:
            for k, v in d["kinds"].items():
                by_kind[k] = by_kind.get(k, 0.0) + v
        out[str(seat)] = {
            "decisions": len(chosen),
            "hands": hands,
            "loss": lost,
            "loss_per_decision": lost / len(chosen) if chosen else 0.0,
            "loss_per_hand": lost / hands if hands else 0.0,
            "costliest": sorted(mine, key=lambda d: -d["loss"])[:3],
            "by_kind": dict(sorted(by_kind.items(), key=lambda kv: -kv[1])),
            "marks": {name: sum(1 for d in mine if d["mark"] == name) for name, _ in MARKS},
        }
    return out


# --------------------------------------------------------------------------------------------------- files


def self_play_records(rules: Rules, spec: str, hands: int, seed: int) -> list[dict[str, Any]]:
    """Records of ``hands`` one-hand games (deal seeds ``seed, seed + 1, ...``) with the agent ``spec`` (seeded by
    ``seed``) in every seat: games to review in the tests and the benchmarks."""
    agent = make_agent(spec, rules, seed=seed)
    seeds = np.arange(seed, seed + hands, dtype=np.uint64)
    res = play(rules, [agent], np.zeros((hands, rules.num_players), dtype=np.int64), seeds, mode="hands", record=True)
    assert res.records is not None
    return list(res.records)


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """Every record of a ``.jsonl`` records file, checked first by the project's record checker (``record_check.
    check_file``: each line replayed on the reference engine; unfinished games, like a tournament's one-hand games,
    accepted). ``ReviewError`` with the line and the reason for a file that is not one, or holds a damaged record."""
    try:
        n, reason = check_file(path, allow_unfinished=True)
    except RecordFileError as e:
        raise ReviewError(str(e)) from None
    if reason is not None:
        where = f"{path}:{n}" if n else str(path)
        raise ReviewError(f"{where}: {reason}")
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _parse_games(text: str) -> list[int]:
    """``--games``: game numbers from 0 and ranges, ``0``, ``0-9``, ``2,5,7-8``."""
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.strip().partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()) or (hi and int(hi) < int(lo)) or len(part) > 40:
            raise argparse.ArgumentTypeError(
                f"expected game numbers from 0 and ranges such as 0, 0-9 or 2,5,7-8, got {text[:40]!r}"
            )
        out.extend(range(int(lo), int(hi or lo) + 1))
    return sorted(set(out))


def _games_text(text: str) -> str:
    """``--games`` checked as argparse reads it (``_parse_games``), kept as text."""
    _parse_games(text)
    return text


def agent_seats(record: Mapping[str, Any], label: str) -> list[int]:
    """The seats ``label`` played in a tournament's record (``evaluate.py --records``: ``agents`` names each side's
    agent, ``"A + P"`` for an agent with a ``--partner``, who then sits in one seat of its side: the rotation's,
    ``schedule.game_plan``'s order). Empty when the agent did not play the game."""
    rules = get_rules(record["variant"])
    labels = record.get("agents")
    if not isinstance(labels, list) or len(labels) != rules.num_sides:
        raise ReviewError("the record names no agents (a tournament's records do: evaluate.py --records FILE)")
    rotation = int(record.get("eval", {}).get("rotation", 0))
    seats: list[int] = []
    for side, name in enumerate(labels):
        members = rules.sides[side]
        if name == label:
            seats.extend(members)
        elif isinstance(name, str) and name.startswith(f"{label} + "):
            seats.append(members[rotation % len(members)])
    return sorted(seats)


class MatchRecorder:
    """The game record (RULES.md section 8: the fields a review reads) of a ``match.HumanMatch`` being played, built
    from its events: call ``note(event)`` from the match's listener. ``record`` is the match so far (the hand being
    played included), ``finished`` how many of its hands are over; ``review_last_hand`` reviews a seat's moves of the
    last finished hand (kept until another hand ends: asking again costs nothing)."""

    def __init__(self, match: HumanMatch) -> None:
        self.match = match
        self.record: dict[str, Any] | None = None
        self.finished = 0
        self._deal = 0
        self._reviewed: tuple[tuple[int, int, int], dict[str, Any]] | None = None

    def note(self, event: Event) -> None:
        """Follow one event of the match."""
        rules = self.match.rules
        if isinstance(event, HandStart):
            if event.new_match or self.record is None:
                self.record = {"variant": rules.name, "seed": self.match.seed, "hands": []}
                self.finished = 0
            self.record["hands"].append({"dealer": event.dealer, "knocks": [], "moves": []})
            self._deal = 0
            return
        if self.record is None:
            return
        hand = self.record["hands"][-1]
        if isinstance(event, Move):
            card, capture = format_card(event.card, rules.deck), format_cards(sorted(event.capture), rules.deck)
            hand["moves"].append({"seat": event.seat, "card": card, "capture": capture, "scopa": event.scopa})
        elif isinstance(event, Knock) and event.kind != "none":
            shown = format_cards(sorted(event.cards), rules.deck)
            hand["knocks"].append({"seat": event.seat, "deal": self._deal, "kind": event.kind, "cards": shown})
        elif isinstance(event, NewDeal):
            self._deal = event.deal
        elif isinstance(event, HandOver):
            self.finished += 1

    def review_last_hand(self, seat: int, worlds: int | None = None) -> dict[str, Any] | None:
        """``review_record`` of ``seat``'s moves in the last finished hand of the match; None before one ends."""
        if self.record is None or self.finished == 0:
            return None
        key = (self.match.matches, self.finished, seat)
        if self._reviewed is None or self._reviewed[0] != key:
            review = review_record(self.record, seats=[seat], worlds=worlds, hands=[self.finished - 1])
            self._reviewed = (key, review)
        return self._reviewed[1]


# --------------------------------------------------------------------------------------------------- output


def decision_line(d: Mapping[str, Any], seat_name: Callable[[int], str] | None = None, game: bool = True) -> str:
    """One decision as a line: where (``game``: its game's number too), the move played, its loss (with its standard
    error) and mark, the best move when another."""
    who = seat_name(int(d["seat"])) if seat_name is not None else f"seat {d['seat']}"
    where = f"game {d['game']} " if game else ""
    head = f"{where}hand {d['hand'] + 1} move {d['ply'] + 1:>2} {who}: {d['played']:<16}"
    if d["forced"]:
        return f"{head} (forced)"
    mark = f" {d['mark']}" if d["mark"] else ""
    note = "best" if d["played"] == d["best"] or d["loss"] < 0.005 else f"best {d['best']}"
    kind = f", {d['kind']}" if d["kind"] and d["mark"] else ""
    exact = " exact" if d["exact"] else ""
    return f"{head} {-d['loss'] + 0.0:5.2f} +- {d['loss_se']:.2f}{exact}{mark}  ({note}{kind})"


def format_review(review: Mapping[str, Any], seat_name: Callable[[int], str] | None = None, game: bool = True) -> str:
    """The review as text: a line per decision (``decision_line``), then each seat's summary."""
    if review["mode"] == "honest":
        label = f"honest (each seat's own information), {review['worlds']} or more sampled deals a decision"
    else:
        label = "open (hindsight: the real deal, every card known; one playout a move before the end game)"
    lines = [
        f"review of {review['variant']}, {label}, seed {review['seed']}",
        "values are points per hand (the mover's side minus the other's); -loss +- its standard error",
    ]
    lines += [decision_line(d, seat_name, game) for d in review["decisions"]]
    for seat, s in review["summary"].items():
        who = seat_name(int(seat)) if seat_name is not None else f"seat {seat}"
        marks = ", ".join(f"{n} {s['marks'][n]}" for n, _ in MARKS)
        lines.append(
            f"{who}: {s['decisions']} decisions, lost {s['loss_per_decision']:.3f} a decision, "
            f"{s['loss_per_hand']:.2f} a hand ({marks})"
        )
        kinds = ", ".join(f"{k} {v:.2f}" for k, v in s["by_kind"].items() if abs(v) >= 0.005)
        if kinds:
            lines.append(f"  lost by kind (points in all): {kinds}")
        for d in s["costliest"]:
            if d["loss"] > 0:
                lines.append(f"  costly: {decision_line(d, seat_name, game)}")
    return "\n".join(lines)


def plot_review(review: Mapping[str, Any], path: str | Path) -> Path:
    """PNG of the points lost at each reviewed move, one row per seat, coloured by mark, with the standard errors."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    colors = {"blunder": "#c0392b", "mistake": "#e67e22", "inaccuracy": "#f1c40f", None: "#7f8c8d"}
    seats = sorted({int(d["seat"]) for d in review["decisions"]}) or [0]
    fig, axes = plt.subplots(len(seats), 1, figsize=(9, 2.2 * len(seats) + 0.8), squeeze=False, layout="constrained")
    for ax, seat in zip(axes[:, 0], seats, strict=True):
        mine = [d for d in review["decisions"] if d["seat"] == seat]
        x = np.arange(1, len(mine) + 1)
        ax.bar(x, [d["loss"] for d in mine], color=[colors[d["mark"]] for d in mine], yerr=[d["loss_se"] for d in mine])
        for name, value in MARKS:
            ax.axhline(value, color=colors[name], lw=0.8, ls="--", label=f"{name} {value}")
        for i in range(1, len(mine)):
            if (mine[i]["game"], mine[i]["hand"]) != (mine[i - 1]["game"], mine[i - 1]["hand"]):
                ax.axvline(i + 0.5, color="k", lw=0.5)
        ax.set_ylabel(f"seat {seat}: points lost")
        ax.set_xlim(0.4, max(len(mine), 1) + 0.6)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes[-1, 0].set_xlabel("the seat's moves in order (a line between hands)")
    axes[0, 0].legend(loc="upper right", fontsize=7)
    fig.suptitle(f"{review['variant']}: points lost per move ({review['mode']} review, {review['worlds']} deals)")
    out = Path(path)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


PHASES = ((28, 40, "opening (28+ cards left)"), (13, 27, "middle (13-27)"), (7, 12, "late (7-12)"), (0, 6, "end (0-6)"))
"""The phases of a hand by the cards still to play (in the hands and the stock), for ``loss_report``."""


def _mean_interval(values: Sequence[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95% interval (normal approximation; 0 for fewer than two values)."""
    a = np.asarray(values, dtype=np.float64)
    if a.size == 0:
        return 0.0, 0.0
    half = 1.96 * a.std(ddof=1) / math.sqrt(a.size) if a.size > 1 else 0.0
    return float(a.mean()), float(half)


def loss_report(review: Mapping[str, Any]) -> dict[str, Any]:
    """Where the reviewed decisions lose points, for bot makers: per decision by phase of the hand (``PHASES``: cards
    left), and per hand by kind of loss and in all, each a mean with its 95% interval (hands are independent; a
    hand's decisions are not, so the totals and kinds are measured per hand)."""
    decisions = [d for d in review["decisions"] if not d["forced"]]
    phases = []
    for lo, hi, name in PHASES:
        losses = [d["loss"] for d in decisions if lo <= d["cards_left"] <= hi]
        mean, half = _mean_interval(losses)
        phases.append({"phase": name, "decisions": len(losses), "loss": mean, "interval": half})
    hands: dict[tuple[int, int], list[Mapping[str, Any]]] = {}
    for d in review["decisions"]:
        hands.setdefault((d["game"], d["hand"]), []).append(d)
    kinds = sorted({k for d in review["decisions"] for k in d["kinds"]})
    per_hand = {k: [sum(d["kinds"].get(k, 0.0) for d in ds) for ds in hands.values()] for k in kinds}
    total, half = _mean_interval([sum(d["loss"] for d in ds) for ds in hands.values()])
    by_kind = {k: dict(zip(("loss", "interval"), _mean_interval(v), strict=True)) for k, v in per_hand.items()}
    return {
        "hands": len(hands),
        "decisions": len(decisions),
        "loss_per_hand": total,
        "interval": half,
        "by_phase": phases,
        "by_kind": dict(sorted(by_kind.items(), key=lambda kv: -kv[1]["loss"])),
    }


def format_loss_report(report: Mapping[str, Any], who: str) -> str:
    """``loss_report`` as text."""
    lines = [
        f"{who}: {report['loss_per_hand']:.3f} +- {report['interval']:.3f} points lost a hand against the reviewer "
        f"({report['hands']} hands, {report['decisions']} decisions; 95% intervals)",
        "  by phase of the hand (points lost a decision):",
    ]
    for p in report["by_phase"]:
        lines.append(f"    {p['phase']:<26} {p['loss']:.3f} +- {p['interval']:.3f}  ({p['decisions']} decisions)")
    lines.append("  by kind (points lost a hand):")
    for k, v in report["by_kind"].items():
        lines.append(f"    {k:<26} {v['loss']:+.3f} +- {v['interval']:.3f}")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------- command line


@dataclass
class ReviewOptions:
    """The command line's options (``python -m agents.play.review --help``)."""

    record: Path = setting(doc="a .jsonl file of game records (scopa-record, evaluate.py --records)", option="record")
    games: str | None = setting(
        None,
        "the games to review, numbered from 0: 0, 0-9, 2,5,7-8 (default every game)",
        parse=_games_text,
        show_default=False,
    )
    seat: int | None = setting(None, "review this seat's moves only (default every seat)", parse=int_arg(0, 7))
    agent: str | None = setting(
        None, "review the moves of the agent labelled LABEL in a tournament's records, with a report of where it "
        "loses points (by phase of the hand and kind of loss)", metavar="LABEL",
    )  # fmt: skip
    worlds: int = setting(
        DEFAULT_WORLDS, f"sampled deals per decision, 1..{MAX_WORLDS} (more: smaller standard errors, slower)",
        parse=int_arg(1, MAX_WORLDS),
    )  # fmt: skip
    open: bool = setting(
        False, "hindsight review: value the moves with every hand and the stock known (default: honest, each seat's "
        "own information)", negatable=False, show_default=False,
    )  # fmt: skip
    seed: int = setting(0, "seed of the sampled deals, 0..2**64-1", parse=int_arg(0, MAX_SEED))
    json: Path | None = setting(None, "write the review as JSON to FILE", metavar="FILE")
    plot: Path | None = setting(None, "draw the points lost per move to FILE (PNG)", metavar="FILE")
    progress: bool = setting(True, "a progress bar with its ETA on stderr while reviewing")
    quiet: bool = setting(False, "print the summary only, not a line per move", negatable=False, show_default=False)


def progress_bar(enabled: bool) -> tuple[Callable[[int, int], None], Callable[[], None]]:
    """A tqdm progress bar with its ETA on stderr (``enabled``; else nothing), as a ``progress(done, total)`` for
    ``review_record``, and its closer."""
    if not enabled:
        return (lambda done, total: None), (lambda: None)
    from tqdm import tqdm

    holder: list[Any] = []

    def update(done: int, total: int) -> None:
        if not holder:
            holder.append(tqdm(total=total, desc="reviewing", unit="move", file=sys.stderr, dynamic_ncols=True))
        holder[0].update(done - holder[0].n)

    return update, (lambda: holder[0].close() if holder else None)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; 0 done, 2 bad input (one line saying what and how to fix it), 130 on Ctrl-C."""
    p = argparse.ArgumentParser(
        prog="python -m agents.play.review",
        description="Review recorded games: every move valued in points per hand from the mover's own information "
        "(or in hindsight with --open), the mistakes marked, the better move shown. docs/review.md explains the "
        "numbers.",
        epilog=f"Marks: blunder from {BLUNDER} points lost, mistake from {MISTAKE}, inaccuracy from {INACCURACY}. "
        "Exit status: 0 done, 2 bad input, 130 interrupted.",
    )
    add_field_options(p, ReviewOptions, typed=True, once=False)
    opts = parse_options(p, ReviewOptions, argv)
    if opts.agent is not None and opts.seat is not None:
        p.error("--agent reviews the seats the agent played; drop --seat (or --agent)")
    for flag, path in (("--json", opts.json), ("--plot", opts.plot)):
        if path is not None and (path.is_dir() or not path.parent.is_dir()):
            p.error(f"{flag} {path}: give a file path in an existing folder")
    update, close = progress_bar(opts.progress)
    try:
        compiled.jit()  # compiled (the first run after an install, with its progress lines) or loaded before the bar
        records = read_records(opts.record)
        chosen = _parse_games(opts.games) if opts.games is not None else list(range(len(records)))
        if chosen and chosen[-1] >= len(records):
            raise ReviewError(f"--games: {opts.record} holds {len(records)} games, numbered 0..{len(records) - 1}")
        games = [(i, records[i]) for i in chosen]
        seats: Sequence[int] | Callable[[Mapping[str, Any]], Sequence[int]] | None = None
        if opts.agent is not None:
            label = opts.agent
            seats = lambda rec: agent_seats(rec, label)  # noqa: E731
            if not any(seats(rec) for _, rec in games):
                names = sorted({n for _, rec in games for n in rec.get("agents") or []})
                raise ReviewError(f"--agent {label!r} played none of these games; the records name {names}")
        elif opts.seat is not None:
            seats = [opts.seat]
        review = review_records(games, seats=seats, worlds=opts.worlds, open_hands=opts.open, seed=opts.seed,
                                progress=update)  # fmt: skip
    except (ReviewError, ScopaEnvError) as e:
        close()
        print(f"{p.prog}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        close()
        print(f"{p.prog}: interrupted; nothing written", file=sys.stderr)
        return 130
    close()
    text = format_review(review)
    if opts.quiet:
        text = "\n".join(line for line in text.splitlines() if not line.startswith("game "))
    print(text)
    if opts.agent is not None:
        report = loss_report(review)
        review["report"] = report
        print(format_loss_report(report, opts.agent))
    if opts.json is not None:
        with atomic_open(opts.json, "w") as f:
            json.dump(review, f, indent=1)
        print(f"wrote {opts.json}")
    if opts.plot is not None:
        print(f"wrote {plot_review(review, opts.plot)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
