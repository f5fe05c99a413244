"""The single-game kernel's calls for the envs (numba, ``cache=True``), compiled on its rules
(``scopa_env.engine._kernel_jit``) and observation (``scopa_env.engine._kernel_observe``): the envs' fused calls (the
AEC env's step with its next observation, ``ScopaEnv``'s step with its random opponents' replies), the random
player's cards and picks (``RandomAgent``'s position-keyed stream), the plies left in a hand and the open book.
``scopa_env.engine.kernel`` is their face. Each reproduces what it replaced number for number:
``tests/test_kernel.py`` and ``tests/test_kernel_players.py`` check it.

numba keys each module's disk cache on that module's file alone, and the functions here compile the rules' functions
(and the layout's constants) into themselves: ``scopa_env.engine.kernel.drop_stale_cache`` drops this module's cache
when ``_kernel_jit.py`` (or ``_kernel_observe.py``, ``_kernel_layout.py``, ``shuffle.py``) is newer.
"""

from __future__ import annotations

import numpy as np

from scopa_env.engine._kernel_jit import (
    NO_END,
    game_seed,
    legal_bits,
    lowbit,
    njit,
    popcount,
    splitmix,
    step,
)
from scopa_env.engine._kernel_layout import (
    CHOOSE,
    CURRENT,
    DEAL_NO,
    DMAX,
    HAND_NO,
    HANDS,
    I_HAND_OVER,
    I_MATCH_OVER,
    INFO_SIZE,
    PENDING,
    PHASE,
    PICKED,
    PLAY,
    R_CIRULLA,
    R_D,
    R_FIFTEENS,
    R_N,
    R_NACTIONS,
    R_R,
    R_RANKMASK,
    STOCK,
    TABLE,
)
from scopa_env.engine._kernel_observe import observe
from scopa_env.rules.shuffle import GOLDEN, MIX2

# ----------------------------------------------------------------------------------------------- the envs' calls


@njit(cache=True)
def observe_masked(
    rc: np.ndarray, pc: np.ndarray, st: np.ndarray, seat: int, out: np.ndarray, legal: bool, mask: np.ndarray
) -> None:
    """``observe`` into ``out``, and the legal actions as 0 / 1 into ``mask`` (all 0 unless ``legal``) in one call."""
    observe(rc, st, seat, out)
    bits = legal_bits(rc, pc, st) if legal else 0
    for a in range(rc[R_NACTIONS]):
        mask[a] = (bits >> a) & 1


@njit(cache=True)
def play_observed(
    rc: np.ndarray,
    pc: np.ndarray,
    st: np.ndarray,
    action: int,
    info: np.ndarray,
    hands_left: int,
    out: np.ndarray,
    mask: np.ndarray,
) -> tuple[int, int, int]:
    """``step``, then (unless the action was illegal) ``observe_masked`` of the seat to act after it, its legal
    actions unless ``hands_left`` hands, less one if this move ended a hand, are none: the AEC env's step together
    with the observation its next ``last()`` asks for. Returns (``step``'s code, the hand ended, the seat to act)."""
    code = step(rc, pc, st, action, info)
    if code >= 0:
        observe_masked(rc, pc, st, st[CURRENT], out, hands_left - info[I_HAND_OVER] > 0, mask)
    return code, info[I_HAND_OVER], st[CURRENT]


# ----------------------------------------------------------------------------------------------- random play


@njit(cache=True)
def position_key(rc: np.ndarray, st: np.ndarray, key: int) -> np.uint64:
    """``policy.position_key`` of the game (``PositionStreams``' key of a game alone in its position): the agent's
    ``key`` (below 2**63), the seed, then hand, deal, stock position, cards in all hands, cards picked, phase and
    seat to act."""
    cards = 0
    for i in range(rc[R_N]):
        cards += popcount(st[HANDS + i])
    h = splitmix(game_seed(st) ^ np.uint64(key))
    for part in (st[HAND_NO], st[DEAL_NO], st[STOCK], cards, popcount(st[PICKED]), st[PHASE], st[CURRENT]):
        h = splitmix(h ^ (np.uint64(part + 1) * GOLDEN))
    return h


