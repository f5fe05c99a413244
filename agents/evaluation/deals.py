"""The deals of an evaluation. A deal is a game seed: the core deals every hand of a game from it
(``core.reset(rules, seeds)``). ``Deals`` draws them from one seed (SplitMix64), cuts them to a count, and saves them
to or loads them from a JSON deal file, so that several evaluations can play exactly the same games."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from agents.cli.atomic import atomic_write_text
from agents.errors import TournamentError
from scopa_env.rules.shuffle import splitmix64

__all__ = ["DEALS_FORMAT", "MAX_DEAL_SEED", "MODES", "Deals"]

MODES = ("hands", "matches")
"""``hands``: one hand per game, points per hand; ``matches``: whole matches to the variant's target."""
DEALS_FORMAT = "scopa-deals"
"""``format`` field of a deal file."""
MAX_DEAL_SEED = 2**53
"""Generated deal seeds are below this, so they survive any JSON reader (JavaScript's exact integers)."""


@dataclass(frozen=True)
class Deals:
    """The deals (game seeds) of an evaluation, savable to and loadable from a JSON deal file."""

    variant: str
    """Variant the deals were made for."""
    mode: str
    """``hands`` or ``matches``."""
    seeds: npt.NDArray[np.uint64]
    """(n,) uint64 game seeds, unique."""
    source: str = ""
    """Where they came from: ``seed 0`` or a file path."""

    def __len__(self) -> int:
        return int(self.seeds.size)

    @staticmethod
    def generate(variant: str, mode: str, count: int, seed: int) -> Deals:
        """``count`` deal seeds drawn from ``seed`` (SplitMix64, below ``MAX_DEAL_SEED``)."""
        if count < 1:
            raise TournamentError(f"the number of deals must be >= 1, got {count}")
        with np.errstate(over="ignore"):
            base = splitmix64(np.array([seed], dtype=np.uint64))
            seeds = splitmix64((base + np.arange(count, dtype=np.uint64)).astype(np.uint64)) % np.uint64(MAX_DEAL_SEED)
        if np.unique(seeds).size != count:  # never seen; guards the bookkeeping, which keys games by seed
            raise TournamentError(f"seed {seed} gave repeated deals; use another --seed")
        return Deals(variant, mode, seeds, f"seed {seed}")

    def take(self, count: int) -> Deals:
        """The first ``count`` deals."""
        if not 1 <= count <= len(self):
            raise TournamentError(
                f"asked for {count} deals but {self.source or 'the deal set'} has {len(self)}; ask for at most "
                f"{len(self)} or make a bigger deal file with --save-deals"
            )
        return Deals(self.variant, self.mode, self.seeds[:count], self.source)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": DEALS_FORMAT,
            "version": 1,
            "variant": self.variant,
            "mode": self.mode,
            "seeds": [int(s) for s in self.seeds],
        }

    def save(self, path: str | Path) -> Path:
        """Write the deal file (JSON), atomically: a file already there is replaced only once the new one is whole."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(self.to_dict()) + "\n")
        return path

    @staticmethod
    def load(path: str | Path) -> Deals:
        """Read and check a deal file written by ``save`` (or by hand: ``{"variant", "mode", "seeds"}``)."""
        path = Path(path)
        fix = "make one with evaluate.py --save-deals FILE"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise TournamentError(f"deal file {path} does not exist; {fix}") from None
        except IsADirectoryError:
            raise TournamentError(f"deal file {path} is a folder, not a file; give the deal file's path") from None
        except (OSError, ValueError) as e:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
            raise TournamentError(f"deal file {path} is not readable JSON ({e}); {fix}") from None
        except RecursionError:
            raise TournamentError(f"deal file {path} is not a deal file (JSON nested too deeply); {fix}") from None
        if not isinstance(data, dict):
            raise TournamentError(f"deal file {path} must hold a JSON object, got {type(data).__name__}; {fix}")
        if data.get("format", DEALS_FORMAT) != DEALS_FORMAT:
            raise TournamentError(f"deal file {path}: format is {data.get('format')!r}, not {DEALS_FORMAT!r}; {fix}")
        variant, mode, seeds = data.get("variant"), data.get("mode"), data.get("seeds")
        if not isinstance(variant, str):
            raise TournamentError(f"deal file {path}: 'variant' must be a variant name; {fix}")
        if mode not in MODES:
            raise TournamentError(f"deal file {path}: 'mode' must be one of {MODES}, got {mode!r}; {fix}")
        ok = isinstance(seeds, list) and seeds and all(type(s) is int and 0 <= s < 2**64 for s in seeds)
        if not ok:
            raise TournamentError(f"deal file {path}: 'seeds' must be a non-empty list of integers in [0, 2^64); {fix}")
        arr = np.array(seeds, dtype=np.uint64)
        if np.unique(arr).size != arr.size:
            raise TournamentError(f"deal file {path}: 'seeds' repeats some seeds; every deal must be distinct")
        return Deals(variant, mode, arr, str(path))
