"""Play Scopa in the terminal against any agent: ``python -m agents.play [--variant classic] [--opponent SPEC]``.

The human sits at seat 0 (``--seat``); every other seat is played by the opponent spec (in team variants the
human's partner too, unless ``--partner SPEC`` is given). The opponent defaults to the shipped bot of the variant
(``agents/bots/<variant>/``) when there is one, else ``expert``, ``greedy`` or ``random``, whichever loads first.

At the ``your move>`` prompt type a card in notation (``7d``, ``qs``; rank then suit, the suit letter
case-insensitive). The suit may also be given as the picture shows it: the symbol itself (``7♦``), ``h`` for the
hearts that stand for cups, and ``c`` for the clubs that stand for bastoni when you hold no cup of that rank (``c``
is cups, coppe, in the project's notation, and stays so: ``b`` is bastoni). Any line is safe to type: what is
not a move gets a message and the prompt again. When the card can capture in several ways a numbered list of every
legal capture is shown; type its number (or its cards). ``7d 3s 4c`` plays ``7d`` and names the capture at once.
Commands: ``hint`` (the opponent agent's advice for your position, with probabilities when the agent has them),
``review`` (after a hand: your moves in it valued, ``agents.play.review``), ``score``, ``history``, ``table``,
``help``, ``quit``. Bad input re-prompts; end of input (Ctrl-D) leaves cleanly.
A finished match offers a rematch. Each launch deals a fresh match and says its seed; ``--seed N`` deals it again.

Cirulla (``--variant cirulla``, ``cirulla-3``, ``cirulla-4``; default opponent ``expert``): when your three cards
allow a knock you are asked first (``knock> ``: ``0`` no knock, ``1`` knock for 3 by sum, ``2`` knock for 10 with
three of a kind, only the legal ones listed); every legal capture (equal rank, sum, fifteen, ace takes all) is in
the numbered list, also one that is contained in a larger one. The picture shows knocked hands, knock points and
an initial table taken by the dealer.

The match itself (the turns, the bots, the moves carried out, the rematch's seeds) is
``agents.play.match.HumanMatch``, which the browser game shares; ``Match`` is its terminal face: it reads the human's
decisions at the prompts and words the match's events. All reading goes through ``Terminal``, which takes any text
streams, so tests drive whole matches with scripted input::

    run(PlayConfig(variant="classic", opponent="greedy", seed=3), io.StringIO("7d\\n..."), io.StringIO())
"""

from __future__ import annotations

import argparse
import itertools
import re
import secrets
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TextIO

import numpy as np
import numpy.typing as npt

from agents.base import make_agent
from agents.cli.numbers import int_arg
from agents.cli.settings import MAX_SEED, add_field_options, parse_options, setting
from agents.errors import ScopaError
from agents.nets.bot import SHIPPED_BOTS, shipped_bot_spec
from agents.play.card_words import (
    FAMILY_HELP,
    FIELD_NAMES,
    HELP_TEXT,
    card_readings,
    quoted,
    rank_names,
    seat_names,
    short_name,
)
from agents.play.hints import MoveProb
from agents.play.match import (
    KNOCK_CHOICES,
    BotFallback,
    Event,
    HandOver,
    HandStart,
    HumanMatch,
    Knock,
    MatchOver,
    Move,
    NewDeal,
)
from agents.play.review import MatchRecorder, format_review
from scopa_env.engine import core
from scopa_env.engine.render import pretty_card, pretty_cards, render_text
from scopa_env.rules import Rules, get_rules, variant_names
from scopa_env.rules.cards import format_card
from scopa_env.rules.scoring import point_fields

if TYPE_CHECKING:
    from scopa_env.games.policy import Policy

__all__ = [
    "DEFAULT_FALLBACKS",
    "EndOfInput",
    "PlayConfig",
    "PlayError",
    "Session",
    "Terminal",
    "default_opponent",
    "main",
    "prepare",
    "run",
]

DEFAULT_FALLBACKS = ("expert", "greedy", "random")
"""Opponent specs tried in order when the variant has no shipped bot."""
HINT_SEED = 12345
"""Seed of the separate agent instance that gives hints (so hints never change the opponents' random draws)."""
MAX_LINE = 200
"""Longest input line read as a move or command; longer ones are refused with a message."""


