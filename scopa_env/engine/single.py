"""One game of Scopa on the compiled single-game kernel (``scopa_env.engine.kernel``): the engine under the single-game
envs (``scopa_env.envs.aec``, ``scopa_env.envs.parallel``, ``scopa_env.envs.gym``), the web and terminal games.

The batched core (``scopa_env.engine.core``) pays a fixed numpy cost per call whatever the batch size, which dominates
when the batch holds one game (PettingZoo's and Gymnasium's loops, and every library built on them).
``SingleGame`` keeps ONE game as the kernel's int64 array (card sets as bit masks, bit ``c`` for card id ``c``) and
steps, masks and observes it with compiled code, for every variant (cirulla's knocks, fifteens and ``stop`` /
knock actions included). It plays exactly the core's rules: the same deals, captures, scoring and observations
(``observation.observe``'s layout, bit for bit); ``tests/test_single.py`` and ``tests/test_kernel.py`` check it move for
move, mask for mask and observation for observation against the core on random games of every variant.

    game = SingleGame("classic", seed=7)
    obs = game.observe(game.current)           # == observation.observe(rules, core.reset(rules, [7]))[0]
    result = game.step(int(np.flatnonzero(game.mask())[0]))
    state = game.to_state()                    # a core.State batch of one, for the core, the agents, state_io

``to_state`` / ``from_state`` convert to and from a ``core.State`` (a copy either way), for everything that works on
the batched core (the agents, ``driver.decide``, ``state_io``, rendering). Card sets read from a game (``hands``,
``table``, ``piles``...) are Python int bit masks; ``legal_bits`` covers every action id (bit ``a`` for action
``a``, cirulla's ``stop`` and knocks above the cards).
"""

from __future__ import annotations

import functools
import operator
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from scopa_env.engine import core
from scopa_env.engine._kernel_layout import (
    CURRENT,
    DEAL_NO,
    DEALER,
    DECK,
    HAND_NO,
    HANDS,
    I_CAPTURE,
    I_CARD,
    I_LEFT_SIDE,
    I_LEFTOVER,
    I_MATCH_OVER,
    I_NEW_HAND,
    I_POINTS,
    I_SCOPA,
    I_SEAT,
    I_WINNER,
    INFO_SIZE,
    KNOCKP,
    LAST,
    PENDING,
    PHASE,
    PICKED,
    PILES,
    R_NFIELDS,
    REVEALED,
    SCOPE,
    SCORES,
    SEED_HI,
    SEED_LO,
    STATE_SIZE,
    STOCK,
    TABLE,
    TTAKE,
    WINNER,
)
from scopa_env.engine.kernel import kernel_for
from scopa_env.rules import Rules, get_rules
from scopa_env.rules.shuffle import derive_seed

__all__ = ["SingleGame", "SingleStep", "bits_of", "cards_of", "game_from_state", "int64_key", "new_game", "next_seed"]

_PLAY, _CHOOSE, _DONE = int(core.Phase.PLAY), int(core.Phase.CHOOSE), int(core.Phase.DONE)
_MASK_CACHE_LIMIT = 1 << 16
"""Read-only bool mask arrays kept per variant (keyed by the mask's bits); cleared when it grows past this."""

_empty, _F32, _I8, _BOOL = np.empty, np.dtype(np.float32), np.dtype(np.int8), np.dtype(np.bool_)
_new = tuple.__new__  # a NamedTuple of known fields without its generated __new__'s keyword handling


def _compiled(dispatcher: Any, *examples: Any) -> Any:
    """``dispatcher``'s machine code for the argument types of ``examples`` (``numba.typeof`` of each), called
    directly: numba's dispatcher types every argument at every call (about 40 ns an argument), a cost the envs pay
    several times a turn. The caller must pass arguments of exactly these types (the same arrays' dtypes and
    layouts; Python ints and bools). Falls back to ``dispatcher`` itself where it is not a numba dispatcher
    (``NUMBA_DISABLE_JIT``, a test's stand-in)."""
    compile_for = getattr(dispatcher, "compile", None)
    if compile_for is None:
        return dispatcher
    import numba

    return compile_for(tuple(numba.typeof(x) for x in examples))


def _match_seed(seed: int) -> int:
    """``seed`` as an int, checked to be a match seed in [0, 2**64)."""
    seed = int(seed)
    if not 0 <= seed < 2**64:
        raise ValueError(f"seed must be an integer in [0, 2**64), got {seed}")
    return seed


