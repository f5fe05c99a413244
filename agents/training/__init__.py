"""Training: the settings of ``train.py``, the PPO trainer and its league, shaping, warm start by imitation,
expert iteration, run directories and their learning curves."""
