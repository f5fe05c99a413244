"""The one compatibility check of a network with the rules it is asked to play: a checkpoint's metadata
(``agents.nets.checkpoint``), a bot's model card (``agents.nets.bot``) and a built agent in a tournament
(``agents.evaluation.entries.build_agent``) are all held to it, with the same checks in the same order and the same
words; only the error type is the caller's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agents.base import AgentSpecError
from agents.cli.shell import TRAIN_PY, python_command
from scopa_env.engine import observation
from scopa_env.rules import VARIANTS, Rules

__all__ = ["check_fit"]


def check_fit(
    where: str,
    made: Mapping[str, Any],
    rules: Rules,
    any_variant: bool = False,
    error: type[Exception] = AgentSpecError,
) -> None:
    """Raise ``error`` (``AgentSpecError`` unless the caller has its own) unless a network made as ``made`` says can
    play ``rules``; ``where`` names it in the message (``checkpoint 'runs/x/best.zip'``, ``the bot``).

    ``made`` holds what its files say: ``variant``, ``obs_version``, ``obs_size``, ``num_cards`` (a key that is
    missing is not checked). In order: the observation version (a network reads one version only), the variant
    (``any_variant``: another variant is accepted when its observations and actions have the same shape), the
    shapes.
    """
    version = observation.observation_version(rules)
    trained = made.get("variant")
    if "obs_version" in made and made["obs_version"] != version:
        theirs = made["obs_version"]
        if trained in VARIANTS and trained != rules.name and observation.observation_version(trained) == theirs:
            raise error(  # a network of another family (a cirulla bot in classic, or the other way round)
                f"{where} was trained for {trained!r}, whose observations (version {theirs}) are not "
                f"{rules.name!r}'s (version {version}); play it in {trained!r} or use one trained for {rules.name!r}"
            )
        raise error(
            f"{where} was made with observation version {theirs}, but this code observes {rules.name!r} with "
            f"version {version}; retrain it with this code "
            f"({python_command(TRAIN_PY, '--variant', str(trained or rules.name))}) or use the code version it was "
            "trained with"
        )
    if trained is not None and trained != rules.name and not any_variant:
        raise error(
            f"{where} was trained for {trained!r}, not {rules.name!r}; play it with --variant {trained}, use one "
            f"trained for {rules.name!r}, or pass any_variant=true (e.g. bot:path=...,any_variant=true) if the "
            "observations have the same shape"
        )
    size = observation.observation_size(rules)
    if made.get("obs_size", size) != size or made.get("num_cards", rules.num_actions) != rules.num_actions:
        raise error(
            f"{where} expects observations of size {made.get('obs_size')} and {made.get('num_cards')} actions, but "
            f"{rules.name!r} has {size} and {rules.num_actions}; use one trained for {rules.name!r}"
        )
