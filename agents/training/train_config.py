"""``train.py``'s settings: ``TrainConfig`` (one typed field per setting, each with its one-line doc), the shipped
configs (``configs/*.yaml``, installed as ``scopa_configs``) and reading a config file with command-line overrides.

The machinery (conversion, YAML, the command-line options, the commented YAML dump) is in ``agents.cli.settings``,
shared with ``evaluate.py``'s ``EvalConfig``.

    cfg = load_config("configs/smoke.yaml", {"total_steps": "2e4"})
    print(config_yaml(cfg))
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.cli import settings as _settings
from agents.cli.settings import ConfigError, YamlFileError, read_yaml_mapping, setting, short_repr
from agents.nets.mlp import ACTIVATIONS
from scopa_env.rules import Rules, get_rules

__all__ = [
    "CONFIG_DIR",
    "DEFAULT_CONFIG",
    "LIMITS",
    "MAX_ROLLOUT",
    "TrainConfig",
    "config_from_dict",
    "config_yaml",
    "convert_value",
    "field_docs",
    "load_config",
    "read_yaml",
    "shipped_config",
]

ROOT = Path(__file__).resolve().parents[2]
"""The folder holding ``train.py`` and ``agents/`` (a checkout, or site-packages when installed)."""


def _config_dir() -> Path:
    """The shipped configs: ``configs/`` beside ``train.py`` in a checkout, else the installed ``scopa_configs``."""
    here = ROOT / "configs"
    if (here / "default.yaml").is_file():
        return here
    try:
        import scopa_configs  # type: ignore[import-not-found]  # configs/ as installed by pip

        return Path(scopa_configs.__file__).resolve().parent
    except ImportError:  # pragma: no cover - neither a checkout nor an install
        return here


CONFIG_DIR = _config_dir()
DEFAULT_CONFIG = CONFIG_DIR / "default.yaml"


def shipped_config(name: str) -> Path | None:
    """The shipped config called ``name`` (``strong``, ``strong.yaml``), or None."""
    stem = name.removesuffix(".yaml")
    path = CONFIG_DIR / f"{stem}.yaml"
    return path if stem and "/" not in stem and "\\" not in stem and path.is_file() else None


LIMITS = (
    ("num_envs", 1 << 20, "the vector env's limit"),
    ("eval_deals", 1_000_000, "each evaluation plays them all"),
    ("pretrain_hands", 10_000_000, "the warm start keeps every decision in memory"),
    ("max_snapshots", 1_000, "each snapshot is a copy of the network"),
    ("total_steps", 10**12, "more than any run can reach"),
    ("n_epochs", 1_000, "each PPO update would take hours"),
    ("pretrain_epochs", 1_000, "the warm start would take hours"),
    ("max_hands", 1_000_000, "a match never lasts that long"),
    ("torch_threads", 1_024, "more threads than any machine has"),
    ("win_rate_window", 10**9, "the league would never notice a change"),
    ("endgame", 1_000, "no hand has that many plies"),
    ("snapshot_every", 10**12, "more than any run can reach"),
    ("eval_every", 10**12, "more than any run can reach"),
    ("checkpoint_every", 10**12, "more than any run can reach"),
    ("keep_checkpoints", 1_000_000, "each is a file of its own"),
    ("distill_endgame", 1_000, "no hand has that many plies"),
)
"""(field, largest value, why) for config fields whose size is only bounded by memory or time."""
MAX_ROLLOUT = 1 << 22
"""The largest ``num_envs * n_steps``."""


@dataclass
class TrainConfig:
    """Everything a training run depends on; ``configs/default.yaml`` spells out these defaults."""

    name: str = setting("default", "Run name: the second part of the run directory's name (letters, digits, - and _).")
    variant: str = setting(
        "classic", "Variant to train (scopa_env.rules.VARIANTS), e.g. classic, scopa-a-quattro, scopone-scientifico."
    )
    seed: int = setting(
        0, "Seed of the network initialisation, the training games and the sampling (same seed, same run)."
    )
    total_steps: int = setting(
        12_000_000,
        "Training steps (learner decisions, summed over all envs); scientific notation such as 2e7 is accepted.",
    )
    device: str = setting("cpu", "Torch device for the learner: cpu, cuda or auto.")
    torch_threads: int = setting(1, "Torch CPU threads of the learner (0 leaves torch's default).")

    num_envs: int = setting(512, "Games played at once in the batched vector env (one learner decision each per step).")
    reward: str = setting(
        "points", "points: each hand's margin (learner side minus best other side) at its end; match: +1/-1 per match."
    )
    episode: str = setting(
        "hand", "hand: an episode is one hand (dense signal, fast); match: play to the variant's target."
    )
    max_hands: int = setting(100, "Hands after which a match episode is cut off (episode=match only).")
    learner_seat: str = setting("rotate", "Learner's seat: rotate (over episodes), random, or a seat number.")
    partner: str = setting(
        "self", "Team variants: self (the learner plays every seat of its side) or an agent spec for its teammates."
    )

    n_steps: int = setting(64, "PPO rollout length per env: each update uses num_envs * n_steps steps.")
    batch_size: int = setting(512, "PPO minibatch size (must divide num_envs * n_steps).")
    n_epochs: int = setting(2, "PPO passes over each rollout.")
    learning_rate: float = setting(1e-3, "Adam learning rate at the start.")
    lr_end_fraction: float = setting(
        0.2, "Learning rate at the end as a fraction of learning_rate (linear in between; 1 keeps it constant)."
    )
    shaping: float = setting(
        1.0,
        "Weight of the potential-based shaping reward (captured card values and scope, own side minus others; 0: off).",
    )
    gamma: float = setting(1.0, "Discount factor (1: a hand's points count fully, whenever they come).")
    gae_lambda: float = setting(
        0.5, "GAE lambda (short: the shaped rewards carry the credit, the critic the rest; less variance)."
    )
    clip_range: float = setting(0.2, "PPO clipping of the probability ratio.")
    ent_coef: float = setting(0.01, "Entropy bonus coefficient.")
    vf_coef: float = setting(0.5, "Value loss coefficient.")
    max_grad_norm: float = setting(0.5, "Gradient norm clipping.")
    target_kl: float | None = setting(
        None, "Stop an update's epochs early when the KL divergence exceeds this (null: never)."
    )
    net_arch: list[int] = setting(
        doc="Hidden layer sizes of the policy and value networks (separate networks of this shape).",
        default_factory=lambda: [256, 256],
    )
    activation: str = setting(
        "relu", "Hidden activation: relu, tanh, leaky_relu, elu, sigmoid, silu or identity (each exports as a bot)."
    )

    pretrain_teacher: str = setting(
        "expert",
        "Agent spec whose play the policy imitates before self-play (warm start; '' or none: start from scratch).",
    )
    pretrain_hands: int = setting(
        30_000, "Hands of teacher self-play recorded for the warm start (about 37 decisions each)."
    )
    pretrain_epochs: int = setting(
        4, "Passes over the teacher's decisions (cross-entropy for the actor, returns for the critic)."
    )
    baselines: list[str] = setting(
        doc="Agent specs that stay in the league for the whole run (e.g. random greedy expert).",
        default_factory=lambda: ["random", "greedy"],
    )
    snapshot_every: int = setting(1_000_000, "Steps between frozen snapshots of the learner added to the league.")
    max_snapshots: int = setting(6, "Snapshots kept in the league (the oldest is dropped).")
    snapshot_sample: bool = setting(
        False, "Snapshots sample their moves from the policy instead of playing its most probable move."
    )
    pfsp_power: float = setting(2.0, "PFSP weight of an opponent the learner beats with rate p: (1 - p) ** pfsp_power.")
    pfsp_floor: float = setting(0.05, "Smallest PFSP weight, so beaten opponents are still met now and then.")
    self_play_fraction: float = setting(
        0.2, "Share of episodes played against the newest snapshot, whatever its PFSP weight."
    )
    win_rate_window: int = setting(
        4000, "Episodes over which the league tracks the learner's win rate against each opponent."
    )
    snapshot_share: float = setting(
        1.0, "Largest total share of episodes played against snapshots, self-play included (1: no cap)."
    )

    init_from: str = setting(
        "",
        "A train.py checkpoint (same variant and net_arch) whose weights start the run; needs pretrain_teacher: none.",
    )
    endgame: int = setting(
        0,
        "Solve open end games exactly when at most this many plies are left, in training and by checkpoints (0: off).",
    )
    distill_coef: float = setting(
        0.0, "Weight of the end-game distillation: -log P(a best move of the exact solver) on open end games (0: off)."
    )
    distill_endgame: int = setting(
        8, "Open end games (every card known) with at most this many plies left are labelled by the solver."
    )
    distill_fraction: float = setting(
        0.5, "Share of the learner's open end-game decisions of each rollout that the solver labels."
    )

    eval_every: int = setting(1_000_000, "Steps between evaluations on fixed duplicate deals.")
    eval_deals: int = setting(
        500, "Deals per evaluation; each is played once per seat rotation (points per hand, 95% interval)."
    )
    eval_opponents: list[str] = setting(
        doc="Agent specs evaluated against, weakest first: best.zip is chosen by the margin against the last one.",
        default_factory=lambda: ["random", "greedy", "expert"],
    )
    eval_seed: int = setting(1_000_000_000, "First seed of the evaluation deals (disjoint from the training games).")
    ray: str = setting(
        "",
        "Ray cluster for the warm start's teacher games and the evaluations: '' (this process), local, auto or "
        "HOST:PORT.",
    )

    checkpoint_every: int = setting(1_000_000, "Steps between checkpoints (checkpoints/step_<steps>.zip and last.zip).")
    keep_checkpoints: int = setting(5, "step_*.zip files kept in checkpoints/ (the newest).")
    run_root: str = setting("runs", "Folder that holds the run directories.")
    progress: bool = setting(True, "Show a progress bar with steps per second and time left.")

    def __post_init__(self) -> None:
        def need(ok: bool, msg: str) -> None:
            if not ok:
                raise ConfigError(msg)

        try:
            rules = get_rules(self.variant)
        except ValueError as e:
            raise ConfigError(
                f"variant: {e}" if len(self.variant) <= 60 else f"variant: unknown variant {short_repr(self.variant)}"
            ) from None
        need(
            bool(self.name) and all(c.isalnum() or c in "-_." for c in self.name) and "__" not in self.name,
            f"name must be letters, digits, '-', '_' or '.' without '__', got {short_repr(self.name)}",
        )
        for key in ("total_steps", "num_envs", "n_steps", "batch_size", "n_epochs", "max_hands", "snapshot_every"):
            need(getattr(self, key) >= 1, f"{key} must be a positive integer, got {getattr(self, key)}")
        for key in ("eval_every", "eval_deals", "checkpoint_every", "keep_checkpoints", "win_rate_window"):
            need(getattr(self, key) >= 1, f"{key} must be a positive integer, got {getattr(self, key)}")
        need(self.max_snapshots >= 0, f"max_snapshots must be >= 0, got {self.max_snapshots}")
        for key, most, why in LIMITS:
            need(getattr(self, key) <= most, f"{key} must be at most {most:,} ({why}), got {getattr(self, key):,}")
        need(
            self.rollout_size <= MAX_ROLLOUT,
            f"num_envs * n_steps must be at most {MAX_ROLLOUT:,} (the rollout buffer holds one observation per "
            f"step, about 1.5 KiB each), got {self.num_envs:,} * {self.n_steps:,}",
        )
        need(
            len(self.net_arch) <= 16 and all(1 <= h <= 16_384 for h in self.net_arch),
            f"net_arch must be at most 16 layers of 1 to 16,384 units, got {self.net_arch}",
        )
        need(0 <= self.seed < 2**32, f"seed must be in [0, 2**32) (numpy's global seed range), got {self.seed}")
        need(0 <= self.eval_seed < 2**32, f"eval_seed must be in [0, 2**32), got {self.eval_seed}")
        need(self.torch_threads >= 0, f"torch_threads must be >= 0 (0: torch's default), got {self.torch_threads}")
        need(
            self.device in ("cpu", "cuda", "auto") or self.device.startswith("cuda:"),
            f"device: cpu, cuda or auto, not {short_repr(self.device)}",
        )
        need(self.reward in ("points", "match"), f"reward must be 'points' or 'match', got {short_repr(self.reward)}")
        need(self.episode in ("hand", "match"), f"episode must be 'hand' or 'match', got {short_repr(self.episode)}")
        need(
            self.activation in ACTIVATIONS,
            f"activation must be one of {', '.join(ACTIVATIONS)} (the activations that also export to a bot), "
            f"got {short_repr(self.activation)}",
        )
        seat_ok = self.learner_seat in ("rotate", "random") or (
            self.learner_seat.isdigit() and int(self.learner_seat) < rules.num_players
        )
        need(
            seat_ok,
            f"learner_seat must be rotate, random or a seat 0..{rules.num_players - 1}, "
            f"got {short_repr(self.learner_seat)}",
        )
        teams = max(len(s) for s in rules.sides) > 1
        need(
            self.partner == "self" or teams,
            f"partner={short_repr(self.partner)} needs a team variant; {short_repr(self.variant)} has no teams, use "
            "partner: self",
        )
        need(
            self.rollout_size % self.batch_size == 0,
            f"batch_size ({self.batch_size}) must divide num_envs * n_steps ({self.num_envs} * {self.n_steps} = "
            f"{self.rollout_size}); e.g. batch_size {math.gcd(self.rollout_size, 1 << 13)}",
        )
        need(self.learning_rate > 0, f"learning_rate must be positive, got {self.learning_rate}")
        need(0 <= self.lr_end_fraction <= 1, f"lr_end_fraction must be in [0, 1], got {self.lr_end_fraction}")
        need(0 < self.gamma <= 1, f"gamma must be in (0, 1], got {self.gamma}")
        need(0 <= self.gae_lambda <= 1, f"gae_lambda must be in [0, 1], got {self.gae_lambda}")
        need(self.clip_range > 0, f"clip_range must be positive, got {self.clip_range}")
        need(self.ent_coef >= 0 and self.vf_coef > 0, "ent_coef must be >= 0 and vf_coef positive")
        need(self.shaping >= 0, f"shaping must be >= 0 (0 turns it off), got {self.shaping}")
        need(
            self.pretrain_hands >= 1 and self.pretrain_epochs >= 1,
            f"pretrain_hands and pretrain_epochs must be >= 1, got {self.pretrain_hands} and {self.pretrain_epochs}",
        )
        need(self.max_grad_norm > 0, f"max_grad_norm must be positive, got {self.max_grad_norm}")
        need(self.target_kl is None or self.target_kl > 0, f"target_kl must be positive or null, got {self.target_kl}")
        need(
            len(self.net_arch) >= 1 and all(n >= 1 for n in self.net_arch),
            f"net_arch: positive sizes, got {self.net_arch}",
        )
        need(self.pfsp_power >= 0, f"pfsp_power must be >= 0, got {self.pfsp_power}")
        need(0 < self.pfsp_floor <= 1, f"pfsp_floor must be in (0, 1], got {self.pfsp_floor}")
        need(0 <= self.self_play_fraction <= 1, f"self_play_fraction must be in [0, 1], got {self.self_play_fraction}")
        need(0 <= self.snapshot_share <= 1, f"snapshot_share must be in [0, 1], got {self.snapshot_share}")
        need(self.endgame >= 0, f"endgame must be >= 0 plies (0 turns it off), got {self.endgame}")
        need(
            not (self.endgame and self.distill_coef),
            "endgame and distill_coef both act on the open end game: with endgame > 0 the solver plays it, "
            "so there is nothing to distil; set distill_coef: 0",
        )
        need(self.distill_coef >= 0, f"distill_coef must be >= 0 (0 turns it off), got {self.distill_coef}")
        need(self.distill_endgame >= 1, f"distill_endgame must be a positive integer, got {self.distill_endgame}")
        need(0 < self.distill_fraction <= 1, f"distill_fraction must be in (0, 1], got {self.distill_fraction}")
        need(bool(self.baselines) or self.max_snapshots > 0, "the league needs baselines or max_snapshots > 0")
        if self.ray.strip():
            from agents.evaluation.cluster import check_ray_address  # imports no Ray: the address is checked without it

            try:
                self.ray = check_ray_address(self.ray)
            except ValueError as e:
                raise ConfigError(f"ray: {e} (or '' to play them in this process)") from None
        else:
            self.ray = ""
        need(bool(self.eval_opponents), "eval_opponents must name at least one agent (e.g. greedy)")
        need(
            not (self.init_from and self.pretrain_teacher.strip().lower() not in ("", "none")),
            f"init_from and pretrain_teacher both set the starting weights (init_from {short_repr(self.init_from)}, "
            f"pretrain_teacher {short_repr(self.pretrain_teacher)}); with init_from set pretrain_teacher: none "
            "(--pretrain-teacher none)",
        )

    @property
    def rules(self) -> Rules:
        """The variant's rules."""
        return get_rules(self.variant)

    @property
    def rollout_size(self) -> int:
        """Steps per PPO update: num_envs * n_steps."""
        return self.num_envs * self.n_steps

    @property
    def best_opponent(self) -> str:
        """The eval opponent whose margin chooses best.zip (the last, strongest one)."""
        return self.eval_opponents[-1]

    @property
    def seat(self) -> str | int:
        """``learner_seat`` as the env wants it."""
        return int(self.learner_seat) if self.learner_seat.isdigit() else self.learner_seat

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def field_docs(cls: type = TrainConfig) -> dict[str, str]:
    """The one-line doc of each config field (``agents.cli.settings.field_docs``)."""
    return _settings.field_docs(cls)