_KNOCK_TEXT = ("no knock", "knock for 3 (sum: cards worth 9 or less)", "knock for 10 (three of a kind)")
"""The knock prompt's choices, in ``KNOCK_CHOICES`` order (``none``, ``sum``, ``tris``)."""
_KIND_NOTES = {"fifteen": " -- fifteen", "ace-takes-all": " -- ace takes all"}
"""What a move's line adds for its kind (``capture_kind``)."""


class EndOfInput(Exception):
    """The input stream ended (Ctrl-D or the end of a script): the game stops cleanly."""


class QuitGame(Exception):
    """The player typed ``quit``."""


# --------------------------------------------------------------------------------------------------- input / output


class Terminal:
    """Line-based input and output on any text streams; every prompt goes through ``ask``."""

    def __init__(self, inp: TextIO, out: TextIO, color: bool = False) -> None:
        self.inp = inp
        self.out = out
        self.color = color

    def say(self, text: str = "") -> None:
        """Print a line (or several)."""
        print(text, file=self.out)

    def ask(self, prompt: str) -> str:
        """Show ``prompt`` and read one line (without its newline). Raises ``EndOfInput`` at the end of input."""
        self.out.write(prompt)
        self.out.flush()
        try:
            line = self.inp.readline()
        except UnicodeDecodeError:  # bytes that are not text: an empty answer, which every prompt re-asks
            self.out.write("(that line was not text)\n")
            return ""
        if not line:
            self.out.write("\n")
            raise EndOfInput
        text = line.rstrip("\r\n")
        if not self.inp.isatty():  # a terminal echoes what is typed; echo scripted input into the transcript
            shown = text if len(text) <= MAX_LINE else f"{text[:MAX_LINE]}... ({len(text):,} characters)"
            self.out.write(shown + "\n")
        return text

    def ask_yes_no(self, prompt: str) -> bool:
        """Ask until the answer is yes or no."""
        while True:
            answer = self.ask(prompt).strip().lower()
            if answer in ("y", "yes"):
                return True
            if answer in ("n", "no"):
                return False
            self.say("  please answer y (yes) or n (no)")


# --------------------------------------------------------------------------------------------------- agents


def default_opponent(rules: Rules) -> tuple[str, list[str]]:
    """The default opponent spec for ``rules`` and notes on the candidates that could not be loaded."""
    notes: list[str] = []
    shipped = shipped_bot_spec(rules, SHIPPED_BOTS)
    candidates = list(DEFAULT_FALLBACKS)
    if shipped is not None:
        candidates.insert(0, shipped)
    else:
        notes.append(f"no shipped bot for {rules.name!r} (looked in {SHIPPED_BOTS}); using a rule-based opponent")
    for spec in candidates:
        try:
            make_agent(spec, rules, 0)
        except (ImportError, ValueError) as e:
            notes.append(f"opponent {spec!r} is not available ({e}); trying the next one")
            continue
        return spec, notes
    raise RuntimeError(f"no opponent could be loaded for {rules.name!r}: " + "; ".join(notes))


# --------------------------------------------------------------------------------------------------- the game


@dataclass
class PlayConfig:
    """Options of one terminal session: the command line's flags (``agents.cli.settings``: each field's doc is its
    help).

    ``opponent`` None: the shipped bot of the variant, else expert / greedy / random; ``partner`` None: the opponent
    spec; ``seed`` None: a fresh one, said at the start (rematches use the next seeds of its chain); ``color``
    ``auto``: on a terminal only (``True`` / ``False`` also work from Python)."""

    variant: str = setting("classic", f"variant ({', '.join(variant_names())})", show_default=False)
    opponent: str | None = setting(
        None,
        "agent spec for the other seats: random, greedy, expert, pimc:worlds=12, a checkpoint .zip, an export "
        "directory or bot:path=DIR (default: the shipped bot of the variant, else expert)",
    )
    partner: str | None = setting(None, "agent spec for your teammates (team variants only; default: --opponent)")
    seat: int = setting(0, "your seat, 0..players-1 (default 0)", parse=int_arg(0), show_default=False)
    seed: int | None = setting(
        None,
        "seed of the first match, 0..2**64-1, to replay one (default: a fresh deal each launch; the game says its "
        "seed)",
        parse=int_arg(0, MAX_SEED),
    )
    color: str | bool = setting(
        "auto", "colour red suits (default: on a terminal)", choices=("auto", "always", "never"), show_default=False
    )

    def colors(self, out: TextIO) -> bool:
        """Whether to colour red suits on ``out``: ``always`` (or True), or ``auto`` on a terminal."""
        return self.color is True or self.color == "always" or (self.color == "auto" and out.isatty())


