"""The terminal game ``python -m agents.play`` driven by scripted input: whole matches, bad input, capture choice,
hints, quitting, end of input, rematches, team variants and the default opponent."""

from __future__ import annotations

import io
import itertools
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.base import make_agent
from agents.nets.bot import make_bot_policy, new_card, write_numpy_export
from agents.play import card_words
from agents.play import terminal as play
from agents.play.hints import move_probabilities
from scopa_env.engine import core, observation, state_moves
from scopa_env.games.policy import ActBatch, RandomAgent
from scopa_env.rules import Rules, get_rules
from scopa_env.rules.cards import format_card, parse_card
from tests.helpers import pretend_no_shipped_bot

ROOT = Path(__file__).resolve().parent.parent
PRELUDE = ["help", "hint", "", "zz", "9d", "Xd", "score", "history", "table", "7d 7d 7d", "ÿ" * 300]
"""Commands and bad input typed before the first move: each must re-prompt without changing the game."""


def cycle_script(rules: Rules, rounds: int, extra: tuple[str, ...] = ("1", "n")) -> str:
    """Input that plays whole matches blindly: every card of the deck in turn (only held cards are accepted),
    ``1`` (the first capture at a capture prompt), then ``n`` (declines the rematch)."""
    cards = [format_card(c, rules.deck) for c in range(rules.num_cards)]
    cards = [c.lower() if i % 2 else c.upper() for i, c in enumerate(cards)]  # the suit letter is case-insensitive
    return "\n".join(PRELUDE + (cards + list(extra)) * rounds) + "\n"


def run_text(script: str, **config: object) -> tuple[int, str]:
    out = io.StringIO()
    rc = play.run(play.PlayConfig(**config), io.StringIO(script), out)  # type: ignore[arg-type]
    return rc, out.getvalue()


def test_whole_match_blind_script_with_bad_input_and_capture_choice() -> None:
    rules = get_rules("classic")
    script = cycle_script(rules, 600)
    for seed in range(20):
        rc, text = run_text(script, variant="classic", opponent="random", seed=seed)
        assert rc == 0
        assert text.count("match over: ") == 1
        assert "thanks for playing!" in text  # the rematch was declined with 'n'
        if "can capture in" in text:
            break
    else:
        pytest.fail("no capture choice came up in 20 seeded matches")
    assert "you don't hold" in text
    assert "bad card 'zz'" in text and "unknown rank '9'" in text
    assert "not a choice" in text  # card names typed at the capture prompt re-prompt
    assert "hand 1 points:" in text and "coins" in text and "carte" not in text  # English on every screen
    assert "How to play" in text and "hint: random would play" in text
    assert "scores (to 11):" in text and "no moves yet" in text
    # the hands' point tables add up to the final scores
    totals = {"you": 0, "random": 0}
    for line in text.splitlines():
        for side in totals:
            if line.startswith(f"  {side}  ") and line.split()[-1].isdigit():
                totals[side] += int(line.split()[-1])
    final = text.split("final scores: ")[1].splitlines()[0]
    assert final == f"you {totals['you']}, random {totals['random']}"
    assert not re.search(r"player \d|\(random\)", text)  # seats named the same everywhere: you, random
    assert max(totals.values()) >= 11


