"""Fit a fresh network, of any size, to the soft search targets that expert-iteration runs have labelled.

An expert-iteration run with ``soft_temperature`` (``configs/scopone_exit.yaml``) keeps every decision's observation,
legal mask and the teacher's action values in ``RUN/data/iter_K.npz``. Its own network is fine-tuned on a sliding
window of them; this command fits a new network (``arch``: hidden sizes) on all of them at once, from scratch, with
the soft cross-entropy of ``search_labels.soft_targets`` and a cosine learning-rate schedule, holds out ``holdout``
of the rows to report the fit, and writes a torch-free bot directory (``policy.npz`` and ``model_card.json``) that
``bot:path=DIR``, ``evaluate.py`` and ``agents.nets.export`` (for ONNX and a full model card) read.

``inputs: sweep`` fits the network on the observation plus ``agents.nets.sweep_inputs`` (per card value, the unseen
cards that could sweep the table that play leaves) and folds their computation into three hand-set first layers:
the bot is still a plain MLP over the observation. ``augment`` fits every epoch's rows under a random relabelling
of the three non-coin suits (``agents.training.suit_symmetry``). ``init`` starts from a network instead of fresh
weights (a later leg's labels fitted onto the network that collected them, when the earlier legs' labels are gone).

    python -m agents.training.distil runs/scopone-scientifico__scopone-exit__0 --arch 512,512,512 --out runs/distil
    python evaluate.py --variant scopone-scientifico --gauntlet "d=bot:path=runs/distil,endgame=8" --agents pimc
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from agents.cli.settings import ConfigError, add_field_options, parse_options, path_arguments, setting
from scopa_env.errors import ScopaEnvError
from scopa_env.rules import get_rules

__all__ = ["DistilOptions", "fit_network", "load_labels", "main", "save_distilled_checkpoint"]


@dataclasses.dataclass
class DistilOptions:
    """The command line's options (``python -m agents.training.distil --help``)."""

    runs: list[Path] = path_arguments(
        "runs",
        "expert-iteration run directories whose data/iter_K.npz hold the teacher's action values, or labels files "
        "(python -m agents.training.label_store), in any mix",
    )
    out: Path = setting(Path("runs/distil"), "bot directory to write (policy.npz, model_card.json)", parse=Path)
    arch: str = setting("512,512,512", "hidden layer sizes, comma-separated")
    epochs: int = setting(10, "passes over the rows")
    temperature: float = setting(0.3, "softmax temperature of the soft targets (the teacher's values in points)")
    learning_rate: float = setting(1e-3, "Adam's learning rate at the start (cosine decay to 0 over the epochs)")
    batch_size: int = setting(1024, "rows per gradient step")
    holdout: float = setting(0.05, "share of the rows held out to report the fit")
    threads: int = setting(2, "torch threads")
    seed: int = setting(0, "seed of the network's initial weights, the split and the order of the rows")
    name: str = setting("distil", "the bot's name in its model card")
    endgame: int = setting(8, "open end-game plies the bot solves exactly by default (its card's endgame; 0: off)")
    inputs: str = setting(
        "obs",
        "obs: the observation; sweep: plus, per card value, the unseen cards that could sweep the table the play "
        "leaves and the unseen cards by rank (agents.nets.sweep_inputs), computed by three hand-set first layers",
        choices=("obs", "sweep"),
    )
    init: str = setting(
        "",
        "start from this network (a bot directory or a checkpoint .zip of a variant with the same observations, a "
        "ReLU MLP; with --inputs sweep, one fitted with them) instead of fresh weights: its sizes replace --arch",
    )
    augment: bool = setting(
        False,
        "each epoch, every row under one of the 6 permutations of the three non-coin suits, drawn at random (a "
        "symmetry of the game: agents.training.suit_symmetry)",
    )