def convert_value(key: str, raw: Any) -> Any:
    """``raw`` (from YAML or the command line) converted to the type of config field ``key``."""
    return _settings.convert_value(TrainConfig, key, raw)


RENAMED = {
    "exact_endgame": "endgame",
    "endgame_coef": "distill_coef",
    "endgame_plies": "distill_endgame",
    "endgame_fraction": "distill_fraction",
}
"""Config keys of earlier versions -> their names now (one name per concept: ``endgame`` is the end-game horizon
in plies everywhere, as in the agents' ``endgame=N`` option; the solver's training labels are ``distill_*``)."""


def upgrade_saved_config(values: dict[str, Any]) -> dict[str, Any]:
    """A run directory's saved ``config.yaml`` written before the keys were renamed, with the current names
    (``--resume`` of an older run); the values are unchanged."""
    if not isinstance(values, dict):
        return values
    return {RENAMED.get(k, k) if RENAMED.get(k, k) not in values else k: v for k, v in values.items()}


def config_from_dict(values: dict[str, Any], source: str = "config") -> TrainConfig:
    """A ``TrainConfig`` from raw values; unknown keys and bad values raise ``ConfigError`` naming ``source``
    (a key of an earlier version says what it is called now)."""
    old = [k for k in values if k in RENAMED] if isinstance(values, dict) else []
    if old:
        moves = ", ".join(f"{k!r} is now {RENAMED[k]!r}" for k in old)
        raise ConfigError(f"{source}: renamed config key(s): {moves}; rename them (same meaning, same values)")
    return _settings.config_from_dict(TrainConfig, values, source)


