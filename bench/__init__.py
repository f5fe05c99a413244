"""Benchmarks, installed as the package ``scopa_bench`` and runnable as scripts from a checkout:

- ``env_speed.py``: the batched core, the reference engine and the SB3 vector env (``scopa-bench``, ``make bench``);
- ``agents_speed.py``: milliseconds per decision of each agent;
- ``agents_ladder.py``: the agents' strength ladder;
- ``bot_latency.py``: the exported bot's latency.
"""
