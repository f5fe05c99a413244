"""The one activation table (``agents.nets.mlp.ACTIVATIONS``): every name runs the same in torch and in numpy, so
what trains exports; ``train.py`` refuses a name outside it."""

from __future__ import annotations

import numpy as np
import pytest

from agents.cli.settings import ConfigError
from agents.nets.mlp import ACTIVATIONS, TORCH_ACTIVATIONS
from agents.training.train_config import TrainConfig

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_torch_and_numpy_agree(name: str) -> None:
    x = np.random.default_rng(0).normal(scale=3.0, size=(64, 32)).astype(np.float32)
    want = getattr(torch.nn, ACTIVATIONS[name].torch)()(torch.from_numpy(x)).numpy()
    got = ACTIVATIONS[name].numpy(x)
    assert np.allclose(got, want, atol=1e-6), name
    assert TORCH_ACTIVATIONS[ACTIVATIONS[name].torch] == name


@pytest.mark.parametrize("name", ["gelu", "mish", "softplus"])
def test_training_refuses_an_activation_that_cannot_export(name: str) -> None:
    with pytest.raises(ConfigError, match=rf"activation must be one of relu, tanh.*export.*got '{name}'"):
        TrainConfig(activation=name)