def next_seed(seed: int) -> int:
    """``shuffle.derive_seed`` of one seed (an int in [0, 2**64)): the seed of the next game of the chain."""
    return int(derive_seed(np.array([seed], dtype=np.uint64))[0])


def bits_of(cards: npt.ArrayLike) -> int:
    """A (D,) bool card mask as an int bit mask (bit ``c`` set for card ``c``)."""
    arr = np.asarray(cards, dtype=np.bool_).reshape(-1)
    return int.from_bytes(np.packbits(arr, bitorder="little").tobytes(), "little")


def cards_of(bits: int, num_cards: int) -> npt.NDArray[np.bool_]:
    """An int bit mask as a (num_cards,) bool card mask."""
    raw = np.frombuffer(bits.to_bytes((num_cards + 7) // 8, "little"), dtype=np.uint8)
    return np.unpackbits(raw, count=num_cards, bitorder="little").view(np.bool_)


class _Consts:
    """Per-rules constants of the single-game face (card values and ranks, cached masks), built once per process."""

    def __init__(self, rules: Rules) -> None:
        deck = rules.deck
        self.rules = rules
        self.d = d = rules.num_cards
        self.a = rules.num_actions
        self.rank = deck.rank.astype(np.int64).tolist()
        self.value = deck.value.astype(np.int64).tolist()
        self.rank_cards = [sum(1 << c for c in range(d) if self.rank[c] == k) for k in range(deck.num_ranks)]
        """The cards of each rank, as bit masks."""
        self.key = int(core.rules_key(rules))
        self.mask_bytes = (self.a + 7) // 8
        byte_bits = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1, bitorder="little")
        self.byte_bool = [row.astype(np.bool_).tobytes() for row in byte_bits]
        self.masks: dict[int, npt.NDArray[np.bool_]] = {}
        k = kernel_for(rules)
        self.kernel = k
        self.mod = k.mod
        self.rc, self.pc = k.rc, k.pc
        self.obs_size = k.obs_size
        self.num_fields = int(k.rc[R_NFIELDS])
        # the envs' calls, without numba's per-call dispatch (``_compiled``): their arguments always have these types
        rc, pc, mod = k.rc, k.pc, k.mod
        st, info = np.zeros(STATE_SIZE, dtype=np.int64), np.zeros(INFO_SIZE, dtype=np.int64)
        obs, mask8, mask = np.zeros(1, np.float32), np.zeros(1, np.int8), np.zeros(1, np.bool_)
        self.play = _compiled(mod.play, rc, pc, st, 0, info)
        self.play_observed = _compiled(mod.play_observed, rc, pc, st, 0, info, 0, obs, mask8)
        self.play_random = _compiled(mod.play_random, rc, pc, st, 0, 0, info, True)
        self.play_then_random = _compiled(mod.play_then_random, rc, pc, st, 0, info, 0, 0, obs, mask, True)
        self.legal_bits = _compiled(mod.legal_bits, rc, pc, st)
        self.observe = _compiled(mod.observe, rc, st, 0, obs)
        self.observe_masked = _compiled(mod.observe_masked, rc, pc, st, 0, obs, True, mask8)
        self.new_match = _compiled(mod.new_match, rc, st, 0, 0)

    def bool_mask(self, bits: int) -> npt.NDArray[np.bool_]:
        """(A,) bool, a new writable array (A = ``rules.num_actions``): ``cards_of(bits, A)``, a copy of a cached
        read-only array."""
        arr = self.masks.get(bits)
        if arr is None:
            if len(self.masks) >= _MASK_CACHE_LIMIT:
                self.masks.clear()
            data = b"".join(map(self.byte_bool.__getitem__, bits.to_bytes(self.mask_bytes, "little")))
            arr = self.masks[bits] = np.frombuffer(data[: self.a], dtype=np.bool_)  # bytes: read-only
        return arr.copy()


@functools.cache
def _consts(rules: Rules) -> _Consts:
    """The per-rules constants of the single-game engine, made once per ``Rules``."""
    return _Consts(rules)


class SingleStep(NamedTuple):
    """What one ``SingleGame.step`` did (``core.StepInfo`` of one game, card sets as bit masks): the one result of
    every action. A tuple, so that the envs' hot path builds it for every move at a tuple's cost."""

    seat: int
    """Seat that acted."""
    move_done: bool
    """A whole move (play plus capture or lay) was completed."""
    card: int
    """Card played by the completed move, else -1."""
    capture: int
    """Table cards taken by the completed move (bit mask; 0 for a lay)."""
    scopa: bool
    hand_over: bool
    """The hand ended with this move and was scored."""
    hand_points: npt.NDArray[np.int16] | None
    """(S, F) points of the hand that ended (``scoring.point_fields``), else None."""
    leftover_side: int
    leftover: int
    """Cards left on the table at the end of the hand (bit mask)."""
    match_over: bool
    winner: int
    """Winning side of a match that ended (else -1)."""
    new_hand: bool


def _field(at: int, doc: str) -> property:
    """An int attribute of the game: the kernel's state array at ``at`` (assigning it writes there)."""

    def put(self: SingleGame, value: int) -> None:
        self._st[at] = value

    return property(lambda self: int(self._st[at]), put, doc=doc)


def int64_key(key: int) -> int:
    """A ``RandomAgent.key`` (64 bits) as the int64 with the same bits, which the kernel's random play takes."""
    return key - (1 << 64) if key >> 63 else key


def _fields(at: int, count: str, doc: str) -> property:
    """A list attribute of the game (``count``: the rules' attribute giving its length), as Python ints."""
    return property(lambda self: self._st[at : at + getattr(self._c.rules, count)].tolist(), doc=doc)


class SingleGame:
    """One game of Scopa on the compiled kernel, equal to the batched core's game of the same seed move for move.

    Attributes mirror ``core.State``'s fields for one game (card sets as int bit masks: ``hands`` is a list of N
    masks, ``piles`` of S); they are read from the kernel's state, so they are new values at every read.
    ``SingleGame(rules, seed)`` starts the match of ``seed`` (``core.reset``).
    """

    __slots__ = ("_c", "_info", "_st", "rules")

    def __init__(self, rules: Rules | str, seed: int | None = None) -> None:
        self.rules = rules = get_rules(rules)
        self._c = _consts(rules)
        self._st = np.zeros(STATE_SIZE, dtype=np.int64)
        self._st[PENDING] = -1
        self._st[LAST] = -1
        self._st[WINNER] = -1
        self._info = np.zeros(2 * INFO_SIZE, dtype=np.int64)  # the second half: play_then_random's kept hand
        if seed is not None:
            self.new_match(seed)

    # ------------------------------------------------------------------------------------------------ state

    table = _field(TABLE, "The table (bit mask).")
    picked = _field(PICKED, "Table cards picked so far in the CHOOSE phase (bit mask).")
    stock_pos = _field(STOCK, "Index in ``deck`` of the next card to deal.")
    current = _field(CURRENT, "Seat to act.")
    dealer = _field(DEALER, "Dealer of this hand.")
    phase = _field(PHASE, "``core.Phase`` as an int.")
    pending = _field(PENDING, "Card whose capture is being chosen (CHOOSE phase), else -1.")
    last_capturer = _field(LAST, "Side of the last capture this hand, -1 if none yet.")
    hand_no = _field(HAND_NO, "Hands finished in this match.")
    deal_no = _field(DEAL_NO, "Deal within the hand.")
    winner = _field(WINNER, "Winning side once the match is over, else -1.")
    table_take = _field(TTAKE, "Cirulla: scope of this hand's initial-table take, 0 if none.")
    hands = _fields(HANDS, "num_players", "Hands as bit masks, by seat.")
    piles = _fields(PILES, "num_sides", "Cards captured this hand, by side (bit masks).")
    revealed = _fields(REVEALED, "num_players", "Cirulla: cards revealed by knocks still in each hand (bit masks).")
    deck = _fields(DECK, "num_cards", "This hand's deck order.")
    scope = _fields(SCOPE, "num_sides", "Scope of each side this hand.")
    scores = _fields(SCORES, "num_sides", "Match points of each side.")
    knock_points = _fields(KNOCKP, "num_sides", "Cirulla: knock points of each side this hand.")

    @property
    def seed(self) -> int:
        """The match's seed."""
        return int(self._st[SEED_HI]) << 32 | int(self._st[SEED_LO])

    def new_match(self, seed: int) -> None:
        """Start the match of ``seed`` (``core.reset``)."""
        seed = _match_seed(seed)
        c = self._c
        c.new_match(c.rc, self._st, seed & 0xFFFFFFFF, seed >> 32)

    def restarted(self, seed: int) -> SingleGame:
        """A new game of the same rules, at the start of the match of ``seed``: ``SingleGame(rules, seed)`` without
        looking the rules up again."""
        seed = _match_seed(seed)
        c = self._c
        g = self._around(np.zeros(STATE_SIZE, dtype=np.int64))  # new_match sets every field
        c.new_match(c.rc, g._st, seed & 0xFFFFFFFF, seed >> 32)
        return g

    def _around(self, st: npt.NDArray[np.int64]) -> SingleGame:
        """A game of the same rules on the kernel state ``st`` (not copied), with its own step info."""
        g = SingleGame.__new__(SingleGame)
        g.rules, g._c, g._st = self.rules, self._c, st
        g._info = np.zeros_like(self._info)  # both halves: play_then_random's kept hand
        return g

    @classmethod
    def from_state(cls, rules: Rules | str, state: core.State, game: int = 0) -> SingleGame:
        """Game ``game`` of a core ``State`` (started under ``rules``) as a ``SingleGame`` (a copy)."""
        rules = get_rules(rules)
        if not isinstance(state, core.State):
            raise TypeError(f"state must be a scopa_env.engine.core.State, got {type(state).__name__}")
        core.legal_action_mask(rules, state.take([game]))  # refuses a state of other rules, naming both
        g = cls(rules)
        st = g._st
        n, s, d = rules.num_players, rules.num_sides, rules.num_cards
        st[HANDS : HANDS + n] = [bits_of(h) for h in state.hands[game]]
        st[TABLE] = bits_of(state.table[game])
        st[PILES : PILES + s] = [bits_of(p) for p in state.piles[game]]
        st[PICKED] = bits_of(state.picked[game])
        st[REVEALED : REVEALED + n] = [bits_of(h) for h in state.revealed[game]]
        st[DECK : DECK + d] = state.deck[game]
        st[SCOPE : SCOPE + s] = state.scope[game]
        st[SCORES : SCORES + s] = state.scores[game]
        st[KNOCKP : KNOCKP + s] = state.knock_points[game]
        st[STOCK] = state.stock_pos[game]
        st[CURRENT] = state.current[game]
        st[DEALER] = state.dealer[game]
        st[PHASE] = state.phase[game]
        st[PENDING] = state.pending[game]
        st[LAST] = state.last_capturer[game]
        st[HAND_NO] = state.hand_no[game]
        st[DEAL_NO] = state.deal_no[game]
        st[WINNER] = state.winner[game]
        st[TTAKE] = state.table_take[game]
        seed = int(state.seed[game])
        st[SEED_LO], st[SEED_HI] = seed & 0xFFFFFFFF, seed >> 32
        return g

    def to_state(self) -> core.State:
        """This game as a ``core.State`` batch of one (new arrays: changing them does not change this game)."""
        c, st = self._c, self._st
        rules = self.rules
        d, n, s = c.d, rules.num_players, rules.num_sides
        sets = [*st[HANDS : HANDS + n].tolist(), int(st[TABLE]), *st[PILES : PILES + s].tolist()]
        sets += [int(st[PICKED]), *st[REVEALED : REVEALED + n].tolist()]
        big = 0  # every card set in one int, d bits each
        for i, x in enumerate(sets):
            big |= x << i * d
        nbits = len(sets) * d
        data = bytearray(b"".join(map(c.byte_bool.__getitem__, big.to_bytes((nbits + 7) // 8, "little"))))
        cards = np.frombuffer(data, dtype=np.bool_)[:nbits].reshape(len(sets), d)
        return core.State(
            hands=cards[:n].reshape(1, n, d),
            table=cards[n].reshape(1, d),
            piles=cards[n + 1 : n + 1 + s].reshape(1, s, d),
            deck=st[DECK : DECK + d].astype(np.int8)[None],
            stock_pos=np.array([st[STOCK]], dtype=np.int16),
            current=np.array([st[CURRENT]], dtype=np.int8),
            dealer=np.array([st[DEALER]], dtype=np.int8),
            phase=np.array([st[PHASE]], dtype=np.int8),
            pending=np.array([st[PENDING]], dtype=np.int8),
            picked=cards[n + 1 + s].reshape(1, d),
            last_capturer=np.array([st[LAST]], dtype=np.int8),
            scope=st[SCOPE : SCOPE + s].astype(np.int16)[None],
            scores=st[SCORES : SCORES + s].astype(np.int16)[None],
            hand_no=np.array([st[HAND_NO]], dtype=np.int32),
            deal_no=np.array([st[DEAL_NO]], dtype=np.int8),
            seed=np.array([self.seed], dtype=np.uint64),
            winner=np.array([st[WINNER]], dtype=np.int8),
            rules_key=np.array([c.key], dtype=np.uint32),
            revealed=cards[n + 2 + s :].reshape(1, n, d),
            knock_points=st[KNOCKP : KNOCKP + s].astype(np.int16)[None],
            table_take=np.array([st[TTAKE]], dtype=np.int8),
        )

    def copy(self) -> SingleGame:
        """A copy of this game (its own state: stepping one leaves the other as it was)."""
        return self._around(self._st.copy())

    @property
    def done(self) -> bool:
        """The match is over."""
        return int(self._st[PHASE]) == _DONE

    # ------------------------------------------------------------------------------------------------ legality

    def legal_bits(self) -> int:
        """The legal actions as a bit mask (0 once the match is over)."""
        c = self._c
        return int(c.legal_bits(c.rc, c.pc, self._st))

    def mask(self) -> npt.NDArray[np.bool_]:
        """(A,) bool: the legal actions (``core.legal_action_mask`` of this game; A = ``rules.num_actions``), a new
        array."""
        c = self._c
        out = np.empty(c.a, dtype=np.bool_)
        c.mod.legal_mask(c.rc, c.pc, self._st, out)
        return out

    def mask_int8(self) -> npt.NDArray[np.int8]:
        """(A,) int8: the legal actions as 0 / 1 (the AEC env's ``action_mask``)."""
        c = self._c
        out = np.empty(c.a, dtype=np.int8)
        c.mod.legal_mask(c.rc, c.pc, self._st, out)
        return out

    # ------------------------------------------------------------------------------------------------ step

    def step(self, action: int) -> SingleStep:
        """Apply one action in place (``core.step`` of one game) and return what it did; ``core.IllegalActionError``
        if it is not legal. A finished match ignores the action (as the core does): nothing moved.

        The envs' hot path (``play``, the same method): one compiled call, and the hand's points read only when the
        move ended the hand (``hand_points`` is None otherwise).
        """
        act = int(action)
        c = self._c
        if not -(1 << 62) < act < 1 << 62:
            self._raise_illegal(act)
        code, seat, done, card, capture, scopa, over = c.play(c.rc, c.pc, self._st, act, self._info)
        if code < 0:
            self._raise_illegal(act)
        if over:
            return self._hand_over()
        return _new(SingleStep, (seat, done == 1, card, capture, scopa == 1, False, None, -1, 0, False, -1, False))

    play = step
    """``step``, under the name the env loops call it by."""

    def play_observed(
        self, action: int, hands_left: int
    ) -> tuple[SingleStep | None, npt.NDArray[np.float32], npt.NDArray[np.int8], int]:
        """``play``, then ``observe_masked`` of the seat to act after the move (new arrays), in one compiled call:
        (the ``SingleStep`` of a move that ended the hand, else None; observation; mask; the seat to act). The mask
        is all zeros once the match is over, or when ``hands_left`` hands, less one if this move ended a hand, are
        none (the AEC env's ``max_hands``)."""
        act = int(action)
        c = self._c
        if not -(1 << 62) < act < 1 << 62:
            self._raise_illegal(act)
        out = _empty(c.obs_size, _F32)
        mask = _empty(c.a, _I8)
        code, over, seat = c.play_observed(c.rc, c.pc, self._st, act, self._info, hands_left, out, mask)
        if code < 0:
            self._raise_illegal(act)
        return (self._hand_over() if over else None), out, mask, seat

    def play_random(self, key: int, seats: int, picks: bool = False) -> SingleStep | None:
        """``RandomAgent`` with key ``key`` (its ``key`` attribute, 64 bits) plays for the seats of the bit mask
        ``seats`` while one of them is to act in the PLAY phase, its cards drawn as ``RandomAgent.act`` draws them
        (the same position-keyed numbers) and played as ``play`` plays them; compiled in one call. Stops after a
        move that ends the hand and returns its ``SingleStep``, else None. Capture picks are left to the caller;
        with ``picks``, it makes them too (``uniform_capture_picks``' draws) but for a near tie of two picks' keys
        (numpy's power decides those: ``RandomAgent.act``), where it stops in the CHOOSE phase."""
        c = self._c
        key = int64_key(key)
        if c.play_random(c.rc, c.pc, self._st, key, seats, self._info, bool(picks)):
            return self._hand_over()
        return None

    def play_then_random(
        self, action: int, key: int, seats: int
    ) -> tuple[SingleStep | None, int, npt.NDArray[np.float32] | None, npt.NDArray[np.bool_] | None]:
        """``play(action)``, then ``play_random(key, seats)``, in one compiled call (``ScopaEnv``'s step against a
        ``RandomAgent``): stops after a move that ends the hand or at a decision that is not a random card play.
        Returns (the ``SingleStep`` of a move that ended the hand, else None; the legal actions' bits where it
        stopped, 0 after a hand ended; the observation and the (A,) bool legal actions of the seat to act when it
        is not one of ``seats`` and the hand goes on, else None and None)."""
        act = int(action)
        c = self._c
        if not -(1 << 62) < act < 1 << 62:
            self._raise_illegal(act)
        out = _empty(c.obs_size, _F32)
        mask = _empty(c.a, _BOOL)
        key = int64_key(key)
        code, over, bits, seen, _ = c.play_then_random(
            c.rc, c.pc, self._st, act, self._info, key, seats, out, mask, False
        )
        if code < 0:
            self._raise_illegal(act)
        if over:
            return self._hand_over(), 0, None, None
        return (None, bits, out, mask) if seen else (None, bits, None, None)

    def _hand_over(self) -> SingleStep:
        """The ``SingleStep`` of the move that just ended the hand, from the kernel's step info."""
        info = self._info
        s, f = self.rules.num_sides, self._c.num_fields
        return SingleStep(
            int(info[I_SEAT]),
            True,
            int(info[I_CARD]),
            int(info[I_CAPTURE]),
            bool(info[I_SCOPA]),
            True,
            info[I_POINTS : I_POINTS + s * f].astype(np.int16).reshape(s, f),
            int(info[I_LEFT_SIDE]),
            int(info[I_LEFTOVER]),
            bool(info[I_MATCH_OVER]),
            int(info[I_WINNER]),
            bool(info[I_NEW_HAND]),
        )

    def _raise_illegal(self, act: int) -> None:
        rules = self.rules
        legal_bits = self.legal_bits()
        legal = [f"{x} ({core.action_name(rules, x)})" for x in range(rules.num_actions) if legal_bits >> x & 1]
        what = f"{act} ({core.action_name(rules, act)})" if 0 <= act < rules.num_actions else str(act)
        variant = core.tables_for(rules).variant.variant_label  # the family's label: cirulla names its variant
        raise core.IllegalActionError(
            f"game 0{variant}: action {what} is illegal for seat {self.current} in phase "
            f"{core.Phase(self.phase).name}; legal actions: {', '.join(legal)}"
        )

    # ------------------------------------------------------------------------------------------------ observation

    def observe_masked(self, seat: int, legal: bool) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int8]]:
        """(``observe(seat)``, ``mask_int8()`` if ``legal`` else all zeros) in one compiled call (the AEC env's
        observation); ``seat`` must be a seat of the variant."""
        c = self._c
        out = np.empty(c.obs_size, dtype=np.float32)
        mask = np.empty(c.a, dtype=np.int8)
        c.observe_masked(c.rc, c.pc, self._st, seat, out, bool(legal), mask)
        return out, mask

    def observe(self, seat: int | None = None) -> npt.NDArray[np.float32]:
        """(obs_size,) float32: ``observation.observe`` of this game for ``seat`` (default: the seat to act)."""
        c = self._c
        n = self.rules.num_players
        seat = int(self._st[CURRENT]) if seat is None else operator.index(seat)
        if not 0 <= seat < n:
            raise ValueError(f"seat must be in 0..{n - 1} (this variant's seats), got {seat}")
        out = np.empty(c.obs_size, dtype=np.float32)
        c.observe(c.rc, self._st, seat, out)
        return out


def new_game(rules: Rules | str, seed: int | None = None) -> SingleGame:
    """The single-game engine for ``rules`` (every variant): ``SingleGame(rules, seed)``."""
    return SingleGame(rules, seed)


def game_from_state(rules: Rules | str, state: core.State, game: int = 0) -> SingleGame:
    """Game ``game`` of a core ``State`` as a ``SingleGame`` (a copy)."""
    return SingleGame.from_state(rules, state, game)