@njit(cache=True)
def random_card(rc: np.ndarray, st: np.ndarray, key: int) -> int:
    """``RandomAgent``'s card in the PLAY phase (``policy.uniform_legal`` on ``PositionStreams``' first draw of the
    game's position, ``policy.position_random(position_key, 1, D)``): the card of the hand with the largest number,
    the first of equals. The numbers are compared as their 53-bit integers, in the same order as the floats."""
    base = splitmix(position_key(rc, st, key) + GOLDEN)
    hand = st[HANDS + st[CURRENT]]
    best = -1
    top = np.uint64(0)
    while hand:
        x = lowbit(hand)
        hand &= hand - 1
        z = card_draw(base, x)
        if best < 0 or z > top:
            best, top = x, z
    return best


@njit(cache=True)
def card_draw(base: np.uint64, x: int) -> np.uint64:
    """Card ``x``'s number of ``policy.position_random``'s row whose base is ``base``, as its 53-bit integer (the
    float is it times 2 ** -53)."""
    z = base + np.uint64(x + 1) * GOLDEN
    z = (z ^ (z >> np.uint64(31))) * MIX2
    z ^= z >> np.uint64(29)
    return z >> np.uint64(11)


_SUB_STREAM = np.uint64(0xC4A5E)  # policy._SUB_STREAM: the CHOOSE-phase picks' stream
_PICK_TIE = 1e-9
"""Relative gap under which two picks' keys count as tied (``random_pick`` then leaves the pick to numpy)."""


@njit(cache=True)
def random_pick(rc: np.ndarray, pc: np.ndarray, st: np.ndarray, key: int) -> int:
    """``RandomAgent``'s capture pick in the CHOOSE phase (``policy.uniform_capture_picks`` on the picks' stream of
    the position, as ``RandomAgent.act`` draws it): each candidate card's weight is the number of captures whose
    lowest card beyond the picks is that card (uniform over the legal cards when the pending card's rank is on the
    table), and the pick is the argmax of ``u ** (1 / weight)``, ``u`` the card's draw. Returns -1, leaving the pick
    to the Python one (numpy's power, whose last bit may differ from libm's), when the two best keys are within a
    relative ``_PICK_TIE`` of each other, when no card has a weight, and for the fifteens' rules (cirulla's picks
    are drawn elsewhere)."""
    if rc[R_FIFTEENS] or rc[R_CIRULLA]:
        return -1
    r = rc[R_R]
    table, picked, pending = st[TABLE], st[PICKED], st[PENDING]
    weights = np.zeros(DMAX, dtype=np.float64)
    same = table & rc[R_RANKMASK + pending % r]
    if same:  # single cards of the pending card's rank: uniform over the legal picks
        cands = legal_bits(rc, pc, st)
        rest = cands
        while rest:
            weights[lowbit(rest)] = 1.0
            rest &= rest - 1
    else:
        target = pending % r + 1
        p = picked
        top = -1
        while p:
            x = lowbit(p)
            target -= x % r + 1
            top = x
            p &= p - 1
        cands = table & ~picked
        counts = np.zeros(target + 1, dtype=np.float64)  # subsets of the available cards above k adding up to t
        counts[0] = 1.0
        for k in range(rc[R_D] - 1, -1, -1):  # the available cards, from the highest id down
            if not (cands >> k) & 1:
                continue
            v = k % r + 1
            if v > target:
                continue
            if k > top:
                weights[k] = counts[target - v]
            for t in range(target, v - 1, -1):
                counts[t] += counts[t - v]
    base = splitmix((position_key(rc, st, key) ^ _SUB_STREAM) + GOLDEN)  # position_random(h, 1, D, sub=True)
    best, best_key, second = -1, -1.0, -1.0
    rest = cands
    while rest:
        x = lowbit(rest)
        rest &= rest - 1
        w = weights[x]
        if w <= 0:
            continue
        u = np.float64(card_draw(base, x)) * 1.1102230246251565e-16  # 2 ** -53
        k = u ** (1.0 / w)
        if k > best_key:
            best, second, best_key = x, best_key, k
        elif k > second:
            second = k
    if best < 0 or second >= best_key * (1.0 - _PICK_TIE):
        return -1
    return best


