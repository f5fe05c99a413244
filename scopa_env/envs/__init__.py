"""The env faces: PettingZoo AEC and parallel, Gymnasium, the stable-baselines3 vector env, RLlib, interop, the
Gymnasium ids."""
