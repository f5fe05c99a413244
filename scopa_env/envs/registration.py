"""Gymnasium ids for every variant: ``gymnasium.make("scopa/Classic-v0", opponents="greedy")``.

``import scopa_env`` registers one id per named variant of ``scopa_env.rules.VARIANTS`` (``register_envs``; calling
it again is harmless). The id is ``scopa/<Name>-v0``, ``<Name>`` being the variant's name in CamelCase: every
``-``-separated part capitalised and joined (``classic`` -> ``Classic``, ``classic-15`` -> ``Classic15``,
``scopa-d-assi`` -> ``ScopaDAssi``, ``scopone-scientifico`` -> ``ScoponeScientifico``, ``simple-4-teams`` ->
``Simple4Teams``). ``ENV_IDS`` maps every id to its variant, ``env_id`` goes the other way.

Each id makes ``scopa_env.envs.gym.ScopaEnv`` for its variant; every other ``ScopaEnv`` argument is a keyword of
``gymnasium.make`` (``opponents``, ``partner``, ``learner_seat``, ``reward``, ``episode``, ``max_hands``,
``illegal``, ``render_mode``...). ``gymnasium.make_vec(id, num_envs=B)`` gives B such envs in Gymnasium's
``SyncVectorEnv`` (or ``AsyncVectorEnv`` with ``vectorization_mode="async"``). Without importing ``scopa_env``
first, name the module in the id: ``gymnasium.make("scopa_env:scopa/Classic-v0")`` (Gymnasium 1.x has no plugin
entry points, so the ids exist once the package is imported).

Importing this module costs the import of Gymnasium only: the env classes load on the first ``make``.
"""

from __future__ import annotations

from gymnasium.envs.registration import register, registry

from scopa_env.rules import VARIANTS, Rules, get_rules

__all__ = [
    "ENTRY_POINT",
    "ENV_IDS",
    "NAMESPACE",
    "VERSION",
    "env_id",
    "register_envs",
    "variant_of",
]

NAMESPACE = "scopa"
VERSION = 0
ENTRY_POINT = "scopa_env.envs.gym:make_registered"
"""Builds ``scopa_env.envs.gym.ScopaEnv`` for the id's variant, refusing a ``variant=`` keyword that names another."""


def env_id(variant: str | Rules) -> str:
    """The Gymnasium id of a named variant: ``env_id("scopone-scientifico") == "scopa/ScoponeScientifico-v0"``."""
    name = get_rules(variant).name
    if name not in VARIANTS:
        raise ValueError(f"variant {name!r} is not a named variant, so it has no id; known: {', '.join(VARIANTS)}")
    camel = "".join(part[:1].upper() + part[1:] for part in name.split("-"))
    return f"{NAMESPACE}/{camel}-v{VERSION}"


ENV_IDS: dict[str, str] = {env_id(v): v for v in VARIANTS}
"""Every registered id -> its variant name, in ``VARIANTS`` order."""


def variant_of(id: str) -> str:
    """The variant name of a registered id (``"scopa/Classic-v0"`` -> ``"classic"``); ``ValueError`` otherwise."""
    if id not in ENV_IDS:
        raise ValueError(f"{id!r} is not a Scopa id; the ids are: {', '.join(ENV_IDS)}")
    return ENV_IDS[id]


def register_envs() -> None:
    """Register every id of ``ENV_IDS`` with Gymnasium (ids already registered are left alone)."""
    for id, variant in ENV_IDS.items():
        if id not in registry:
            register(id=id, entry_point=ENTRY_POINT, kwargs={"id_variant": variant})
