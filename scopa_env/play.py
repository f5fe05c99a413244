"""``python -m scopa_env.play``: the terminal game, under the environment package's name.

The game itself (its opponents, and the shipped bot each variant plays by default) lives in the ``agents`` package,
which ``scopa_env`` never imports (docs/architecture.md). This module finds it the way ``scopa_env.policy`` finds the
agent specs: through an entry point the installed project registers (group ``scopa.play``, ``pyproject.toml``), so
``python -m scopa_env.play --variant scopone-scientifico`` is ``python -m agents.play --variant scopone-scientifico``
(and the installed ``scopa-play``): the variant's shipped bot is the default opponent, else ``expert``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from importlib.metadata import entry_points

from scopa_env.shell import python_command

__all__ = ["ENTRY_POINT_GROUP", "find_game", "main"]

ENTRY_POINT_GROUP = "scopa.play"


def find_game() -> Callable[..., int] | None:
    """The terminal game's ``main(argv)`` offered by an installed package, or None when none is importable here."""
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            game = ep.load()
        except ImportError:  # the package that offers it is not importable in this environment
            continue
        if callable(game):
            return game  # type: ignore[no-any-return]
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the terminal game with ``argv`` (``--help`` lists its options); status 2 when no game is installed."""
    game = find_game()
    if game is None:
        print(
            "python -m scopa_env.play: error: the terminal game comes with the project's agents package, which is "
            f"not installed here (no importable '{ENTRY_POINT_GROUP}' entry point); install the project with "
            f"'pip install .' (or 'make setup'), or run '{python_command('-m', 'agents.play')}' from a checkout",
            file=sys.stderr,
        )
        return 2
    return int(game(list(sys.argv[1:] if argv is None else argv)) or 0)


if __name__ == "__main__":
    sys.exit(main())
