"""The trainer behind ``train.py``: MaskablePPO on the batched vector env against a PFSP league, with evaluations on
duplicate deals, checkpoints and exact resume (``Trainer.create`` / ``Trainer.resume``, then ``run``).

Its evaluations are ``agents.training.duplicate_eval``'s, the run directory's files ``agents.training.run_dir``'s, the
settings ``agents.training.train_config.TrainConfig``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from agents.base import AgentSpecError, make_agent
from agents.cli.settings import ConfigError
from agents.cli.shell import train_command
from agents.cli.signals import StopSignals, signal_name
from agents.nets.mlp import ACTIVATIONS
from agents.nets.weights import warm_start_weights
from agents.training.duplicate_eval import (
    EVAL_CHUNK,
    StopTraining,
    duplicate_eval,
    duplicate_eval_on_ray,
)
from agents.training.progress import open_bar
from agents.training.resume_point import MODEL_COUNTERS, ResumePoint, capture, rewind, set_rng_states
from agents.training.run_dir import (
    RESUME_MEMBER,
    RunDirError,
    append_jsonl,
    clean_run_dir,
    code_version,
    make_run_dir,
    newest_intact_checkpoint,
    now,
    prune_step_files,
)
from agents.training.shaping import ShapedRewards
from agents.training.train_config import (
    TrainConfig,
    config_from_dict,
    config_yaml,
    convert_value,
    read_yaml,
    upgrade_saved_config,
)
from agents.training.train_logs import log_eval, log_league
from scopa_env.engine import observation
from scopa_env.games.policy import Policy
from scopa_env.rules import Rules

__all__ = ["RESUMABLE_FIELDS", "Trainer"]

RESUMABLE_FIELDS = ("total_steps", "progress", "torch_threads", "ray")
"""Config fields a resumed run may change; the others must match the run's saved config."""


# --------------------------------------------------------------------------------------------------- trainer