def test_command_line_with_scripted_stdin_matches_in_process_run() -> None:
    rules = get_rules("classic")
    script = cycle_script(rules, 600)
    rc, expected = run_text(script, variant="classic", opponent="random", seed=4)
    assert rc == 0
    proc = subprocess.run(
        [sys.executable, "-m", "agents.play", "--opponent", "random", "--seed", "4", "--color", "never"],
        input=script,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == expected
    assert "match over: " in proc.stdout


class Responder:
    """An input stream that answers each prompt by looking at the game: it prefers cards with several captures,
    chooses the last capture offered (once going ``back`` first), names a capture inline now and then, and answers
    rematch prompts from ``rematches``."""

    def __init__(self, out: io.StringIO, rules: Rules, rematches: list[str]) -> None:
        self.out = out
        self.rules = rules
        self.rematches = rematches
        self.match: play.Match | None = None
        self.expected: list[str] = []
        self.pending: list[str] = []
        self.went_back = False
        self.inline = 0
        self.choices = 0

    def isatty(self) -> bool:
        return False

    def readline(self) -> str:
        text = self.out.getvalue()
        prompt = text[text.rfind("\n") + 1 :]
        if prompt.startswith("play again?"):
            return self.rematches.pop(0) + "\n" if self.rematches else ""
        assert self.match is not None
        st, rules = self.match.state, self.rules
        table = [int(c) for c in np.flatnonzero(st.table[0])]
        if prompt.startswith("which capture?"):
            card = int(self.pending_card)
            caps = state_moves.enumerate_captures(rules, table, card)
            if not self.went_back:
                self.went_back = True
                return "back\n"
            self.choices += 1
            self.expected.append(self.match.notation(caps[-1]))
            return f"{len(caps)}\n"
        assert prompt.startswith("your move>"), prompt
        moves = state_moves.legal_moves(rules, st, 0)
        by_card: dict[int, list[frozenset[int]]] = {}
        for card, cap in moves:
            by_card.setdefault(card, []).append(cap)
        multi = [c for c, caps in by_card.items() if len(caps) > 1]
        card = multi[0] if multi else min(by_card)
        self.pending_card = card
        caps = by_card[card]
        if len(caps) > 1 and self.went_back and self.inline < 2 and self.choices >= 1:
            self.inline += 1
            self.expected.append(self.match.notation(caps[0]))
            return format_card(card, rules.deck) + " " + self.match.notation(caps[0]) + "\n"
        return format_card(card, rules.deck).lower() + "\n"


def test_capture_choice_is_carried_out_and_rematch() -> None:
    rules = get_rules("classic")
    out = io.StringIO()
    responder = Responder(out, rules, ["maybe", "y", "n"])
    term = play.Terminal(responder, out)  # type: ignore[arg-type]
    matches = 0
    seed = 11
    while True:
        match = play.Match(rules, term, 0, {1: RandomAgent(rules, seed)}, RandomAgent(rules, 1), seed)
        responder.match = match
        match.play()
        matches += 1
        if not term.ask_yes_no("play again? [y/n]> "):
            break
        seed += 1
    text = out.getvalue()
    assert matches == 2
    assert text.count("match over: ") == 2
    assert "please answer y (yes) or n (no)" in text
    assert responder.choices >= 3 and responder.inline >= 1
    # each chosen capture appears as the move's capture, in order
    pos = 0
    for cap in responder.expected:
        pos = text.index("taking ", pos)
        found = text.find(f"({cap})\n", pos)
        assert found >= 0, f"capture {cap} was not carried out"
        pos = found
    assert "can capture in" in text


def test_move_in_one_go_and_illegal_capture_named() -> None:
    # hand 7d Ks 2b, table 3s 4c 7c: 7d takes 7c (equal rank beats the sum 3s+4c); Ks takes 3s+7c; 2b is laid
    from tests.helpers import position

    rules, st = position("classic", ["7d Ks 2b", "Ad Ac Ab"], table="3s 4c 7c")
    out = io.StringIO()
    match = play.Match(
        rules,
        play.Terminal(io.StringIO("7d 3s 4c\n7d 2b\n2b 3s\nKs 3s\n7D 7c\n"), out),
        0,
        {1: RandomAgent(rules, 0)},
        None,
        0,
    )
    match.state = st
    match._human_turn()
    text = out.getvalue()
    assert "7d cannot take 3s 4c; its legal captures: [7c]" in text
    assert "you don't hold 2b" not in text and "7d cannot take 2b" in text
    assert "2b captures nothing here; type just '2b' to lay it" in text
    assert "Ks cannot take 3s; its legal captures: [3s 7c]" in text
    assert "you: 7♦ (7d) taking 7♥ (7c)" in text
    st = match.state  # a copy of the game now: the position set up was copied into the match's SingleGame
    assert st.piles[0, 0].sum() == 2 and not st.table[0, 6]


def test_end_of_input_and_quit_leave_cleanly() -> None:
    rc, text = run_text("hint\nscore\n", variant="classic", opponent="greedy", seed=1)
    assert rc == 0 and "end of input" in text
    rc, text = run_text("quit\n", variant="classic", opponent="greedy", seed=1)
    assert rc == 0 and "you left the game" in text
    rc, text = run_text("", variant="classic", opponent="random", seed=0, seat=5)
    assert rc == 2 and "--seat must be 0..1" in text


def test_unknown_opponent_is_reported() -> None:
    rc, text = run_text("", variant="classic", opponent="nobody-like-this", seed=0)
    assert rc == 2 and "cannot load the agent" in text and "known agents" in text


@pytest.mark.parametrize("variant", ["scopa-a-quattro", "scopone-scientifico"])
def test_other_variants_play_to_the_end(variant: str) -> None:
    rules = get_rules(variant)
    rc, text = run_text(cycle_script(rules, 400), variant=variant, opponent="random", partner="greedy", seed=2, seat=1)
    assert rc == 0
    assert text.count("match over: ") == 1
    assert "\ngreedy: " in text and "your team: you + greedy; against random 0 + random 2" in text


def _numpy_bot(directory: Path, rules: Rules, seed: int = 0) -> Path:
    """A random-weights bot export (numpy files only; no torch needed)."""
    rng = np.random.default_rng(seed)
    sizes = [observation.observation_size(rules), 24, rules.num_cards]
    layers = [
        (rng.normal(0, 0.7, (o, i)).astype(np.float32), rng.normal(0, 0.3, o).astype(np.float32))
        for i, o in itertools.pairwise(sizes)
    ]
    return write_numpy_export(directory, new_card(rules, layers, "tanh", name="test-bot"), layers, "tanh")


def test_hint_shows_bot_probabilities(tmp_path: Path) -> None:
    rules = get_rules("classic")
    bot_dir = _numpy_bot(tmp_path / "bot", rules)
    rc, text = run_text("hint\n", variant="classic", opponent=f"bot:path={bot_dir},prefer=numpy", seed=3)
    assert rc == 0
    assert "hint from bot (its probabilities" in text and "suggested: " in text  # the folder's name
    percents = [float(m.group(1)) for m in re.finditer(r"^\s+\w\w\s+([\d.]+)%", text, flags=re.MULTILINE)]
    assert len(percents) == 3  # one line per card in hand
    assert sum(percents) == pytest.approx(100.0, abs=0.2)


def test_move_probabilities_cover_every_legal_move(tmp_path: Path) -> None:
    from tests.helpers import position

    rules, st = position("classic", ["7d Ks 5b", "Ad Ac Ab"], table="2s 5c 3c 4b 2d")
    policy = make_bot_policy(rules, 0, path=str(_numpy_bot(tmp_path / "bot", rules)), prefer="numpy")
    moves = move_probabilities(policy.action_probs, rules, st, 0)
    got = {(m.card, m.capture) for m in moves}
    assert got == set(state_moves.legal_moves(rules, st, 0))
    assert sum(m.prob for m in moves) == pytest.approx(1.0, abs=1e-5)
    assert all(m.prob >= 0 for m in moves)
    # a card's captures share its play probability
    batch = ActBatch(rules, observation.observe(rules, st), core.legal_action_mask(rules, st), st, np.array([0]))
    p_cards = policy.action_probs(batch)[0]
    for card in {m.card for m in moves}:
        assert sum(m.prob for m in moves if m.card == card) == pytest.approx(float(p_cards[card]), abs=1e-5)


def test_default_opponent_prefers_the_shipped_bot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rules = get_rules("classic")
    monkeypatch.setattr(play, "SHIPPED_BOTS", tmp_path)
    monkeypatch.setattr(card_words, "SHIPPED_BOTS", tmp_path)  # the bot's name (short_name) reads the same folder
    spec, notes = play.default_opponent(rules)
    assert spec == "expert" and any("no shipped bot" in n for n in notes)
    _numpy_bot(tmp_path / "classic", rules)
    spec, notes = play.default_opponent(rules)
    assert spec == str(tmp_path / "classic") and not notes
    agent = make_agent(spec, rules, 0)
    assert hasattr(agent, "action_probs")
    rc, text = run_text("hint\n", variant="classic", seed=0)
    assert rc == 0 and "against Bot (the shipped classic bot)" in text and "hint from Bot" in text
    assert str(tmp_path) not in text and "suggested:" in text


def test_hint_from_a_checkpoint_opponent(tmp_path: Path) -> None:
    pytest.importorskip("sb3_contrib")
    from tests.test_export import make_checkpoint

    ckpt = make_checkpoint(tmp_path / "best.zip", hidden=(16,), scale=0.5, seed=2)
    rc, text = run_text("hint\nscore\n", variant="classic", opponent=str(ckpt), seed=5)
    assert rc == 0 and f"against best.zip ({ckpt})" in text and "hint from best.zip" in text
    percents = [float(m.group(1)) for m in re.finditer(r"^\s+\w\w\s+([\d.]+)%", text, flags=re.MULTILINE)]
    assert len(percents) == 3 and sum(percents) == pytest.approx(100.0, abs=0.2)


def test_bot_specs_are_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rules = get_rules("classic")
    bot_dir = _numpy_bot(tmp_path / "bot", rules)
    agent = make_agent(f"bot:path={bot_dir},prefer=numpy,sample=true", rules, 0)
    assert agent.name.startswith("bot:path=") and hasattr(agent, "action_probs")
    for spec, message in [
        ("bot:colour=red", "bad option"),
        (f"bot:path={bot_dir},colour=red", "bad option"),
        (f"bot:path={tmp_path}", "model_card.json is missing"),
    ]:
        rc, text = run_text("", variant="classic", opponent=spec)
        assert rc == 2 and message in text, text
    rc, text = run_text("", variant="classic-21", opponent=str(bot_dir))
    assert rc == 2 and "trained for 'classic', not 'classic-21'" in text
    pretend_no_shipped_bot(monkeypatch, "simple-3")
    rc, text = run_text("", variant="simple-3", opponent="bot")  # bot alone: the variant's shipped bot
    assert rc == 2 and "no shipped bot plays 'simple-3'" in text, text


def _main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``play.main(argv)`` on empty input: (exit status, what the game printed, stderr)."""
    out = io.StringIO()
    try:
        code = play.main(argv, io.StringIO(""), out)
    except SystemExit as e:
        code = int(e.code or 0)
    return code, out.getvalue(), capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--seat", "5"], "--seat must be 0..1 for classic (2 players), got 5"),
        (["--variant", "scopa-a-quattro", "--seat", "4"], "--seat must be 0..3 for scopa-a-quattro"),
        (["--seat", "-1"], "argument --seat: expected a whole number >= 0, got '-1'"),
        (["--seed", "-1"], "argument --seed: expected a whole number from 0 to 2**64-1, got '-1'"),
        (["--seed", str(2**64)], "argument --seed: expected a whole number from 0 to 2**64-1"),
        (["--seed", "1e30"], "argument --seed: expected a whole number from 0 to 2**64-1, got '1e30'"),
        (["--variant", "nope"], "--variant: unknown variant 'nope'; known variants: classic"),
        (["--opponent", "nobody"], "--opponent: cannot load the agent: unknown agent 'nobody'"),
        (["--opponent", "missing/best.zip"], "--opponent: cannot load the agent: checkpoint 'missing/best.zip'"),
        (["--opponent", ""], "--opponent: an agent spec must be a non-empty string"),
        (["--partner", "greedy"], "--partner: classic has no teams, so you have no partner; drop --partner"),
        (["--variant", "scopone-scientifico", "--partner", "nobody"], "--partner: cannot load the agent"),
        (["--color", "red"], "argument --color: invalid choice: 'red'"),
    ],
)
def test_command_line_options_are_checked_before_the_game(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, text, err = _main(["--opponent", "random", *argv], capsys)
    assert code == 2 and text == "", text  # nothing played, nothing printed on the game's stream
    assert err.splitlines()[-1].startswith(f"python -m agents.play: error: {message}"), err


def test_the_largest_seed_plays_and_run_checks_its_config(capsys: pytest.CaptureFixture[str]) -> None:
    code, text, err = _main(["--opponent", "random", "--seed", str(2**64 - 1), "--color", "never"], capsys)
    assert code == 0 and "end of input" in text and err == ""
    for config, message in [
        ({"seed": 2**64}, "--seed must be a whole number from 0 to 2**64-1, got 18446744073709551616"),
        ({"seed": -1}, "--seed must be a whole number from 0 to 2**64-1, got -1"),
        ({"seat": True}, "--seat must be 0..1 for classic (2 players), got True"),
        ({"variant": ["classic"]}, "--variant: variant must be a name or a Rules object, got list"),
        ({"partner": "random"}, "--partner: classic has no teams"),
    ]:
        rc, text = run_text("", **{"opponent": "random", **config})
        assert rc == 2 and text.startswith(f"error: {message}") and text.count("\n") == 1, text


def test_python_m_agents_play_runs_the_terminal_game_with_the_variants_bot() -> None:
    """``python -m agents.play`` picks the variant's shipped bot (the env package has no command of its own)."""
    proc = subprocess.run(
        [sys.executable, "-m", "agents.play", "--variant", "scopone-scientifico", "--seed", "3"],
        input="quit\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "against Bot (the shipped scopone-scientifico bot)" in proc.stdout
    assert "your team: you + Bot 2; against Bot 1 + Bot 3" in proc.stdout


# --------------------------------------------------------------------------------------------------- issue 38


def _match(hand: str, table: str, script: str = "") -> tuple[play.Match, io.StringIO]:
    from tests.helpers import position

    rules, st = position("classic", [hand, "Ad Ac Ab"], table=table)
    out = io.StringIO()
    match = play.Match(rules, play.Terminal(io.StringIO(script), out), 0, {1: RandomAgent(rules, 0)}, None, 0)
    match.state = st
    return match, out


@pytest.mark.parametrize(
    ("typed", "played"),
    [("2c", "2b"), ("2C", "2b"), ("2♣", "2b"), ("2b", "2b"), ("7♦", "7d"), ("Kh", "Kc"), ("K♥", "Kc"), ("Kc", "Kc")],
)
def test_suits_as_the_picture_shows_them(typed: str, played: str) -> None:
    """Clubs show as ♣: '2c' plays the 2 of clubs (bastoni) when that is the only 2 held; 'h' and the symbols too."""
    match, _ = _match("2b 7d Kc", "5s")
    move = match._parse_move(typed)
    assert move is not None and format_card(move[0]) == played


def test_c_for_clubs_names_a_capture_and_the_notation_wins_when_both_are_held() -> None:
    # hand 2c 2b 7d, table 5b 2s: '7d 5c 2s' names 5♣ (bastoni) on the table; '2c' is the cup 2 (the notation) when
    # both 2s are held, as before, and '2♣' the club
    match, _ = _match("2c 2b 7d", "5b 2s")
    assert match._parse_move("7d 5c 2s") == (parse_card("7d"), frozenset({parse_card("5b"), parse_card("2s")}))
    assert match._parse_move("2c") == (parse_card("2c"), frozenset({parse_card("2s")}))
    assert match._parse_move("2♣") == (parse_card("2b"), frozenset({parse_card("2s")}))
    assert match._parse_move("2h") == (parse_card("2c"), frozenset({parse_card("2s")}))


LINES = [",", "+", " , + ", "", "   ", "\x00", "\ufffd\ufffd", "²", "7d" * 5000, "x" * 100_000, "7d ,,,++ 3s", "1" * 50]


@pytest.mark.parametrize("line", LINES, ids=range(len(LINES)))
def test_any_line_at_the_move_prompt_is_a_message_and_the_prompt_again(line: str) -> None:
    match, out = _match("7d Ks 2b", "3s 4c 7c", script=f"{line}\n7d\n")
    match._human_turn()  # the bad line re-prompts; then 7d is played
    text = out.getvalue()
    assert text.count("your move> ") == 2 and "you: 7♦ (7d)" in text
    assert max(len(x) for x in text.splitlines()) < 400  # a long line is not echoed back in full


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.text(max_size=40)
    | st.lists(st.sampled_from(["7d", "7c", "3s", "4c", ",", "+", " ", "♣", "h", "10"])).map("".join)
)
def test_the_move_parser_never_crashes(text: str) -> None:
    """Any text: a move, the capture prompt (left at the end of input) or a ValueError with a message."""
    match, _ = _match("7d Ks 2b", "3s 4c 7c")
    try:
        move = match._parse_move(text)
    except ValueError as e:
        assert str(e)
    except play.EndOfInput:
        pass
    else:
        assert move is None or match.state.hands[0, 0, move[0]]


def test_random_bytes_on_stdin_do_not_end_the_match() -> None:
    script = b",\n+\n\xff\xfe\x80 bad bytes\n" + b"\x00" * 10 + b"\n" + b"y" * 100_000 + b"\nquit\n"
    proc = subprocess.run(
        [sys.executable, "-m", "agents.play", "--opponent", "random", "--seed", "4", "--color", "never"],
        input=script,
        capture_output=True,
        cwd=ROOT,
        timeout=300,
    )
    out = proc.stdout.decode("utf-8", errors="replace")
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr, proc.stderr.decode()
    assert "you left the game" in out and out.count("your move> ") == 6


def test_help_points_to_the_rules_page_that_exists() -> None:
    _, text = run_text("help\n", variant="classic", opponent="random", seed=0)
    assert "docs/rules.md has the full rules" in text and "RULES.md has" not in text
    assert (ROOT / "docs" / "rules.md").is_file()


def test_each_launch_deals_afresh_and_says_the_seed_that_replays_it(monkeypatch: pytest.MonkeyPatch) -> None:
    assert play.PlayConfig().seed is None
    monkeypatch.setattr(play, "fresh_seed", lambda: 777)
    rc, fresh = run_text("table\n", variant="classic", opponent="random")
    assert rc == 0 and "seed 777 (a fresh deal; --seed 777 deals this match again)" in fresh
    rc, again = run_text("table\n", variant="classic", opponent="random", seed=777)
    assert "seed 777 (--seed 777 deals this match again)" in again
    assert fresh.split("--- hand 1")[1] == again.split("--- hand 1")[1]  # the same deal and the same picture
    rc, other = run_text("table\n", variant="classic", opponent="random", seed=778)
    assert other.split("--- hand 1")[1] != fresh.split("--- hand 1")[1]