def load_labels(runs: Sequence[Path]) -> tuple[str, dict[str, npt.NDArray[Any]]]:
    """The variant and the concatenated rows (``obs``, ``mask``, ``action``, ``values``) of the runs' data files and
    the labels files among ``runs`` (replayed), in the order given. Every file is read as data only, its sizes checked
    before anything is allocated (``label_store.read_run_config``, ``read_run_data``, ``load_label_file``);
    ``ConfigError`` names the file and what is wrong."""
    from agents.training.label_store import load_label_file, read_run_config, read_run_data, run_data_files

    variant = None
    parts: list[dict[str, npt.NDArray[Any]]] = []
    for run in runs:
        if run.is_file():  # a labels file (agents.training.label_store): replayed into the same rows
            variant, rows = load_label_file(run, progress=True, variant=variant)
            parts.append(rows)
            continue
        v, _ = read_run_config(run)
        if variant is not None and v != variant:
            raise ConfigError(f"{run} is a {v} run, the others {variant}: fit one variant at a time")
        variant = v
        parts += [read_run_data(path, get_rules(v)) for path, _ in run_data_files(run)]
    if variant is None or not parts:
        raise ConfigError(f"no data/iter_K.npz in {', '.join(map(str, runs))}")
    return variant, {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def fit_network(
    variant: str, data: dict[str, npt.NDArray[Any]], opts: DistilOptions, log: Any = print
) -> tuple[Any, dict[str, float]]:
    """A fresh SB3 actor-critic policy with hidden sizes ``opts.arch``, its actor fitted to the soft targets; returns
    it and the last epoch's held-out loss and agreement (the share of rows whose most probable action is the
    target's)."""
    import torch

    from agents.nets.checkpoint import new_policy
    from agents.training.imitation import TeacherData, policy_heads, pretrain_policy, soft_cross_entropy
    from agents.training.search_labels import soft_targets

    rules = get_rules(variant)
    torch.manual_seed(opts.seed)
    torch.set_num_threads(opts.threads)
    hidden = [int(x) for x in opts.arch.split(",")]
    if opts.inputs == "sweep":
        from agents.nets.sweep_inputs import sweep_inputs

        data = {**data, "obs": np.concatenate([data["obs"], sweep_inputs(rules, data["obs"])], axis=1)}
    if opts.init:
        policy = _init_policy(rules, opts.init, opts.inputs)
        log(f"starting from the network of {opts.init}")
    else:
        policy = new_policy(rules, {"pi": hidden, "vf": hidden}, "ReLU", inputs=int(data["obs"].shape[1]))
    targets = soft_targets(data["values"], data["mask"], data["action"], opts.temperature)
    n = int(data["action"].shape[0])
    order = np.random.default_rng(opts.seed).permutation(n)
    held, train = order[: int(n * opts.holdout)], order[int(n * opts.holdout) :]
    rows = TeacherData(
        data["obs"][train].astype(np.float32, copy=False),  # the indexing copies already
        data["mask"][train],
        data["action"][train].astype(np.int64, copy=False),
        np.zeros(train.size, dtype=np.float32),
    )
    train_targets = targets[train]
    held_obs = torch.as_tensor(data["obs"][held].astype(np.float32, copy=False))
    held_mask, held_targets = torch.as_tensor(data["mask"][held]), torch.as_tensor(targets[held])
    stats: dict[str, float] = {}
    for epoch in range(opts.epochs):
        t0 = time.perf_counter()
        lr = opts.learning_rate * 0.5 * (1 + math.cos(math.pi * epoch / opts.epochs))
        epoch_rows, epoch_targets = rows, train_targets
        if opts.augment:
            from agents.training.suit_symmetry import permute_rows

            arrays = {"obs": rows.obs, "mask": rows.mask, "action": rows.action, "targets": epoch_targets}
            moved = permute_rows(rules, arrays, np.random.default_rng([opts.seed, epoch]))
            epoch_rows = TeacherData(moved["obs"], moved["mask"], moved["action"], rows.ret)
            epoch_targets = moved["targets"]
            del moved, arrays  # one permuted copy of the rows at a time (the last epoch's is freed with epoch_rows)
        fit = pretrain_policy(
            policy, epoch_rows, epochs=1, batch_size=opts.batch_size, learning_rate=lr, value_coef=0.0,
            seed=opts.seed + epoch, targets=epoch_targets,
        )  # fmt: skip
        del epoch_rows, epoch_targets
        stats = {"train_loss": fit["policy_loss"], "train_agreement": fit["accuracy"]}
        if held.size:
            with torch.no_grad():
                logits, _ = policy_heads(policy, held_obs, held_mask)
                stats["held_out_loss"] = float(soft_cross_entropy(logits, held_targets))
                stats["held_out_agreement"] = float((logits.argmax(1) == held_targets.argmax(1)).float().mean())
        shown = ", ".join(f"{k} {v:.3f}" for k, v in stats.items())
        log(f"epoch {epoch + 1}/{opts.epochs} (learning rate {lr:.1e}): {shown} ({time.perf_counter() - t0:.0f} s)")
    if opts.inputs == "sweep":
        policy = _fold_sweep_inputs(rules, policy, data["obs"][held[:4096] if held.size else train[:4096]])
    return policy, stats


def _init_policy(rules: Any, path: str, inputs: str) -> Any:
    """A policy whose actor is the network at ``path`` (``--init``), over the fit's inputs: a network fitted with
    sweep inputs is unfolded (``agents.nets.sweep_inputs.unfold``); raises ``ConfigError``. Its input width needs no
    check: ``open_network`` checks it against the observation, and ``unfold`` gives the sweep rows' width."""
    from agents.errors import ScopaError
    from agents.nets.checkpoint import policy_from_layers
    from agents.nets.weights import open_network

    try:
        net = open_network(rules, path, any_variant=True)  # a warm start: another variant of the same shapes will do
    except (ScopaError, OSError, ValueError) as e:
        raise ConfigError(f"--init: {e}") from e
    if net.activation != "relu":
        raise ConfigError(f"--init: {path} is a {net.activation} network; distil fits ReLU networks")
    layers = [(w.T, b) for w, b in net.layers]  # the bot's (in, out) weights as torch's (out, in)
    if inputs == "sweep":
        from agents.nets.sweep_inputs import unfold

        try:
            layers = unfold(rules, layers)
        except ValueError as e:
            raise ConfigError(f"--init: {path}: {e}; fit it with --inputs obs") from e
    return policy_from_layers(rules, layers, "ReLU")


def _fold_sweep_inputs(rules: Any, fitted: Any, probe: npt.NDArray[np.float32]) -> Any:
    """The fitted policy (over ``[obs, sweep_inputs]``) as a policy over the observation alone: the hand-set sweep
    layers in front (``agents.nets.sweep_inputs.compose``); checked on ``probe`` rows (augmented observations)."""
    import torch

    from agents.nets.checkpoint import policy_from_layers
    from agents.nets.mlp import ExportError
    from agents.nets.sweep_inputs import compose, sweep_input_size
    from agents.training.expert_iteration import actor_layers

    policy = policy_from_layers(rules, compose(rules, actor_layers(fitted)[0]), "ReLU", vf=[64, 64])
    with torch.no_grad():
        size = probe.shape[1] - sweep_input_size(rules)
        want = fitted.action_net(fitted.mlp_extractor.forward_actor(torch.as_tensor(probe)))
        got = policy.action_net(policy.mlp_extractor.forward_actor(torch.as_tensor(probe[:, :size])))
    gap = float((want - got).abs().max()) if len(probe) else 0.0
    if gap > 1e-3 * max(1.0, float(want.abs().max())):
        raise ExportError(f"the folded sweep layers change the network's logits by up to {gap:.2g}")
    return policy


def save_distilled_checkpoint(policy: Any, path: Path, variant: str, rows: int, endgame: int) -> Path:
    """The fitted policy as a ``train.py``-format checkpoint (weights and JSON only), which ``agents.nets.export``
    turns into a full bot directory (ONNX included)."""
    from agents.nets.checkpoint import checkpoint_meta
    from agents.training.expert_iteration import activation_name, save_policy_checkpoint

    config = {"activation": activation_name(policy), "algorithm": "distil", "endgame": endgame}
    meta = checkpoint_meta(variant, rows, kind="distil", endgame=endgame, config=config)
    return save_policy_checkpoint(policy, path, meta)


def _check_out(out: Path) -> None:
    """Refuse, before the labels are read and fitted, a bot folder that cannot be made or written: a file, or under
    one, or in a folder that is not writable (``tournament.check_output_file`` on its weights' path)."""
    from agents.evaluation.tournament import check_output_file
    from agents.nets.weights import WEIGHTS

    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file; give a folder for the bot (it is made if missing)")
    check_output_file(out / WEIGHTS, "--out", WEIGHTS)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m agents.training.distil",
        description="Fit a fresh network to the soft search targets of expert-iteration runs; write a bot directory.",
    )
    add_field_options(parser, DistilOptions, typed=True, once=False)
    opts = parse_options(parser, DistilOptions, list(argv) if argv is not None else None)
    try:
        if not all(int(x) > 0 for x in opts.arch.split(",")):
            raise ValueError
    except ValueError:
        parser.error(f"--arch: positive hidden sizes separated by commas (512,512,512), got {opts.arch!r}")
    if (
        opts.epochs < 1
        or opts.endgame < 0
        or opts.temperature <= 0
        or opts.learning_rate <= 0
        or not 0 <= opts.holdout < 1
    ):
        parser.error(
            "--epochs must be >= 1, --endgame >= 0, --temperature and --learning-rate > 0, --holdout in [0, 1)"
        )
    try:
        _check_out(opts.out)
        variant, data = load_labels(opts.runs)
    except ScopaEnvError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    from agents.cli.threads import pin_blas_threads

    pin_blas_threads()
    print(f"{variant}: {len(data['action']):,} labelled decisions from {len(opts.runs)} run(s)", flush=True)
    try:
        policy, stats = fit_network(variant, data, opts, log=lambda s: print(s, flush=True))
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    from agents.nets.bot import new_card, write_numpy_export
    from agents.training.expert_iteration import actor_layers

    layers, activation = actor_layers(policy)
    card = new_card(
        get_rules(variant),
        layers,
        activation,
        name=opts.name,
        endgame=opts.endgame,
        distilled={
            "runs": [str(r) for r in opts.runs],
            "rows": len(data["action"]),
            **{k: (str(v) if isinstance(v, Path) else v) for k, v in dataclasses.asdict(opts).items() if k != "runs"},
            **{k: round(v, 4) for k, v in stats.items()},
        },
    )
    out = write_numpy_export(opts.out, card, layers, activation)
    checkpoint = save_distilled_checkpoint(policy, out / "checkpoint.zip", variant, len(data["action"]), opts.endgame)
    print(
        f"wrote {out}: play it with bot:path={out}; {checkpoint} is the same network as a train.py checkpoint, for "
        f"ONNX and a full model card: python -m agents.nets.export {checkpoint} --out BOT_DIR"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