@njit(cache=True)
def play_random(
    rc: np.ndarray, pc: np.ndarray, st: np.ndarray, key: int, seats: int, info: np.ndarray, picks: bool | np.bool_
) -> bool:
    """``RandomAgent`` (``key``) plays the seats of the bit mask ``seats`` while one of them is to act in the PLAY
    phase (``random_card``, then ``step``), and with ``picks`` in the CHOOSE phase too (``random_pick``, up to a pick
    it leaves to Python); stops after a move that ends the hand (``info`` holds it) and returns whether one did."""
    while (seats >> st[CURRENT]) & 1:
        phase = st[PHASE]
        if phase == PLAY:
            action = random_card(rc, st, key)
        elif phase == CHOOSE and picks:
            action = random_pick(rc, pc, st, key)
            if action < 0:
                return False
        else:
            return False
        step(rc, pc, st, action, info)
        if info[I_HAND_OVER]:
            return True
    return False


@njit(cache=True)
def play_then_random(
    rc: np.ndarray,
    pc: np.ndarray,
    st: np.ndarray,
    action: int,
    info: np.ndarray,
    key: int,
    seats: int,
    out: np.ndarray,
    mask: np.ndarray,
    through: bool,
) -> tuple[int, bool, int, bool, bool]:
    """``ScopaEnv``'s step against a ``RandomAgent``: ``step`` of the learner's ``action``, then ``play_random`` for
    the seats of ``seats``, their capture picks included (``play_random`` with ``picks``). Stops after a move that
    ends the hand (``info`` holds it) or at a decision that is not a random card play nor a pick it makes; stopped
    at a seat outside ``seats`` with the hand going on, writes that seat's observation into ``out`` and its legal
    actions into ``mask``. With ``through``, the first hand that ends without ending the match does not stop it:
    its step info is kept in ``info[INFO_SIZE : 2 * INFO_SIZE]`` (``info`` must be that long) and play goes on in
    the next hand. Returns (``step``'s code, a hand ended where it stopped, the legal actions' bits where it
    stopped, 0 after a hand ended; observed; a hand's info was kept)."""
    code = step(rc, pc, st, action, info)
    if code < 0:
        return code, False, 0, False, False
    kept = False
    ended = info[I_HAND_OVER] != 0
    while True:
        if ended:
            if kept or not through or info[I_MATCH_OVER]:
                return code, True, 0, False, kept
            for i in range(INFO_SIZE):
                info[INFO_SIZE + i] = info[i]
            kept = True
        ended = play_random(rc, pc, st, key, seats, info, np.bool_(True))
        if not ended:
            break
    seat = st[CURRENT]
    observed = not (seats >> seat) & 1
    bits = legal_bits(rc, pc, st)
    if observed:
        observe(rc, st, seat, out)
        for a in range(rc[R_NACTIONS]):
            mask[a] = (bits >> a) & 1
    return code, False, bits, observed, kept


# ----------------------------------------------------------------------------------------------- plies left


@njit(cache=True)
def remaining_plies(rc: np.ndarray, st: np.ndarray) -> int:
    """``state_moves.remaining_plies`` of one game: moves left in the hand, ``NO_END`` while the stock is not empty."""
    if st[STOCK] < rc[R_D]:
        return NO_END
    total = 0
    for i in range(rc[R_N]):
        total += popcount(st[HANDS + i])
    return total + (st[PHASE] == CHOOSE)


@njit(cache=True)
def is_open(rc: np.ndarray, st: np.ndarray) -> bool:
    """``state_moves.is_open`` of one game: stock empty and at most one other seat holds cards."""
    if st[STOCK] < rc[R_D]:
        return False
    others = 0
    for i in range(rc[R_N]):
        if i != st[CURRENT] and st[HANDS + i] != 0:
            others += 1
    return others <= 1