def config_yaml(cfg: TrainConfig) -> str:
    """The config as YAML, one commented line per field (its doc), in field order."""
    return _settings.config_yaml(cfg)


CONFIG_FIX = "give a YAML file of train.py settings, e.g. configs/default.yaml"
"""What a bad config file's message asks for instead (``YamlFileError.describe``)."""


def read_yaml(path: str | Path) -> dict[str, Any]:
    """The mapping in a YAML config file (empty file: {}), read by ``agents.cli.settings.read_yaml_mapping`` (plain
    data; no aliases, repeated keys, huge integers or tags); ``--config strong`` names the shipped
    ``configs/strong.yaml``. Raises ``ConfigError`` (one sentence naming the file and the line) for a missing or bad
    file."""
    p = Path(path)
    if not p.exists():  # --config strong: the shipped configs/strong.yaml
        p = shipped_config(str(path)) or p
    try:
        return read_yaml_mapping(p)
    except YamlFileError as e:
        raise ConfigError(e.describe(CONFIG_FIX)) from None


def load_config(path: str | Path | None = None, overrides: dict[str, Any] | None = None) -> TrainConfig:
    """The config of a YAML file (default ``configs/default.yaml``) with ``overrides`` applied on top; an error is
    blamed on the file, or on "command line" when the file alone is fine."""
    source = str(path or DEFAULT_CONFIG)
    return _settings.load_config(TrainConfig, read_yaml(path or DEFAULT_CONFIG), source, overrides)