class Trainer:
    """One training run: env, league, model, logging and checkpoints. ``Trainer.create`` / ``Trainer.resume``."""

    def __init__(self, cfg: TrainConfig, run_dir: Path) -> None:
        self.cfg = cfg
        self.rules = cfg.rules
        self.run_dir = run_dir
        self.version = code_version()
        self.stop_requested = False
        self.state: dict[str, Any] = {}
        self._point: ResumePoint | None = None
        self._pending: list[npt.NDArray[np.int64]] = []
        self._endgame: list[tuple[npt.NDArray[Any], ...]] = []
        self._endgame_s = 0.0
        self._endgame_opt: Any = None
        self._rollout_t0 = time.perf_counter()
        self._rollout_steps0 = 0
        self._rollout_end_t = time.perf_counter()
        self._session_t0 = time.perf_counter()
        self.resumed = False
        self._config_changed = False
        self._resume_event: dict[str, Any] | None = None
        self._stop_signal = int(signal.SIGINT)
        self._bar: Any = None
        self.eval_agents: list[Policy] = []
        self.writer: Any = None
        self.model: Any = None
        self.env: Any = None
        self.league: Any = None
        self._ray_session: Any = None

    # ------------------------------------------------------------------------------------------------ building

    @classmethod
    def create(cls, cfg: TrainConfig) -> Trainer:
        """A new run: checks the agents, creates the run directory, builds env, league and model."""
        import torch

        if cfg.device.startswith("cuda") and not torch.cuda.is_available():
            raise ConfigError(f"device {cfg.device!r}: torch sees no CUDA device here; use --device cpu (or auto)")
        rules = cfg.rules
        baselines = [_make(spec, rules, cfg.seed + 101 + i, "baselines") for i, spec in enumerate(cfg.baselines)]
        partner = "self" if cfg.partner == "self" else _make(cfg.partner, rules, cfg.seed + 99, "partner")
        eval_agents = [_make(spec, rules, cfg.eval_seed, "eval_opponents") for spec in cfg.eval_opponents]
        warm_start = cfg.pretrain_teacher.strip().lower() not in ("", "none")  # never with init_from (refused)
        if warm_start:
            _make(cfg.pretrain_teacher, rules, cfg.seed, "pretrain_teacher")  # fail before the run directory exists
        init_state = (
            warm_start_weights(cfg.init_from, cfg.rules, cfg.net_arch, cfg.activation) if cfg.init_from else None
        )
        _check_ray(cfg)
        run_dir = make_run_dir(cfg.run_root, f"{cfg.variant}__{cfg.name}__{cfg.seed}")
        print(f"run directory: {run_dir}", flush=True)
        try:
            return cls._set_up(cfg, run_dir, eval_agents, baselines, partner, init_state, warm_start)
        except BaseException:  # Ctrl-C in the warm start, a bad init_from: leave no run without a checkpoint
            shutil.rmtree(run_dir, ignore_errors=True)
            print(f"removed {run_dir}: the run stopped before its first checkpoint", file=sys.stderr, flush=True)
            raise

    @classmethod
    def _set_up(
        cls,
        cfg: TrainConfig,
        run_dir: Path,
        eval_agents: list[Policy],
        baselines: list[Policy],
        partner: Policy | str,
        init_state: dict[str, Any] | None,
        warm_start: bool,
    ) -> Trainer:
        """``create``'s work inside the new run directory: config files, env, league, model, initial weights."""
        self = cls(cfg, run_dir)
        self.eval_agents = eval_agents
        (run_dir / "config.yaml").write_text(config_yaml(cfg))
        (run_dir / "version.json").write_text(json.dumps(self.version, indent=1, default=str) + "\n")
        self._build_new(baselines, partner)
        if init_state is not None:
            try:
                self.model.policy.load_state_dict(init_state)
            except RuntimeError as e:
                first = str(e).strip().splitlines()[0]
                raise ConfigError(
                    f"init_from {cfg.init_from!r}: its network does not fit this config's ({first}); use the "
                    f"checkpoint's net_arch and activation (net_arch is {list(cfg.net_arch)} here)"
                ) from None
            print(f"initial weights: {cfg.init_from} (no warm start)", flush=True)
        elif warm_start:
            self._pretrain()
        return self

    def _pretrain(self) -> None:
        """Warm start: fit the new policy to the teacher's decisions (``agents.training.imitation``), once per run."""
        from agents.training.imitation import collect_teacher_data, pretrain_policy, progress_bar

        cfg = self.cfg
        t0 = time.perf_counter()
        print(f"warm start: recording {cfg.pretrain_hands:,} hands of {cfg.pretrain_teacher!r} ...", flush=True)
        with progress_bar(cfg.pretrain_hands, "warm start: teacher hands", "hand", cfg.progress) as bar:
            data = collect_teacher_data(
                self.rules,
                cfg.pretrain_teacher,
                cfg.pretrain_hands,
                seed=cfg.seed + 7_000_000,
                progress=bar,
                ray=self._ray_address(),
            )
        rows, desc = cfg.pretrain_epochs * len(data), f"warm start: fitting ({cfg.pretrain_epochs} epochs)"
        with progress_bar(rows, desc, "decision", cfg.progress) as bar:
            stats = pretrain_policy(self.model.policy, data, epochs=cfg.pretrain_epochs, seed=cfg.seed, progress=bar)
        stats.update(decisions=len(data), seconds=round(time.perf_counter() - t0, 1))
        self.state["elapsed_s"] += stats["seconds"]  # milestones count the warm start's wall-clock time too
        (self.run_dir / "pretrain.json").write_text(json.dumps(stats, indent=1) + "\n")
        print(
            f"warm start: {len(data):,} decisions, {cfg.pretrain_epochs} epochs, teacher-move accuracy "
            f"{stats['accuracy']:.1%} ({stats['seconds']:.0f} s)",
            flush=True,
        )

    def _ray_address(self) -> str | None:
        """The ``ray`` setting (None when empty), with a Ray session opened on first use and kept for the run (a
        ``local`` instance starts once), closed by ``_close_ray``."""
        if not self.cfg.ray:
            return None
        if self._ray_session is None:
            from agents.errors import TournamentError
            from agents.evaluation.cluster import connect

            session = connect(self.cfg.ray)
            try:
                session.__enter__()
            except TournamentError as e:
                raise ConfigError(f"ray: {e}") from None
            self._ray_session = session
        return self.cfg.ray

    def _close_ray(self) -> None:
        if self._ray_session is not None:
            session, self._ray_session = self._ray_session, None
            session.__exit__(None, None, None)

    def _build_new(self, baselines: list[Policy], partner: Policy | str) -> None:
        import torch

        from agents.search.endgame import ExactEndgameMask
        from agents.training.league import League
        from scopa_env.envs.gym import ScopaVecEnv

        cfg = self.cfg
        if cfg.torch_threads:
            torch.set_num_threads(cfg.torch_threads)
        self.league = League(
            baselines,
            max_snapshots=cfg.max_snapshots,
            power=cfg.pfsp_power,
            floor=cfg.pfsp_floor,
            self_play_fraction=cfg.self_play_fraction,
            window=cfg.win_rate_window,
            snapshot_share=cfg.snapshot_share,
        )
        self.env = ScopaVecEnv(
            self.rules,
            cfg.num_envs,
            opponents=[m.policy for m in self.league.members] or "random",
            probs=self.league.probs().tolist() if self.league.members else None,
            seed=cfg.seed,
            reward=cfg.reward,  # type: ignore[arg-type]
            episode=cfg.episode,  # type: ignore[arg-type]
            partner=partner,  # type: ignore[arg-type]
            learner_seat=cfg.seat,  # type: ignore[arg-type]
            max_hands=cfg.max_hands,
            mask_filter=ExactEndgameMask(cfg.endgame) if cfg.endgame else None,
        )
        self.league.register_initial_pool()
        if cfg.shaping > 0:
            self.env = ShapedRewards(self.env, self.rules, cfg.shaping, cfg.gamma)
        self.model = self._new_model(self.env)
        self.state = {
            "next_snapshot": cfg.snapshot_every,
            "next_eval": 0,
            "next_checkpoint": cfg.checkpoint_every,
            "handled_step": -1,
            "best_margin": -math.inf,
            "best_step": -1,
            "last_eval": {},
            "elapsed_s": 0.0,
        }
        self._setup_logging()
        self._history("start")

    def _new_model(self, env: Any, setup: bool = True) -> Any:
        """The config's ``MaskablePPO`` on ``env``. ``setup=False``: built the way SB3's ``load`` builds a model
        (spaces taken from ``env``, parameters created without seeding ``env``), for ``_load`` to fill in."""
        import torch
        from sb3_contrib import MaskablePPO
        from stable_baselines3.common.utils import LinearSchedule

        cfg = self.cfg
        lr: Any = cfg.learning_rate
        if cfg.lr_end_fraction != 1.0:
            lr = LinearSchedule(cfg.learning_rate, cfg.learning_rate * cfg.lr_end_fraction, 1.0)
        activation = getattr(torch.nn, ACTIVATIONS[cfg.activation].torch)
        model = MaskablePPO(
            "MlpPolicy",
            env if setup else None,  # type: ignore[arg-type]  # SB3's load builds models with env=None too
            learning_rate=lr,
            n_steps=cfg.n_steps,
            batch_size=cfg.batch_size,
            n_epochs=cfg.n_epochs,
            gamma=cfg.gamma,
            gae_lambda=cfg.gae_lambda,
            clip_range=cfg.clip_range,
            ent_coef=cfg.ent_coef,
            vf_coef=cfg.vf_coef,
            max_grad_norm=cfg.max_grad_norm,
            target_kl=cfg.target_kl,
            policy_kwargs={"net_arch": list(cfg.net_arch), "activation_fn": activation},
            seed=cfg.seed,
            device=cfg.device,
            verbose=0,
            _init_setup_model=setup,
        )
        if not setup:
            model.observation_space, model.action_space = env.observation_space, env.action_space
            model.n_envs = env.num_envs
            model._setup_model()
            model.set_env(env, force_reset=False)
        return model

    @classmethod
    def resume(cls, run_dir: str | Path, config_file: str | None, overrides: dict[str, Any]) -> Trainer:
        """Continue the run in ``run_dir`` from its ``last.zip``; the config must agree with the saved one."""

        run = Path(run_dir)
        if not run.is_dir():
            raise RunDirError(f"--resume {str(run)!r}: no such run directory; give a folder under runs/")
        saved_values = read_yaml(run / "config.yaml") if (run / "config.yaml").is_file() else None
        saved_values = upgrade_saved_config(saved_values) if saved_values is not None else None
        if saved_values is None:
            raise RunDirError(f"--resume {str(run)!r}: no config.yaml there; it is not a train.py run directory")
        saved = config_from_dict(saved_values, source=str(run / "config.yaml"))
        asked = dict(read_yaml(config_file)) if config_file else {}
        asked.update(overrides)
        if config_file:  # validate the file's keys and values on their own
            config_from_dict({**saved_values, **read_yaml(config_file)}, source=config_file)
        conflicts = []
        for key, value in asked.items():
            new = convert_value(key, value)
            if new != getattr(saved, key) and key not in RESUMABLE_FIELDS:
                conflicts.append(f"{key}={new!r} (the run has {getattr(saved, key)!r})")
        if conflicts:
            raise ConfigError(
                f"--resume {str(run)!r}: the run was trained with another config: {'; '.join(conflicts)}. A resumed "
                f"run keeps its config (only {', '.join(RESUMABLE_FIELDS)} may change); drop those options or start "
                "a new run"
            )
        cfg = dataclasses.replace(saved, **{k: convert_value(k, v) for k, v in asked.items() if k in RESUMABLE_FIELDS})
        last, meta, blob = newest_intact_checkpoint(run)
        if meta["variant"] != cfg.variant:
            raise ConfigError(
                f"--resume {str(run)!r}: {last.name} is for variant {meta['variant']!r}, config says {cfg.variant!r}"
            )
        if meta["obs_version"] != observation.observation_version(cfg.rules):
            raise RunDirError(
                f"--resume {str(run)!r}: the run was trained on observation version {meta['obs_version']}, this code "
                f"produces version {observation.observation_version(cfg.rules)}; it cannot be resumed, start a new run"
            )
        if not os.access(run, os.W_OK):
            raise RunDirError(f"--resume {str(run)!r}: the run directory is not writable")
        eval_agents = [_make(spec, cfg.rules, cfg.eval_seed, "eval_opponents") for spec in cfg.eval_opponents]
        _check_ray(cfg)
        self = cls(cfg, run)
        self.eval_agents = eval_agents
        self.resumed = True
        self._load(blob)
        self._config_changed = cfg != saved
        self._resume_event = {"from_step": int(self.model.num_timesteps), "checkpoint": last.name}
        return self

    def _load(self, blob: dict[str, Any]) -> None:
        """Rebuild env, league, model and random states from a checkpoint's resume state
        (``agents.training.run_dir.read_resume_state``)."""
        import torch

        if self.cfg.torch_threads:
            torch.set_num_threads(self.cfg.torch_threads)
        self.env, self.league, self.state = blob["env"], blob["league"], blob["state"]
        model = self._new_model(self.env, setup=False)
        try:
            model.policy.load_state_dict(blob["policy_state"])
            model.policy.optimizer.load_state_dict(blob["optim_state"])
        except (RuntimeError, ValueError, KeyError) as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise RunDirError(f"--resume: the checkpoint's weights do not fit the run's config ({first})") from None
        model.num_timesteps = int(blob["num_timesteps"])
        for name in MODEL_COUNTERS:
            setattr(model, name, blob["model"][name])
        self.model = model
        if blob.get("endgame_optimizer") is not None:
            from agents.training.imitation import actor_optimizer

            self._endgame_opt = actor_optimizer(model.policy, self.cfg.learning_rate)
            self._endgame_opt.load_state_dict(blob["endgame_optimizer"])
        set_rng_states(blob["rng"])

    def _setup_logging(self) -> None:
        from stable_baselines3.common.logger import Logger
        from torch.utils.tensorboard import SummaryWriter

        self.model.set_logger(Logger(folder=None, output_formats=[]))  # losses are copied into our writer
        self.writer = SummaryWriter(log_dir=str(self.run_dir))

    def _history(self, event: str, **extra: Any) -> None:
        step = int(self.model.num_timesteps) if self.model is not None else 0
        append_jsonl(self.run_dir / "history.jsonl", {"event": event, "time": now(), "step": step, **extra})

    # ------------------------------------------------------------------------------------------------ running

    def run(self) -> int:
        """Train to ``total_steps``; returns the process exit status (0 done, 130 interrupted)."""
        from stable_baselines3.common.callbacks import BaseCallback

        trainer = self

        class _Callback(BaseCallback):
            def _on_rollout_start(self) -> None:
                trainer.on_rollout_start()

            def _on_step(self) -> bool:
                return trainer.on_step(self.locals)

            def _on_rollout_end(self) -> None:
                trainer.on_rollout_end()

        cfg, model = self.cfg, self.model
        start = int(model.num_timesteps)
        if start >= cfg.total_steps:
            print(
                f"run {self.run_dir} already has {start:,} of {cfg.total_steps:,} steps; nothing to do "
                "(raise --total-steps to train further)"
            )
            return 0
        if self._resume_event is not None:  # only once a resumed run really trains on (a no-op changes nothing)
            clean_run_dir(self.run_dir, start, cfg.keep_checkpoints)
            if self._config_changed:
                (self.run_dir / "config.yaml").write_text(config_yaml(cfg))
            self._setup_logging()
            self._history("resume", **self._resume_event)
            self._resume_event = None
        if self.resumed:  # a new run said it in ``create``, before its warm start
            print(f"run directory: {self.run_dir}", flush=True)
        print(
            f"training {cfg.variant} for {cfg.total_steps:,} steps from {start:,}: {cfg.num_envs} envs x {cfg.n_steps} "
            f"steps per update, league {self.league}",
            flush=True,
        )
        self._session_t0 = self._rollout_t0 = time.perf_counter()
        self._rollout_steps0 = start
        self._open_bar(start)
        status = 0
        with StopSignals(notify=self._stop_at_next_step):  # Ctrl-C, SIGTERM, SIGHUP
            try:
                model.learn(
                    total_timesteps=cfg.total_steps - start,
                    callback=_Callback(),
                    log_interval=1,
                    reset_num_timesteps=not self.resumed,
                    progress_bar=False,
                )
                if self.stop_requested:
                    status = self._interrupted()
                else:
                    self._finish()
            except (KeyboardInterrupt, StopTraining):
                status = self._interrupted()
            finally:
                self._close_ray()
                self._close_bar()
                if self.writer is not None:
                    self.writer.close()
        return status

    def _stop_at_next_step(self, signum: int) -> None:
        """The first stop signal (``agents.cli.signals.StopSignals``): stop at the next step and save last.zip; a second
        one stops sooner (the checkpoint of the rollout's start is saved)."""
        self.stop_requested = True
        self._stop_signal = signum
        self._say(f"{signal_name(signum)}: stopping at the next step to save a checkpoint (again to stop sooner)")

    def _interrupted(self) -> int:
        status = 128 + int(self._stop_signal)
        point = self._point
        if point is None:
            self._say("interrupted before the first rollout: no checkpoint to save")
            self._history("interrupt", saved=False)
            return status
        self._write_checkpoint(point)
        self._history("interrupt", saved=True, checkpoint_step=point.steps, signal=signal_name(status - 128))
        self._close_bar()  # the bar stays above, where it stopped: the resume command is the last thing shown
        self._say(
            f"interrupted: saved {self.run_dir / 'last.zip'} at step {point.steps:,}; continue with\n"
            f"  {train_command('--resume', self.run_dir)}"
        )
        return status

    def _finish(self) -> None:
        steps = int(self.model.num_timesteps)
        self._distill_endgames(steps)
        self._flush_episodes()
        self._copy_losses(steps)
        if self.state.get("last_eval", {}).get("step") != steps:
            self._evaluate(steps)
        point = self._capture()
        self._write_checkpoint(point, step_file=True)
        self._history("finish", best_step=self.state["best_step"], best_margin=self.state["best_margin"])
        self._close_bar()
        self._say(
            f"done: {steps:,} steps in {self.state['elapsed_s'] / 60:.1f} min; best.zip from step "
            f"{self.state['best_step']:,} ({self.cfg.best_opponent} margin {self.state['best_margin']:+.3f}); "
            f"{self.run_dir}"
        )

    # ------------------------------------------------------------------------------------------------ callback

    def on_rollout_start(self) -> None:
        """League update, snapshots, evaluation and checkpoints; then remember this point for Ctrl-C."""
        steps = int(self.model.num_timesteps)
        if steps > self._rollout_steps0:
            self._log_speed(steps, time.perf_counter())
        if self.state["handled_step"] == steps:  # just resumed: this point's work is already done
            self._point = self._capture()
            self._rollout_t0, self._rollout_steps0 = time.perf_counter(), steps
            self._label_endgames(self.model._last_obs)
            return
        cfg, st = self.cfg, self.state
        self._distill_endgames(steps)
        self._flush_episodes()
        self._copy_losses(steps)
        if steps >= st["next_snapshot"] and cfg.max_snapshots > 0:
            from agents.nets.checkpoint import NeuralPolicy

            snap = NeuralPolicy.from_sb3_policy(
                self.model.policy,
                self.rules,
                name=f"snapshot@{steps}",
                seed=cfg.seed + steps,
                sample=cfg.snapshot_sample,
                endgame=cfg.endgame,
            )
            self.league.add_snapshot(snap, steps)
            st["next_snapshot"] = (steps // cfg.snapshot_every + 1) * cfg.snapshot_every
        if steps >= st["next_eval"]:
            self._evaluate(steps)
            st["next_eval"] = (steps // cfg.eval_every + 1) * cfg.eval_every
        self.league.publish(self.env)
        self._log_league(steps)
        st["handled_step"] = steps
        step_file = steps >= st["next_checkpoint"]
        if step_file:
            st["next_checkpoint"] = (steps // cfg.checkpoint_every + 1) * cfg.checkpoint_every
        point = self._capture()
        if step_file or not (self.run_dir / "last.zip").is_file():  # a checkpoint from the first rollout on
            self._write_checkpoint(point, step_file)
        self._point = point
        self._rollout_t0, self._rollout_steps0 = time.perf_counter(), steps
        self._label_endgames(self.model._last_obs)

    def on_step(self, local: dict[str, Any]) -> bool:
        """Collect finished episodes and advance the progress bar; False stops training (Ctrl-C)."""
        dones = local["dones"]
        if dones.any():
            infos = local["infos"]
            rows = [
                (i["episode_pool"], i["episode_opponent"], i["episode_result"], i["episode_margin"])
                for i in (infos[j] for j in np.flatnonzero(dones))
                if "episode_result" in i
            ]
            if rows:
                self._pending.append(np.array(rows, dtype=np.int64))
        if local["n_steps"] < self.model.n_steps - 1:  # the last step's positions start the next rollout
            self._label_endgames(local["new_obs"])
        if self._bar is not None:
            self._bar.update(self.env.num_envs)
        return not self.stop_requested

    def on_rollout_end(self) -> None:
        self._rollout_end_t = time.perf_counter()

    # ------------------------------------------------------------------------------------------------ pieces

    def _label_endgames(self, obs: npt.NDArray[np.float32]) -> None:
        """Queue the exact solver's best actions (all of them, when several moves are equally good) for a share of
        the learner's open end-game decisions now pending (``obs``: the learner's observations of the current
        positions); ``_distill_endgames`` trains on them."""
        cfg = self.cfg
        if cfg.distill_coef <= 0:
            return
        from agents.search.endgame import open_endgame_rows, optimal_open_actions

        t0 = time.perf_counter()
        games = self.env.unwrapped.games  # the ScopaVecEnv under the shaping wrapper
        live = np.flatnonzero(~games.finished)
        rows = live[open_endgame_rows(self.rules, games.state, live, cfg.distill_endgame)]
        if cfg.distill_fraction < 1.0 and rows.size:
            rng = np.random.default_rng((cfg.seed, 0xE6D, int(self.model.num_timesteps)))
            rows = rows[rng.random(rows.size) < cfg.distill_fraction]
        if rows.size:
            best = optimal_open_actions(self.rules, games.state, rows)  # every best action: ties cost nothing
            self._endgame.append((np.array(obs[rows], dtype=np.float32), games.mask[rows].copy(), best))
        self._endgame_s += time.perf_counter() - t0

    def _distill_endgames(self, steps: int) -> None:
        """One pass of the end-game distillation loss over the labels queued during the last rollout."""
        if not self._endgame:
            return
        from agents.training.imitation import actor_optimizer, distill_actions

        cfg = self.cfg
        obs, mask, best = (np.concatenate([e[i] for e in self._endgame]) for i in range(3))
        self._endgame = []
        t0 = time.perf_counter()
        lr = self.model.policy.optimizer.param_groups[0]["lr"]  # PPO's, on its schedule
        if self._endgame_opt is None:
            self._endgame_opt = actor_optimizer(self.model.policy, lr)
        for group in self._endgame_opt.param_groups:
            group["lr"] = lr
        stats = distill_actions(
            self.model.policy,
            obs,
            mask,
            best,
            coef=cfg.distill_coef,
            batch_size=cfg.batch_size,
            max_grad_norm=cfg.max_grad_norm,
            seed=cfg.seed * 1_000_003 + steps,
            optimizer=self._endgame_opt,
        )
        w = self.writer
        w.add_scalar("endgame/labels", len(best), steps)
        w.add_scalar("endgame/accuracy", stats["accuracy"], steps)
        w.add_scalar("endgame/loss", stats["loss"], steps)
        w.add_scalar("endgame/label_seconds", self._endgame_s, steps)
        w.add_scalar("endgame/train_seconds", time.perf_counter() - t0, steps)
        self._endgame_s = 0.0

    def _flush_episodes(self) -> None:
        if not self._pending:
            return
        ep = np.concatenate(self._pending)
        self._pending = []
        self.league.record(ep[:, 0], ep[:, 1], ep[:, 2])
        steps = int(self.model.num_timesteps)
        w = self.writer
        w.add_scalar("charts/episodes", ep.shape[0], steps)
        w.add_scalar("charts/episode_result", float(ep[:, 2].mean()), steps)
        w.add_scalar("charts/episode_margin", float(ep[:, 3].mean()), steps)
        w.add_scalar("charts/episode_win_rate", float(((ep[:, 2] + 1) / 2).mean()), steps)

    def _copy_losses(self, steps: int) -> None:
        values = dict(self.model.logger.name_to_value)
        names = {
            "train/policy_gradient_loss": "losses/policy_gradient",
            "train/value_loss": "losses/value",
            "train/entropy_loss": "losses/entropy",
            "train/approx_kl": "losses/approx_kl",
            "train/clip_fraction": "losses/clip_fraction",
            "train/explained_variance": "losses/explained_variance",
            "train/loss": "losses/total",
            "train/learning_rate": "losses/learning_rate",
        }
        for src, dst in names.items():
            if src in values:
                self.writer.add_scalar(dst, float(values[src]), steps)

    def _log_speed(self, steps: int, now: float) -> None:
        n = steps - self._rollout_steps0
        total = max(now - self._rollout_t0, 1e-9)
        rollout = max(self._rollout_end_t - self._rollout_t0, 1e-9)
        w = self.writer
        w.add_scalar("charts/steps_per_second", n / total, steps)
        w.add_scalar("charts/rollout_steps_per_second", n / rollout, steps)
        w.add_scalar("charts/update_seconds", max(now - self._rollout_end_t, 0.0), steps)
        w.add_scalar("charts/elapsed_minutes", self._elapsed() / 60, steps)

    def _log_league(self, steps: int) -> None:
        log_league(self.writer, self.league.summary(), steps, self.state, self.cfg.snapshot_every)

    def _evaluate(self, steps: int) -> None:
        from agents.nets.checkpoint import NeuralPolicy

        cfg = self.cfg
        me = NeuralPolicy.from_sb3_policy(self.model.policy, self.rules, name="learner", endgame=cfg.endgame)

        def check_stop(_: int) -> None:
            if self.stop_requested:
                raise StopTraining

        # Chunks of EVAL_CHUNK deals, each seeded from its first deal: the same results in this process and on Ray.
        if cfg.ray:
            results = duplicate_eval_on_ray(
                self._ray_address() or cfg.ray,
                self.rules,
                self.model.policy,
                ACTIVATIONS[cfg.activation].torch,
                cfg.eval_opponents,
                cfg.eval_deals,
                cfg.eval_seed,
                endgame=cfg.endgame,
                names=[a.name for a in self.eval_agents],
                stop=lambda: self.stop_requested,
            )
        else:
            results = []
            for agent in self.eval_agents:
                agent.seed(cfg.eval_seed)
                results.append(
                    duplicate_eval(
                        self.rules, me, agent, cfg.eval_deals, cfg.eval_seed, on_step=check_stop, chunk=EVAL_CHUNK
                    )
                )
        elapsed = self._elapsed()
        key = results[-1]
        record = log_eval(self.writer, self.run_dir, results, steps, elapsed, self._say)
        self.state["last_eval"] = {"step": steps, **{r.opponent: r.margin for r in results}}
        self.writer.add_scalar("eval/seconds", sum(r.seconds for r in results), steps)
        improved = key.margin > self.state["best_margin"]
        if improved:
            self.state["best_margin"] = key.margin
            self.state["best_step"] = steps
            self._save(self.run_dir / "best.zip", steps, "best", eval=record)
        self.writer.add_scalar("eval/best_margin", self.state["best_margin"], steps)
        summary = ", ".join(f"{r.opponent} {r.margin:+.3f} [{r.low:+.2f}, {r.high:+.2f}]" for r in results)
        self._say(
            f"step {steps:,} ({elapsed / 60:.1f} min): eval margin per hand vs {summary}{' *best*' if improved else ''}"
        )
        if self._bar is not None:
            self._bar.set_postfix_str(" ".join(f"{r.opponent} {r.margin:+.2f}" for r in results), refresh=False)

    def _meta(self, steps: int, kind: str, **extra: Any) -> dict[str, Any]:
        from agents.nets.checkpoint import checkpoint_meta

        return checkpoint_meta(
            self.rules,
            steps,
            kind=kind,
            run=self.run_dir.name,
            code_version=self.version["short"],
            endgame=self.cfg.endgame,
            config=self.cfg.to_dict(),
            created=now(),
            **extra,
        )

    def _save(
        self, path: Path, steps: int, kind: str, extra_members: dict[str, bytes] | None = None, **meta: Any
    ) -> None:
        from agents.nets.checkpoint import save_checkpoint

        save_checkpoint(self.model, path, self._meta(steps, kind, **meta), extra_members)

    def _elapsed(self) -> float:
        """Wall-clock seconds of training so far, over all sessions of the run."""
        return float(self.state["elapsed_s"]) + time.perf_counter() - self._session_t0

    def _capture(self) -> ResumePoint:
        """The state at this rollout boundary (``resume_point.capture``), the run's wall-clock time brought to now."""
        now = time.perf_counter()
        self.state["elapsed_s"] += now - self._session_t0
        self._session_t0 = now
        return capture(self.model, self.env, self.league, self.state, self._endgame_opt)

    def _write_checkpoint(self, point: ResumePoint, step_file: bool = False) -> None:
        """Write last.zip (with the resume state); with ``step_file`` first checkpoints/step_<steps>.zip (with it
        too, so that a step file can stand in for a damaged last.zip), then delete the step files beyond
        ``keep_checkpoints``."""
        rewind(self.model, point)
        members = {RESUME_MEMBER: point.blob}
        if step_file:
            ckpt_dir = self.run_dir / "checkpoints"
            self._save(ckpt_dir / f"step_{point.steps:09d}.zip", point.steps, "step", members)
        self._save(self.run_dir / "last.zip", point.steps, "last", members)
        if step_file:
            prune_step_files(self.run_dir / "checkpoints", self.cfg.keep_checkpoints)

    # ------------------------------------------------------------------------------------------------ output

    def _open_bar(self, start: int) -> None:
        if self.cfg.progress:
            self._bar = open_bar(self.cfg.total_steps, start, f"{self.cfg.variant}/{self.cfg.name}")

    def _close_bar(self) -> None:
        """Close the progress bar (tqdm leaves its last state on its line); later lines are plain prints."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def _say(self, text: str) -> None:
        if self._bar is not None:
            self._bar.write(text)
        else:
            print(text, flush=True)


def _check_ray(cfg: TrainConfig) -> None:
    """With the ``ray`` setting: Ray installed and something answering at its address, else ``ConfigError``."""
    if not cfg.ray:
        return
    from agents.errors import TournamentError
    from agents.evaluation.cluster import probe_address, require_ray

    try:
        require_ray()
        probe_address(cfg.ray)
    except TournamentError as e:
        raise ConfigError(f"ray: {str(e).removeprefix('--ray ')}") from None


def _make(spec: str, rules: Rules, seed: int, what: str) -> Policy:
    try:
        return make_agent(spec, rules, seed)
    except AgentSpecError as e:
        raise ConfigError(f"{what}: {e}") from None
