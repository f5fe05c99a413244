"""Agents that look ahead without a network: the look-ahead primitives, the exact end game, ``expert`` (which plays
open end games exactly), the sampled-deal ``pimc`` with its opponent inference, and ``ismcts``."""
