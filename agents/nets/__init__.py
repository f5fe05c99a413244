"""Neural policies: checkpoints of ``train.py``, their layers as numpy arrays, the exported ``bot``, the exporter,
the network-guided search ``az`` and the RLlib agent."""
