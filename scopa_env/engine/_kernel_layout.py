"""The single-game kernel's array layouts, named once: where each field of a game lies in the kernel's (``STATE_SIZE``,)
int64 state, each item of a step's info in its (``INFO_SIZE``,) int64 info, and each of the rules' constants in
``rc`` (``scopa_env.engine.kernel._rules_constants`` fills it). The compiled code (``scopa_env.engine._kernel_jit``,
``_kernel_observe``, ``_kernel_calls``, and the agents' ``agents.search.kernel_search``) and its Python faces
(``scopa_env.engine.kernel``, ``scopa_env.engine.single``, ``agents.search.compiled``) all read them from here, by
name; this module imports nothing, so that the faces name the layout without loading numba.

Card sets are bit masks (bit ``c`` for card ``c``), the seed is kept as two 32-bit halves.

numba freezes these values into the compiled code, and keys its disk cache on the compiling module's file alone:
``scopa_env.engine.kernel.drop_stale_cache`` drops the kernel's cache (and the search's) where this file is newer.
"""

from __future__ import annotations

# ----------------------------------------------------------------------------------------------- state layout

NMAX, SMAX, DMAX = 8, 8, 52
HANDS = 0  # N hands
TABLE = 8
PILES = 9  # S piles
PICKED = 17
REVEALED = 18  # N revealed sets (cirulla)
DECK = 26  # D card ids
SCOPE = 78  # S
SCORES = 86  # S
KNOCKP = 94  # S
STOCK = 102
CURRENT = 103
DEALER = 104
PHASE = 105
PENDING = 106
LAST = 107
HAND_NO = 108
DEAL_NO = 109
WINNER = 110
TTAKE = 111
SEED_LO = 112
SEED_HI = 113
STATE_SIZE = 114

PLAY, CHOOSE, DONE, KNOCK = 0, 1, 2, 3

# ----------------------------------------------------------------------------------------------- step info layout

I_ACTED = 0
I_SEAT = 1
I_MOVE_DONE = 2
I_CARD = 3
I_CAPTURE = 4
I_SCOPA = 5
I_HAND_OVER = 6
I_LEFT_SIDE = 7
I_LEFTOVER = 8
I_MATCH_OVER = 9
I_WINNER = 10
I_NEW_HAND = 11
I_KNOCK = 12
I_TTAKE = 13
I_ACE_ALL = 14
I_POINTS = 16  # S x F hand points, row by side
INFO_SIZE = 16 + SMAX * 9

# ----------------------------------------------------------------------------------------------- rules constants

R_N = 0
R_S = 1
R_D = 2
R_R = 3
R_TABLE = 4
R_NDEALS = 5
R_TARGET = 6
R_ACE_ALL = 7
R_SIMPLE_PRIM = 8
R_VOID_KINGS = 9
R_SHARED = 10
R_FIFTEENS = 11
R_KNOCKS = 12
R_TTAKE = 13
R_VOID_ACES = 14
R_NAPOLI = 15
R_MAJORITY = 16
R_SETTE = 17
R_SEVEN = 18
R_KING = 19
R_MATTA = 20
R_MAXHAND = 21
R_CIRULLA = 22
R_NFIELDS = 23
R_NACTIONS = 24
R_FIT_S = 25  # offsets in rc of the move tables' fit_start, fit_len, fit_parts (sums by target and present ranks)
R_FIT_L = 26
R_FIT_P = 27
R_FF_S = 28  # ... and f_start, f_len, f_parts (cirulla's fifteens by card value and present ranks)
R_FF_L = 29
R_FF_P = 30
R_MASKW = 31  # 2 ** (R - 1): the width of fit_start's rows
R_DEALS = 32  # 8
R_SIDE = 40  # 8
R_PRIM = 48  # 13 primiera values by rank
R_LK_BEGIN = 64  # 16: lookup partitions of each target (all parts)
R_LK_LEN = 80
R_SUM_BEGIN = 96  # 16: the move tables' sum partitions of each target
R_SUM_LEN = 112
R_FIF_BEGIN = 128  # 16: the fifteens of each card value
R_FIF_LEN = 144
R_RANKMASK = 160  # 13: the cards of each rank
R_RUN = 176  # 7: the napoli run's coins (cirulla)
R_NAP = 184  # 3: Ad 2d 3d
R_GRANDE = 188  # 3: Jd Qd Kd
R_GUARD = 191  # a guard bit above each rank's 4-bit count in packed rank counts
RC_SIZE = 192
"""The fixed part of ``rc``; the move tables' CSR lists follow it."""
