"""Scopa as reinforcement-learning environments: the batched rules core and its env faces.

Importing the package registers the Gymnasium ids ``scopa/<Variant>-v0`` (``scopa_env.envs.registration``); it imports
Gymnasium and the variant table only, never the envs' heavier dependencies.
"""

from scopa_env.envs.registration import register_envs

register_envs()