class Match:
    """One match between the human and the agents (``agents.play.match.HumanMatch``), worded through a ``Terminal``:
    the prompts read the human's decisions, the match's events become lines."""

    def __init__(
        self,
        rules: Rules,
        term: Terminal,
        human: int,
        seat_agents: dict[int, Policy],
        hint_agent: Policy | None,
        seed: int,
        names: Sequence[str] | None = None,
        hint_name: str | None = None,
    ) -> None:
        """``names``: every seat's name (``seat_names``; default: ``you`` and the agents' ``short_name``);
        ``hint_name``: the hint agent's (default: its ``short_name``)."""
        self.rules = rules
        self.term = term
        self.human = human
        self.seat_agents = seat_agents
        self.hint_agent = hint_agent
        self.match = HumanMatch(rules, human, seat_agents, seed, listener=self._report)
        self.deck = rules.deck
        self.hand_log: list[str] = []
        self.recorder = MatchRecorder(self.match)
        """The match's record, for ``review`` (``agents.play.review``)."""
        self.past_hands: list[str] = []
        self.human_side = rules.seat_side[human]
        self.names = (
            list(names)
            if names is not None
            else seat_names(rules, human, {s: short_name(a.name, rules) for s, a in seat_agents.items()})
        )
        if hint_name is None:
            hint_name = short_name(hint_agent.name, rules) if hint_agent is not None else "no agent"
        self.hint_name = hint_name

    @property
    def state(self) -> core.State:
        """The match's game (``HumanMatch.state``); a test may set up a position by replacing it."""
        return self.match.state

    @state.setter
    def state(self, state: core.State) -> None:
        self.match.state = state

    def rematch(self) -> None:
        """The next match of the seed chain (``HumanMatch.rematch``), with a fresh log."""
        self.match.rematch()
        self.hand_log = []
        self.past_hands = []

    # ------------------------------------------------------------------ naming

    def seat_name(self, seat: int) -> str:
        """``you``, or the seat's agent by its short name (``names``)."""
        return self.names[seat]

    def side_name(self, side: int) -> str:
        """A side by its seats' names: ``you``, ``Bot``, ``you + Bot 2``, ``Bot 1 + Bot 3``."""
        return " + ".join(self.names[s] for s in self.rules.sides[side])

    def pc(self, cards: Sequence[int] | npt.NDArray[np.bool_] | frozenset[int]) -> str:
        """Pretty cards (suit symbols) with their typing notation."""
        ids = sorted(cards) if isinstance(cards, frozenset) else cards
        arr = np.asarray(list(ids) if not isinstance(ids, np.ndarray) else ids)
        if arr.size == 0 or (arr.dtype == np.bool_ and not arr.any()):
            return "-"
        return pretty_cards(arr, self.deck, self.term.color)

    def notation(self, cards: Sequence[int] | npt.NDArray[np.bool_] | frozenset[int]) -> str:
        """Cards in typing notation (``7d``), in rank order like the picture; ``-`` when there are none."""
        arr = np.asarray(sorted(cards) if isinstance(cards, frozenset) else cards)
        ids = np.flatnonzero(arr) if arr.dtype == np.bool_ else arr.ravel()
        r = self.deck.num_ranks
        ordered = sorted((int(c) for c in ids), key=lambda c: (c % r, c // r))
        return " ".join(format_card(c, self.deck) for c in ordered) or "-"

    # ------------------------------------------------------------------ pictures

    def show_table(self) -> None:
        t = self.term
        t.say("")
        t.say(render_text(self.rules, self.state, 0, seat=self.human, color=t.color, names=self.names))
        hand = self.state.hands[0, self.human]
        t.say(f"your cards: {self.notation(hand)}")

    def show_score(self) -> None:
        st, deck, t = self.state, self.deck, self.term
        t.say(f"scores (to {self.rules.target}):")
        seven = deck.ranks.index("7")
        for s in range(self.rules.num_sides):
            pile = st.piles[0, s]
            sevens = int(pile.reshape(4, deck.num_ranks)[:, seven].sum())
            sb = "yes" if pile[deck.settebello] else "no"
            t.say(
                f"  {self.side_name(s):<24} {int(st.scores[0, s]):>3} points   this hand: {int(pile.sum())} cards, "
                f"{int(pile[: deck.num_ranks].sum())} coins, settebello {sb}, {sevens} sevens, "
                f"{int(st.scope[0, s])} scope"
                + (f", {int(st.knock_points[0, s])} knock points" if self.rules.knocks else "")
            )
        t.say(f"  stock: {self.rules.num_cards - int(st.stock_pos[0])} cards")

    def show_history(self) -> None:
        t = self.term
        if not self.past_hands and not self.hand_log:
            t.say("no moves yet")
        for line in self.past_hands:
            t.say(line)
        t.say(f"hand {int(self.state.hand_no[0]) + 1}:")
        for line in self.hand_log or ["  (no moves yet)"]:
            t.say(line)

    def show_help(self) -> None:
        self.term.say(HELP_TEXT.format(ranks=self.deck.ranks, values=rank_names(self.deck), hint=self.hint_name))
        for text in FAMILY_HELP.get(self.match.family, ()):
            self.term.say(text)

    # ------------------------------------------------------------------ hints

    def show_hint(self) -> None:
        t, agent = self.term, self.hint_agent
        if agent is None:
            t.say("no hint agent")
            return
        try:
            advice = self.match.advice(agent)
            if advice.probs is not None:
                self._hint_probs(self.hint_name, advice.probs)
            elif advice.move is not None:
                t.say(f"hint: {self.hint_name} would play {self.describe_move(*advice.move)}")
            else:
                text = _KNOCK_TEXT[KNOCK_CHOICES.index(advice.knock)]  # type: ignore[arg-type]
                t.say(f"hint: {self.hint_name} would choose: {text}")
        except Exception as e:  # a hint must never end the game
            t.say(f"hint unavailable: {self.hint_name} failed ({type(e).__name__}: {e})")

    def show_review(self) -> None:
        """Your moves of the last finished hand reviewed (``agents.play.review``), a line per move."""
        t = self.term
        if self.recorder.finished == 0:
            t.say("no finished hand to review yet: 'review' looks at your moves of the last hand played")
            return
        t.say("reviewing your moves of the last hand ...")
        try:
            review = self.recorder.review_last_hand(self.human)
        except Exception as e:  # a review must never end the game
            t.say(f"review unavailable ({type(e).__name__}: {e})")
            return
        if review is not None:
            t.say(format_review(review, self.seat_name, game=False))

    def _hint_probs(self, name: str, moves: list[MoveProb]) -> None:
        by_card: dict[int, list[MoveProb]] = {}
        for m in moves:
            by_card.setdefault(m.card, []).append(m)
        order = sorted(by_card, key=lambda c: -sum(m.prob for m in by_card[c]))
        self.term.say(f"hint from {name} (its probabilities for your position):")
        for card in order:
            options = sorted(by_card[card], key=lambda m: -m.prob)
            p_card = sum(m.prob for m in options)
            line = f"  {format_card(card, self.deck):>3} {100 * p_card:5.1f}%  "
            if len(options) == 1:
                cap = options[0].capture
                line += f"takes {self.notation(cap)}" if cap else "laid on the table"
            else:
                parts = [
                    f"takes {self.notation(m.capture)} ({100 * m.prob / p_card if p_card > 0 else 0:.1f}% of it)"
                    for m in options
                ]
                line += ", ".join(parts)
            self.term.say(line)
        best = max(moves, key=lambda m: m.prob)
        self.term.say(f"suggested: {self.describe_move(best.card, best.capture)}")

    # ------------------------------------------------------------------ moves

    def describe_move(self, card: int, capture: frozenset[int], kind: str | None = None) -> str:
        """A move in words; ``kind`` (``capture_kind``): of the move played, None: of the move on the table now."""
        text = f"{pretty_card(card, self.deck, self.term.color)} ({format_card(card, self.deck)})"
        if capture:
            return f"{text} taking {self.pc(capture)} ({self.notation(capture)}){self.kind_note(card, capture, kind)}"
        return f"{text}, laid on the table"

    def kind_note(self, card: int, capture: frozenset[int], kind: str | None = None) -> str:
        """`` -- fifteen`` or `` -- ace takes all`` after a capture of those kinds; else ``''``."""
        return _KIND_NOTES.get(kind or self.match.capture_kind(card, capture), "")

    def _report(self, event: Event) -> None:
        """Word one event of the match: a knock, a move, a new deal, the end of a hand or of the match, a new hand."""
        t = self.term
        self.recorder.note(event)
        if isinstance(event, Knock):
            if event.kind != "none":
                verb = "you knock" if event.seat == self.human else f"{self.seat_name(event.seat)} knocks"
                line = f"{verb} for {event.points} ({event.kind}): {self.pc(event.cards)}"
                self.hand_log.append("  " + line)
                t.say(line)
        elif isinstance(event, Move):
            line = f"{self.seat_name(event.seat)}: {self.describe_move(event.card, event.capture, event.kind)}"
            if event.scopa:
                line += "  -- SCOPA!"
            self.hand_log.append("  " + line)
            t.say(line)
        elif isinstance(event, NewDeal):
            t.say(
                f"-- new deal {event.deal + 1}/{self.rules.num_deals}: {event.cards_each} "
                f"cards each, {event.stock_left} left in the stock --"
            )
        elif isinstance(event, HandOver):
            self._show_hand_points(event)
        elif isinstance(event, MatchOver):
            t.say("")
            t.say("=" * 60)
            verdict = "you win" if event.winner == self.human_side else f"{self.side_name(event.winner)} wins"
            t.say(f"match over: {verdict}!  final scores: {self._scores_text(event.scores)}")
            t.say("=" * 60)
        elif isinstance(event, HandStart):
            if not event.new_match:
                t.say("")
            self.announce_hand(event)
        elif isinstance(event, BotFallback):
            t.say(
                f"warning: {event.agent} chose the illegal action {event.action}; it plays "
                f"{format_card(event.played, self.deck)} instead (please report this agent bug)"
            )

    def announce_hand(self, event: HandStart) -> None:
        """The start of a hand: who deals and plays first; cirulla: an initial table taken by the dealer's side."""
        t = self.term
        deals = "you deal" if event.dealer == self.human else f"{self.seat_name(event.dealer)} deals"
        t.say(f"--- hand {event.hand}: {deals}; {self.seat_name(event.first)} to play first ---")
        if event.table_take:
            scope = event.table_take
            line = (
                f"the first table {self.pc(event.taken)} adds up to {15 * scope}: "
                f"{self.side_name(event.side)} take{'' if event.dealer == self.human else 's'} it "
                f"with {scope} scop{'a' if scope == 1 else 'e'}"
            )
            self.hand_log.append("  " + line)
            t.say(line)

    def _scores_text(self, scores: npt.NDArray[np.integer]) -> str:
        return ", ".join(f"{self.side_name(s)} {int(scores[s])}" for s in range(self.rules.num_sides))

    def _show_hand_points(self, event: HandOver) -> None:
        t = self.term
        left = event.leftover
        if left.any():
            side = event.leftover_side
            who = self.side_name(side) if side >= 0 else "nobody (no capture this hand)"
            t.say(f"cards left on the table ({self.pc(left)}) go to {who}")
        t.say("")
        t.say(f"hand {event.hand} points:")
        width = max(len(self.side_name(s)) for s in range(self.rules.num_sides)) + 2
        t.say(" " * (width + 2) + " ".join(f"{FIELD_NAMES.get(f, f):>10}" for f in point_fields(self.rules)))
        for s in range(self.rules.num_sides):
            row = " ".join(f"{int(v):>10}" for v in event.points[s])
            t.say(f"  {self.side_name(s):<{width}}{row}")
        scores = self._scores_text(event.scores)
        t.say(f"scores after hand {event.hand} (to {self.rules.target}): {scores}")
        totals = ", ".join(f"{self.side_name(s)} +{int(event.points[s, -1])}" for s in range(self.rules.num_sides))
        self.past_hands.append(f"hand {event.hand}: {totals} -> {scores}")
        self.hand_log = []

    def _parse_move(self, text: str) -> tuple[int, frozenset[int]] | None:
        """The human's move from ``7d`` or ``7d 3s 4c``; None when the capture prompt was left with ``back``.

        Raises ``ValueError`` with a message for the player when the input is not a legal move.
        """
        hand = self.state.hands[0, self.human]
        if len(text) > MAX_LINE:
            raise ValueError(f"that line is too long ({len(text):,} characters); type a card, e.g. {self._example()}")
        tokens = [x for x in re.split(r"[\s,+]+", text.strip()) if x]
        if not tokens:
            raise ValueError(f"type a card to play, e.g. {self._example()}, or 'help'")
        readings = card_readings(tokens[0], self.deck)
        held = [c for c in readings if hand[c]]  # the notation's reading first: what worked before still does
        if not held:
            raise ValueError(f"you don't hold {format_card(readings[0], self.deck)}; your cards: {self.notation(hand)}")
        card = held[0]
        captures = self.match.captures(card)
        name = format_card(card, self.deck)
        if len(tokens) > 1:
            for option in itertools.product(*(card_readings(t, self.deck) for t in tokens[1:])):
                if frozenset(option) in captures:  # the notation's reading first, then c as clubs
                    return card, frozenset(option)
            named = frozenset(card_readings(t, self.deck)[0] for t in tokens[1:])
            if not captures:
                raise ValueError(f"{name} captures nothing here; type just '{name}' to lay it")
            legal = " or ".join(f"[{self.notation(c)}]" for c in captures)
            raise ValueError(f"{name} cannot take {self.notation(named)}; its legal captures: {legal}")
        if len(captures) <= 1:
            return card, captures[0] if captures else frozenset()
        return self._choose_capture(card, captures)

    def _example(self) -> str:
        """A card of the human's hand in notation, for messages."""
        return self.notation(self.state.hands[0, self.human]).split()[0]

    def _choose_capture(self, card: int, captures: list[frozenset[int]]) -> tuple[int, frozenset[int]] | None:
        t = self.term
        name = format_card(card, self.deck)
        t.say(f"{pretty_card(card, self.deck, t.color)} ({name}) can capture in {len(captures)} ways:")
        for i, cap in enumerate(captures, 1):
            t.say(f"  {i}) {self.pc(cap)}  ({self.notation(cap)}){self.kind_note(card, cap)}")
        while True:
            answer = t.ask(f"which capture? [1-{len(captures)}, or 'back']> ").strip()
            low = answer.lower()
            if low in ("back", "b", "cancel"):
                return None
            if low in ("help", "?"):
                t.say(
                    f"type a number from 1 to {len(captures)} to choose what {name} takes, or 'back' "
                    "to choose another card"
                )
                continue
            if low == "hint":
                self.show_hint()
                continue
            if low in ("quit", "exit"):
                raise QuitGame
            if re.fullmatch(r"[0-9]{1,3}", answer) and 1 <= int(answer) <= len(captures):
                return card, captures[int(answer) - 1]
            tokens = [x for x in re.split(r"[\s,+]+", answer) if x] if len(answer) <= MAX_LINE else []
            try:
                options = [frozenset(x) for x in itertools.product(*(card_readings(t, self.deck) for t in tokens))]
            except ValueError:
                options = []
            for option in options:
                if option in captures:
                    return card, option
            t.say(f"  not a choice: {quoted(answer)}; type a number from 1 to {len(captures)}, or 'back'")

    def _human_knock(self) -> None:
        """Cirulla: ask the human whether to knock (only the legal knocks offered) and make the decision."""
        t = self.term
        self.show_table()
        legal_names = self.match.knock_options()
        options = [(i, text) for i, text in enumerate(_KNOCK_TEXT) if KNOCK_CHOICES[i] in legal_names]
        t.say("your cards allow a knock: show them to everyone for points?")
        for i, text in options:
            t.say(f"  {i}) {text}")
        legal = [i for i, _ in options]
        words = {"n": 0, "no": 0, "none": 0, "stop": 0, "sum": 1, "tris": 2}
        while True:
            answer = t.ask(f"knock> [{'/'.join(map(str, legal))}] ").strip().lower()
            if answer in ("help", "?", "h"):
                self.show_help()
                continue
            if answer == "hint":
                self.show_hint()
                continue
            if answer in ("quit", "exit", "q"):
                raise QuitGame
            if answer in ("score", "scores"):
                self.show_score()
                continue
            if answer in ("table", "show", "look"):
                self.show_table()
                continue
            choice = int(answer) if re.fullmatch(r"[0-9]{1,3}", answer) else words.get(answer, -1)
            if choice in legal:
                break
            t.say(f"  not a choice: {quoted(answer)}; type one of {', '.join(map(str, legal))}")
        self.match.knock(KNOCK_CHOICES[choice])

    def _human_turn(self) -> None:
        self.show_table()
        t = self.term
        while True:
            line = t.ask("your move> ")
            cmd = line.strip().lower()
            if not cmd:
                t.say(f"  type a card to play (e.g. {self._example()}), or 'help'")
                continue
            if cmd in ("help", "?", "h"):
                self.show_help()
            elif cmd == "hint":
                self.show_hint()
            elif cmd == "review":
                self.show_review()
            elif cmd in ("quit", "exit", "q"):
                raise QuitGame
            elif cmd in ("score", "scores"):
                self.show_score()
            elif cmd in ("history", "log"):
                self.show_history()
            elif cmd in ("table", "show", "look"):
                self.show_table()
            else:
                try:
                    move = self._parse_move(line)
                except ValueError as e:
                    t.say(f"  {e}")
                    continue
                except Exception as e:  # a typo must never end the match: say so, and ask again
                    t.say(f"  could not read {quoted(line)} as a move ({type(e).__name__}); type a card, or 'help'")
                    continue
                if move is None:
                    self.show_table()
                    continue
                self.match.play(*move)
                return

    def play(self) -> int:
        """Play the match to its end; returns the winning side. Raises ``QuitGame`` / ``EndOfInput``."""
        self.match.start()
        while True:
            self.match.play_bots()
            if self.match.done:
                return self.match.winner
            if self.match.knock_options():
                self._human_knock()
            else:
                self._human_turn()


# --------------------------------------------------------------------------------------------------- session


class PlayError(ScopaError, ValueError):
    """A session option that cannot be used (a seat the variant lacks, an agent that does not load); the message
    names the option, the value and the fix."""


@dataclass
class Session:
    """What ``prepare`` checked and built: the rules, the agent of every other seat and the hint agent."""

    rules: Rules
    opponent: str
    partner: str
    seat_agents: dict[int, Policy]
    hint_agent: Policy
    notes: list[str]
    seed: int
    """The first match's seed: ``PlayConfig.seed``, or the fresh one drawn when it was None."""
    names: list[str] = field(default_factory=list)
    """Every seat's name (``seat_names``): ``you`` and the agents' short names."""


def _load(flag: str, spec: str, rules: Rules, seed: int) -> Policy:
    try:
        return make_agent(spec, rules, seed)
    except Exception as e:  # whatever a user's spec or file does wrong is a message, never a traceback
        detail = str(e) if isinstance(e, (ImportError, ValueError)) else f"{type(e).__name__}: {e}"
        raise PlayError(f"{flag}: cannot load the agent: {' '.join(detail.split())}") from None


def prepare(config: PlayConfig) -> Session:
    """Check ``config`` and build its agents; raises ``PlayError`` before anything is played."""
    try:
        rules = get_rules(config.variant)
    except (TypeError, ValueError) as e:
        raise PlayError(f"--variant: {e}") from None
    n = rules.num_players
    if isinstance(config.seat, bool) or not isinstance(config.seat, int) or not 0 <= config.seat < n:
        raise PlayError(f"--seat must be 0..{n - 1} for {rules.name} ({n} players), got {config.seat!r}")
    seed = config.seed
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED):
        raise PlayError(f"--seed must be a whole number from 0 to 2**64-1, got {config.seed!r}")
    for flag, spec in (("--opponent", config.opponent), ("--partner", config.partner)):
        if spec is not None and (not isinstance(spec, str) or not spec.strip()):
            raise PlayError(f"{flag}: an agent spec must be a non-empty string (e.g. greedy), got {spec!r}")
    human_side = rules.seat_side[config.seat]
    has_partner = len(rules.sides[human_side]) > 1
    if config.partner is not None and not has_partner:
        raise PlayError(
            f"--partner: {rules.name} has no teams, so you have no partner; drop --partner (got {config.partner!r})"
        )
    notes: list[str] = []
    opponent = config.opponent
    if opponent is None:
        try:
            opponent, notes = default_opponent(rules)
        except RuntimeError as e:
            raise PlayError(f"--opponent: {e}; give one, e.g. --opponent random") from None
    partner = config.partner or opponent
    if seed is None:
        seed = fresh_seed()
    hint_agent = _load("--opponent", opponent, rules, HINT_SEED)
    opp = _load("--opponent", opponent, rules, seed)
    mate = opp if partner == opponent else _load("--partner", partner, rules, seed + 1)
    seat_agents = {s: mate if rules.seat_side[s] == human_side else opp for s in range(n) if s != config.seat}
    specs = {s: partner if rules.seat_side[s] == human_side else opponent for s in seat_agents}
    names = seat_names(rules, config.seat, {s: short_name(spec, rules) for s, spec in specs.items()})
    return Session(rules, opponent, partner, seat_agents, hint_agent, notes, seed, names)


def _agent_text(spec: str, rules: Rules) -> str:
    """An agent for the header: its short name, and what it is when the name does not say (``Bot (the shipped
    classic bot)``, ``best.zip (runs/x/best.zip)``, ``pimc (pimc:worlds=8)``)."""
    name = short_name(spec, rules)
    if name == "Bot":
        return f"Bot (the shipped {rules.name} bot)"
    return name if name == spec.strip() else f"{name} ({spec.strip()})"


def fresh_seed() -> int:
    """A new match seed for a launch without ``--seed`` (small enough to retype)."""
    return secrets.randbelow(1_000_000)


def run(config: PlayConfig, inp: TextIO, out: TextIO, session: Session | None = None) -> int:
    """Play matches until the player declines a rematch, quits or the input ends; returns the exit status.

    A bad option (``PlayError``) is reported on ``out`` as ``error: ...`` with status 2; ``main`` checks the options
    first (``prepare``) and passes the ``session``, so that its errors go to stderr instead.
    """
    term = Terminal(inp, out, color=config.colors(out))
    if session is None:
        try:
            session = prepare(config)
        except PlayError as e:
            term.say(f"error: {e}")
            return 2
    rules, seat_agents = session.rules, session.seat_agents
    for note in session.notes:
        term.say(f"note: {note}")
    term.say(f"Scopa: {rules.name} ({rules.description}) -- first to {rules.target} points")
    names = session.names or seat_names(
        rules, config.seat, {s: short_name(a.name, rules) for s, a in seat_agents.items()}
    )
    term.say(f"you play seat {config.seat} against {_agent_text(session.opponent, rules)}")
    if any(len(side) > 1 for side in rules.sides):
        sides = [" + ".join(names[s] for s in side) for side in rules.sides]
        mine = rules.seat_side[config.seat]
        term.say(f"your team: {sides[mine]}; against {', '.join(x for i, x in enumerate(sides) if i != mine)}")
        if session.partner != session.opponent:
            term.say(f"your partner: {_agent_text(session.partner, rules)}")
    term.say("type a card to play it (e.g. 7d), 'hint' for advice, 'help' for the rules and commands")
    chosen = "" if config.seed is not None else "a fresh deal; "
    term.say(f"seed {session.seed} ({chosen}--seed {session.seed} deals this match again)")
    try:
        hint_name = short_name(session.opponent, rules)
        match = Match(rules, term, config.seat, seat_agents, session.hint_agent, session.seed, names, hint_name)
        while True:
            match.play()
            if not term.ask_yes_no("play again? [y/n]> "):
                term.say("thanks for playing!")
                return 0
            match.rematch()
    except QuitGame:
        term.say("you left the game. ciao!")
        return 0
    except EndOfInput:
        term.say("end of input: game over. ciao!")
        return 0


def main(argv: Sequence[str] | None = None, inp: TextIO | None = None, out: TextIO | None = None) -> int:
    """Command line entry point (``python -m agents.play``). Bad options: ``prog: error: ...``, status 2."""
    parser = argparse.ArgumentParser(
        prog="python -m agents.play",
        description="Play Scopa in the terminal against an agent. Type cards like 7d; 'help' in the game for more.",
    )
    add_field_options(parser, PlayConfig, typed=True, once=False)
    config = parse_options(parser, PlayConfig, argv)
    out = out if out is not None else sys.stdout
    if inp is None:
        inp = sys.stdin
        if hasattr(inp, "reconfigure"):  # bytes that are not text become U+FFFD, a bad move, not a crash
            inp.reconfigure(errors="replace")
    try:
        session = prepare(config)
    except PlayError as e:
        parser.error(str(e))
    except KeyboardInterrupt:
        print("\ninterrupted. ciao!", file=out)
        return 130
    try:
        return run(config, inp, out, session)
    except KeyboardInterrupt:
        print("\ninterrupted. ciao!", file=out)
        return 130


if __name__ == "__main__":
    sys.exit(main())
