"""The one way into a network's files: every loader of the project opens weights through this module, and nothing
else reads them (``tests/test_architecture.py`` fails on a ``torch.load``, ``np.load``, zip read or ONNX session
elsewhere). What a path is comes from the registry's one path sniffer (``agents.base.path_kind``); whether a network
fits the rules from the one compatibility check (``agents.nets.compat.check_fit``); activation names from the one
activation table (``agents.nets.mlp.ACTIVATIONS``).

Three formats, each read without running code from the file:

- a ``train.py`` checkpoint (``.zip``): its ``scopa_meta.json`` (``read_checkpoint_meta``, ``check_meta``), the
  policy's and the optimizer's state dicts (``read_weights``, ``read_torch_member``: ``torch.load(weights_only=True)``,
  never SB3's pickled ``data``), the activation as text (``read_activation``), the warm start's weights
  (``warm_start_weights``);
- a bot export directory (``agents.nets.bot``): the model card (``read_card``: JSON, its ``search`` checked by
  ``check_search``), ``policy.npz`` (``read_npz``: arrays only, ``allow_pickle=False``, once every member's size is
  checked), ``policy.onnx`` (``onnx_session``: built-in CPU kernels only), each checked against the sha256 its card
  records (``read_bot_files``);
- an RLlib module saved by ``agents.nets.rllib`` (``read_rllib_module``: its JSON card and
  ``torch.load(weights_only=True)``; RLlib's own pickles are never opened).

``read_npz`` is the one guarded reader of every ``.npz`` the project loads (bot weights, resume states, labels files
and expert iteration's data through ``agents.training.label_store``): each member's size checked from its ``.npy``
header against what the member holds, a ceiling and (``max_ratio``) the file's real size, before anything is read.

``open_network(rules, path)`` is the typed handle for the code that runs a network's layers itself (the ``az``
search and ``pimc:model=PATH`` through ``agents.base.load_network``, expert iteration's start): a bot directory
or a checkpoint as numpy layers and an activation name, checked against the rules. The agents that play a file
(``agents.nets.checkpoint``, ``agents.nets.bot``, ``agents.nets.rllib``), the exporter and the trainer's warm start and
resume build on the readers above.
"""

from __future__ import annotations

import hashlib
import io
import json
import stat
import zipfile
import zlib
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from agents.base import MODEL_CARD, AgentSpecError, path_kind
from agents.cli.settings import ConfigError
from agents.cli.shell import python_command
from agents.nets.bot_search import MAX_WORLDS, VALUE_SEARCHES, BotError, check_search, has_network, is_whole
from agents.nets.compat import check_fit
from agents.nets.mlp import ACTIVATIONS, TORCH_ACTIVATIONS
from scopa_env.engine import observation
from scopa_env.rules import Rules

__all__ = [
    "CARD_FORMAT",
    "CARD_VERSION",
    "CHECKPOINT_FORMAT",
    "MAX_JSON_MEMBER_BYTES",
    "MAX_NPZ_BYTES",
    "MAX_WEIGHT_BYTES",
    "META_NAME",
    "NPZ_SLACK_BYTES",
    "ONNX",
    "OPTIMIZER_MEMBER",
    "POLICY_MEMBER",
    "RLLIB_FORMAT",
    "RLLIB_META_FILE",
    "RLLIB_WEIGHTS_FILE",
    "VALUE",
    "WEIGHTS",
    "BotFiles",
    "Layers",
    "Network",
    "check_finite",
    "check_meta",
    "checkpoint_layers",
    "file_sha256",
    "onnx_session",
    "open_checkpoint",
    "open_network",
    "read_activation",
    "read_bot_files",
    "read_card",
    "read_checkpoint_meta",
    "read_member",
    "read_npz",
    "read_rllib_module",
    "read_torch_member",
    "read_weights",
    "warm_start_weights",
]

Layers = list[tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]]
"""A network's layers, ``(weight, bias)`` float32 arrays, input layer first; the last gives the action logits."""


# --------------------------------------------------------------------------------------------------- checkpoints

META_NAME = "scopa_meta.json"
"""Name of the metadata member inside a checkpoint zip."""
CHECKPOINT_FORMAT = 1
"""Version of the metadata format; bumped when its meaning changes."""


def open_checkpoint(path: str | Path) -> zipfile.ZipFile:
    p = Path(path)
    if not p.exists():
        raise AgentSpecError(
            f"checkpoint {str(p)!r} does not exist; give the path of a .zip written by train.py "
            "(e.g. runs/<run>/best.zip), or an agent name such as 'greedy'"
        )
    if p.is_dir():
        raise AgentSpecError(
            f"checkpoint {str(p)!r} is a directory; give a checkpoint file inside it, e.g. {p}/best.zip"
        )
    if not zipfile.is_zipfile(p):
        raise AgentSpecError(
            f"checkpoint {str(p)!r} is not a zip archive (corrupt, truncated or not a checkpoint); "
            "use a .zip written by train.py, e.g. the run's best.zip or last.zip"
        )
    try:
        return zipfile.ZipFile(p)
    except (zipfile.BadZipFile, OSError) as e:
        raise AgentSpecError(f"checkpoint {str(p)!r} cannot be opened ({e}); use another checkpoint of the run") from e


MAX_NPZ_BYTES = 1 << 31
"""The default ceiling of ``read_npz`` and ``read_member``: 2 GiB (a scopa network's weights or a training state are
far smaller)."""
MAX_WEIGHT_BYTES = 1 << 30
"""The ceiling of a bot's ``policy.npz``: 1 GiB of weights (the largest shipped bot holds 8.6 MB)."""
MAX_JSON_MEMBER_BYTES = 1 << 26
"""The ceiling of a checkpoint's JSON members (``scopa_meta.json``, SB3's ``data``): 64 MiB."""


def read_member(archive: zipfile.ZipFile, member: str, path: str | Path, max_bytes: int = MAX_NPZ_BYTES) -> bytes:
    """The bytes of the checkpoint ``path``'s zip ``member``, refused (``AgentSpecError``) when the archive says they
    expand to more than ``max_bytes``: a deflated member of a crafted file can expand a thousandfold, and the zip
    reader never returns more than the size the archive records."""
    size = archive.getinfo(member).file_size
    if size > max_bytes:
        raise AgentSpecError(
            f"checkpoint {str(path)!r}: its {member} would expand to {size:,} bytes, more than {max_bytes:,} "
            "(damaged or crafted); use another checkpoint of the run"
        )
    return archive.read(member)


_META_WHOLE_NUMBERS = ("format", "obs_version", "obs_size", "num_cards", "num_players", "steps", "endgame")
"""Metadata fields that must be whole numbers when present (``obs_version`` always is)."""
_EOCD = b"PK\x05\x06"  # the zip format's end-of-central-directory record (22 bytes + a comment of up to 64 KiB)


def _cut_short(source: str | Path | bytes) -> bool:
    """True when the file (or bytes) does not end with a zip's end record (a copy or download that stopped early):
    the zip reader may then find an inner archive's end instead (a checkpoint stores its weights as zips of their
    own)."""
    if isinstance(source, bytes):
        tail = source[-22 - 65535 :]
    else:
        with open(source, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - 22 - 65535))
            tail = f.read()
    at = tail.rfind(_EOCD)
    while at >= 0:
        if at + 22 <= len(tail) and at + 22 + int.from_bytes(tail[at + 20 : at + 22], "little") == len(tail):
            return False
        at = tail.rfind(_EOCD, 0, at)
    return True


def _check_meta_fields(meta: Any, path: str | Path) -> dict[str, Any]:
    """``meta`` if its fields have their types (a dict, ``variant`` a string, the counts whole numbers), else
    ``AgentSpecError`` naming the field: code reading it later compares and counts with them."""
    where = f"checkpoint {str(path)!r}: its {META_NAME}"
    if not isinstance(meta, dict) or "variant" not in meta or "obs_version" not in meta:
        raise AgentSpecError(f"{where} lacks the variant or the observation version")
    if not isinstance(meta["variant"], str):
        raise AgentSpecError(f"{where} has variant {meta['variant']!r}, not a variant name; the file is damaged")
    for key in _META_WHOLE_NUMBERS:
        if key in meta and type(meta[key]) is not int:
            raise AgentSpecError(
                f"{where} has {key} {meta[key]!r}, not a whole number; the file is damaged or was edited by hand "
                "(use a checkpoint as train.py wrote it)"
            )
    return meta


def read_checkpoint_meta(path: str | Path) -> dict[str, Any]:
    """The ``scopa_meta.json`` of a checkpoint; raises ``AgentSpecError`` for a missing, corrupt or foreign file."""
    with open_checkpoint(path) as archive:
        if META_NAME not in archive.namelist():
            if _cut_short(path):
                raise AgentSpecError(
                    f"checkpoint {str(path)!r} is cut short (the end of the file is missing: a copy or download "
                    "that stopped early, or a disk that filled up); copy it again or use another checkpoint of the run"
                )
            raise AgentSpecError(
                f"checkpoint {str(path)!r} has no {META_NAME}: it was not written by train.py, so its variant and "
                "observation version are unknown; use a checkpoint from a train.py run directory"
            )
        try:
            meta = json.loads(read_member(archive, META_NAME, path, MAX_JSON_MEMBER_BYTES))
        except (zipfile.BadZipFile, zlib.error, OSError, ValueError, RecursionError) as e:
            raise AgentSpecError(
                f"checkpoint {str(path)!r}: its {META_NAME} is unreadable ({e}); the file is corrupt"
            ) from None
    return _check_meta_fields(meta, path)


def check_meta(meta: dict[str, Any], rules: Rules, path: str | Path, any_variant: bool = False) -> None:
    """Raise ``AgentSpecError`` unless a checkpoint with ``meta`` can play ``rules``.

    ``any_variant``: accept a checkpoint of another variant when its observations and actions have the same shape
    (e.g. a ``classic`` bot in ``classic-21``).
    """
    where = f"checkpoint {str(path)!r}"
    if meta.get("format", CHECKPOINT_FORMAT) > CHECKPOINT_FORMAT:
        raise AgentSpecError(f"{where} has metadata format {meta['format']}, newer than this code's; update the code")
    check_fit(where, meta, rules, any_variant)


POLICY_MEMBER = "policy.pth"
"""The zip member of an SB3 checkpoint holding the policy's weights (a ``torch.save`` of its state dict)."""
OPTIMIZER_MEMBER = "policy.optimizer.pth"
"""The zip member holding the optimizer's state dict (read when a run resumes)."""


def read_torch_member(path: str | Path, member: str, what: str = "weights") -> Any:
    """A ``torch.save`` stored in a checkpoint's zip ``member``, read with ``torch.load(weights_only=True)``: tensors
    and plain containers only, so a crafted file cannot run code (SB3's own ``load`` would unpickle its ``data``).
    ``what`` names the expected contents in the error for a damaged or foreign member."""
    import torch

    with open_checkpoint(path) as archive:
        if member not in archive.namelist():
            raise AgentSpecError(f"checkpoint {str(path)!r} has no {member}; it is not a train.py checkpoint")
        try:
            raw = read_member(archive, member, path)
            return torch.load(io.BytesIO(raw), map_location="cpu", weights_only=True)
        except AgentSpecError:
            raise
        except Exception as e:  # zlib / CRC errors, truncated or foreign members, refused (non-weight) objects
            detail = str(e).strip().splitlines()[0] if str(e).strip() else "no detail"
            raise AgentSpecError(
                f"checkpoint {str(path)!r}: its {member} is damaged or holds more than {what} ({type(e).__name__}: "
                f"{detail}); use another checkpoint of the run"
            ) from None


def read_weights(path: str | Path, member: str = POLICY_MEMBER) -> dict[str, Any]:
    """The state dict of tensors stored in a checkpoint's zip ``member`` (``read_torch_member``)."""
    import torch

    state = read_torch_member(path, member)
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise AgentSpecError(f"checkpoint {str(path)!r}: its {member} is not a state dict of tensors")
    return state


def warm_start_weights(path: str | Path, rules: Rules, net_arch: Any, activation: str) -> dict[str, Any]:
    """The policy weights of the checkpoint ``path`` that starts a run (``init_from``), checked for the run's variant,
    ``net_arch`` and ``activation``; ``ConfigError`` otherwise."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"init_from: no checkpoint file {str(path)!r}; give a .zip written by train.py (a best.zip)")
    ours = {"net_arch": net_arch, "activation": activation}
    try:
        meta = read_checkpoint_meta(path)
        check_meta(meta, rules, path)
        theirs = meta.get("config", {})
        for key in ("net_arch", "activation"):
            if key in theirs and theirs[key] != ours[key]:
                raise ConfigError(
                    f"init_from {str(path)!r}: the checkpoint has {key} {theirs[key]!r}, this config "
                    f"{ours[key]!r}; set {key} to the checkpoint's"
                )
        state = read_weights(path)
    except AgentSpecError as e:
        raise ConfigError(f"init_from: {e}") from None
    except (zipfile.BadZipFile, OSError, RuntimeError, EOFError) as e:
        raise ConfigError(f"init_from {str(path)!r}: unreadable checkpoint ({e}); the file is corrupt") from None
    return state


def read_activation(path: str | Path, meta: dict[str, Any]) -> str:
    """The ``torch.nn`` class name of a checkpoint's activation, read as text: its ``train.py`` config, else the
    readable copy SB3 writes beside the pickled ``policy_kwargs`` in its ``data`` JSON, else SB3's default (Tanh)."""
    config = meta.get("config")
    if isinstance(config, dict) and "activation" in config:
        given = str(config["activation"])
        name = ACTIVATIONS[given].torch if given in ACTIVATIONS else given
    else:
        name = "Tanh"
        with open_checkpoint(path) as archive:
            try:
                data = (
                    json.loads(read_member(archive, "data", path, MAX_JSON_MEMBER_BYTES))
                    if "data" in archive.namelist()
                    else {}
                )
            except (zipfile.BadZipFile, zlib.error, OSError, ValueError, RecursionError):
                raise AgentSpecError(
                    f"checkpoint {str(path)!r}: its data member is unreadable; the file is corrupt"
                ) from None
        kwargs = data.get("policy_kwargs") if isinstance(data, dict) else None
        text = kwargs.get("activation_fn") if isinstance(kwargs, dict) else None
        if isinstance(text, str):  # "<class 'torch.nn.modules.activation.ReLU'>"
            name = text.strip("<>'\" ").removeprefix("class").strip(" '\"").rpartition(".")[2]
    if name not in TORCH_ACTIVATIONS:
        raise AgentSpecError(
            f"checkpoint {str(path)!r}: activation {name!r} is not supported; supported: {', '.join(TORCH_ACTIVATIONS)}"
        )
    return name


# --------------------------------------------------------------------------------------------------- bot directories

WEIGHTS = "policy.npz"
"""A bot's network as plain arrays (``w0, b0, ...``, ``activation``, ``num_layers``)."""
ONNX = "policy.onnx"
"""The same network with the mask applied, for onnxruntime."""
VALUE = "value.npz"
"""A ``vpimc`` search bot's value network (``agents.nets.vpimc.read_value_net``), listed in its card's ``files``."""
CARD_FORMAT = "scopa-bot"
"""``format`` field of a model card."""
CARD_VERSION = 1
"""``version`` field of a model card; bumped when the export directory's layout changes."""
MAX_CARD_BYTES = 16 << 20
"""Largest model card read (a card is a few KiB; a bigger one is not a model card)."""


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def read_card(directory: Path) -> dict[str, Any]:
    path = directory / MODEL_CARD
    if not path.is_file():
        hint = " (it holds a policy.npz but no model card)" if (directory / WEIGHTS).exists() else ""
        raise BotError(
            f"{directory} is not a bot export directory: {MODEL_CARD} is missing{hint}; create one with "
            f"'{python_command('-m', 'agents.nets.export', 'CHECKPOINT', '--out', Path(directory))}'"
        )
    try:
        if path.stat().st_size > MAX_CARD_BYTES:
            raise BotError(f"{path} is {path.stat().st_size} bytes, too big for a model card; export the bot again")
        card = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        what = "it nests too deeply" if isinstance(e, RecursionError) else str(e)
        raise BotError(f"cannot read the model card {path}: {what}; export the checkpoint again") from None
    if not isinstance(card, dict) or card.get("format") != CARD_FORMAT:
        raise BotError(f"{path} is not a bot model card (its 'format' must be {CARD_FORMAT!r})")
    if card.get("version") != CARD_VERSION:
        raise BotError(
            f"{path} has model card version {card.get('version')!r}, this code reads version {CARD_VERSION}; "
            "export the checkpoint again with this version of agents.nets.export"
        )
    for key in ("variant", "obs_version", "obs_size", "num_cards"):
        if key not in card:
            raise BotError(f"{path} lacks the field {key!r}; export the checkpoint again")
    for key in ("obs_version", "obs_size", "num_cards"):
        if not is_whole(card[key]) or card[key] < 1:
            raise BotError(
                f"{path}: {key!r} must be a positive integer, got {card[key]!r}; export the checkpoint again"
            )
    if not isinstance(card["variant"], str):
        raise BotError(f"{path}: 'variant' must be a variant name, got {card['variant']!r}")
    serves = card.get("serves", [])
    if not isinstance(serves, list) or not all(isinstance(v, str) for v in serves):
        raise BotError(f"{path}: 'serves' must be a list of variant names, got {serves!r}")
    endgame = card.get("endgame", 0)
    if not is_whole(endgame) or endgame < 0:
        raise BotError(f"{path}: 'endgame' must be a number of plies >= 0, got {endgame!r}; export the bot again")
    worlds = card.get("endgame_worlds", 0)
    if not is_whole(worlds) or not 0 <= worlds <= MAX_WORLDS:
        raise BotError(
            f"{path}: 'endgame_worlds' must be a number of sampled deals in 0..{MAX_WORLDS}, got {worlds!r}; set it "
            f"in 0..{MAX_WORLDS} or drop it"
        )
    if card.get("search") is not None:
        check_search(card["search"], str(path))
    files = card.get("files", {})
    if not isinstance(files, dict) or not all(
        isinstance(v, dict) and isinstance(v.get("sha256", ""), str) for v in files.values()
    ):
        raise BotError(f"{path}: 'files' must map file names to {{'sha256': ..., 'size': ...}}; export the bot again")
    return card


def _check_sha256(directory: Path, card: dict[str, Any], name: str) -> None:
    """Raise unless ``directory / name`` has the sha256 the model card records for it (if it records one)."""
    expected = card.get("files", {}).get(name, {}).get("sha256")
    if expected is None:
        return
    path = directory / name
    if not path.is_file():
        raise BotError(
            f"{path} is missing (the model card lists it); copy the whole export directory again or re-export the "
            "checkpoint with "
            f"'{python_command('-m', 'agents.nets.export', 'CHECKPOINT', '--out', Path(directory), '--force')}'"
        )
    try:
        got = file_sha256(path)
    except OSError as e:
        raise BotError(f"{path} cannot be read ({e.strerror or e}); copy the export directory again") from None
    if got != expected:
        raise BotError(
            f"{path} does not match its model card: sha256 {got}, the card says {expected}; the file was changed "
            f"or damaged since the export: copy the export directory again or re-export the checkpoint with "
            f"'{python_command('-m', 'agents.nets.export', 'CHECKPOINT', '--out', Path(directory), '--force')}'"
        )


def _header(member: Any) -> tuple[tuple[int, ...], np.dtype[Any]]:
    """The shape and dtype of the ``.npy`` stream ``member``, read from its header only."""
    version = np.lib.format.read_magic(member)
    if version == (1, 0):
        shape, _, dtype = np.lib.format.read_array_header_1_0(member)
    elif version == (2, 0):
        shape, _, dtype = np.lib.format.read_array_header_2_0(member)
    else:
        raise ValueError(f".npy format version {version[0]}.{version[1]}; this reader takes 1.0 and 2.0")
    return shape, dtype


NPZ_SLACK_BYTES = 1 << 20
"""What a ``.npz`` read with ``max_ratio`` may expand to beyond that ratio of its size: 1 MiB (a small file's headers
and short arrays compress far better than its bulk)."""


def read_npz(
    source: str | Path | bytes,
    *,
    max_bytes: int = MAX_NPZ_BYTES,
    max_ratio: float | None = None,
    members: Collection[str] | None = None,
) -> dict[str, npt.NDArray[Any]]:
    """Every array of the ``.npz`` file (or bytes) ``source``, by member name, after checking all their sizes; with
    ``members``, only those (every member's size is still checked).

    Nothing is decompressed before the checks but each member's ``.npy`` header. Raises ``ValueError`` (message
    naming the member and what is wrong) for a file that is not a zip archive, two members of one name, a member
    that is not a ``.npy`` array (or is encrypted, or compressed in a way zipfile cannot read), an object array, a
    header whose shape is not a list of sizes >= 0 or claims more bytes than its member holds, arrays of more than
    ``max_bytes`` in all, and (with ``max_ratio``) members that the archive says expand to more than ``max_ratio``
    times the file's size plus ``NPZ_SLACK_BYTES`` (a zip bomb: a deflated member can expand a thousandfold);
    ``OSError`` when the file cannot be read (a folder, a missing file); ``ValueError`` for a device or a pipe, before
    it is opened (reading one could wait for ever)."""
    raw: Any = io.BytesIO(source) if isinstance(source, bytes) else source
    if isinstance(source, bytes):
        size = len(source)
    else:
        found = Path(source).stat()
        if not (stat.S_ISREG(found.st_mode) or stat.S_ISDIR(found.st_mode)):
            raise ValueError("it is not a regular file (a device or a pipe): reading it could wait for ever")
        size = found.st_size
    try:
        with zipfile.ZipFile(raw) as archive:
            infos = archive.infolist()
            names = [info.filename for info in infos]
            if len(set(names)) != len(names):
                raise ValueError("it holds two members of one name (damaged or crafted)")
            declared = sum(info.file_size for info in infos)
            if max_ratio is not None and declared > max_ratio * size + NPZ_SLACK_BYTES:
                raise ValueError(
                    f"its members would expand to {declared:,} bytes from a file of {size:,}, more than "
                    f"{max_ratio:g} times its size (a zip bomb, or damaged)"
                )
            total = 0
            for info in infos:
                if not info.filename.endswith(".npy"):
                    raise ValueError(f"member {info.filename!r} is not a .npy array")
                with archive.open(info) as member:
                    try:
                        shape, dtype = _header(member)
                    except ValueError as e:
                        raise ValueError(f"member {info.filename!r}: {e}") from None
                    header_size = member.tell()
                if dtype.hasobject:
                    raise ValueError(f"member {info.filename!r} holds Python objects ({dtype}), not numbers")
                if any(n < 0 for n in shape):
                    raise ValueError(f"member {info.filename!r} has the shape {shape}, a negative size (crafted)")
                nbytes = dtype.itemsize
                for n in shape:
                    nbytes *= int(n)
                if header_size + nbytes > info.file_size:
                    raise ValueError(
                        f"member {info.filename!r} claims an array of shape {shape} ({nbytes:,} bytes) but holds "
                        f"{info.file_size:,} bytes (damaged or crafted)"
                    )
                total += nbytes
                if total > max_bytes:
                    raise ValueError(
                        f"its arrays would take more than {max_bytes:,} bytes (reached at member {info.filename!r}, "
                        f"shape {shape}), more than a file of this kind holds (damaged or crafted)"
                    )
            arrays = {}
            for info in infos:
                name = info.filename.removesuffix(".npy")
                if members is None or name in members:
                    with archive.open(info) as member:
                        arrays[name] = np.lib.format.read_array(member, allow_pickle=False)
            return arrays
    except (zipfile.BadZipFile, zlib.error, EOFError, RuntimeError, NotImplementedError) as e:
        raise ValueError(f"not a readable .npz archive ({_unreadable(source, size, e)})") from None


def _unreadable(source: str | Path | bytes, size: int, error: Exception) -> str:
    """Why the zip reader failed on ``source``, in words: empty, a lone ``.npy`` array, cut short, or its error."""
    if size == 0:
        return "the file is empty: 0 bytes"
    if isinstance(source, bytes):
        start = source[:6]
    else:
        with open(source, "rb") as f:
            start = f.read(6)
    if start == b"\x93NUMPY":
        return "it is a single .npy array, not an .npz archive of named arrays"
    if start.startswith(b"PK") and _cut_short(source):
        return "it is cut short: its end is missing, as after a copy or download that stopped early"
    return f"damaged: {error}" if start.startswith(b"PK") else f"not a zip archive: {error}"


def _read_npz(
    path: Path, obs_size: int, num_cards: int
) -> tuple[list[tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]], str]:
    """The (W^T, b) layers and activation name of ``policy.npz``, checked against the model card's sizes."""
    if not path.is_file():
        raise BotError(
            f"{path} is missing; export the checkpoint again with '{python_command('-m', 'agents.nets.export')}'"
        )
    try:
        arrays = read_npz(path, max_bytes=MAX_WEIGHT_BYTES)
    except (OSError, ValueError) as e:
        raise BotError(f"cannot read the weights {path}: {e}") from None
    if "activation" not in arrays or "num_layers" not in arrays:
        raise BotError(f"{path} lacks 'activation' or 'num_layers'; export the checkpoint again")
    activation = str(arrays["activation"])
    if activation not in ACTIVATIONS:
        raise BotError(f"{path}: activation {activation!r} is not supported; supported: {', '.join(ACTIVATIONS)}")
    num_layers = arrays["num_layers"]
    if num_layers.shape != () or num_layers.dtype.kind not in "iu" or not 1 <= int(num_layers) <= 64:
        raise BotError(
            f"{path}: 'num_layers' must be one integer 1..64, got {num_layers!r}; export the checkpoint again"
        )
    layers = []
    width = obs_size
    for i in range(int(num_layers)):
        try:
            w, b = arrays[f"w{i}"], arrays[f"b{i}"]
        except KeyError:
            raise BotError(f"{path} lacks layer {i} (w{i}, b{i}); export the checkpoint again") from None
        if w.ndim != 2 or w.shape[1] != width or b.shape != (w.shape[0],):
            raise BotError(
                f"{path}: layer {i} has weights {w.shape} and bias {b.shape}; expected weights (k, {width}) and "
                "bias (k,); export the checkpoint again"
            )
        if w.dtype.kind != "f" or b.dtype.kind != "f":
            raise BotError(
                f"{path}: layer {i} holds {w.dtype} / {b.dtype} values, not floats; export the checkpoint again"
            )
        layers.append((np.ascontiguousarray(w.T, dtype=np.float32), b.astype(np.float32)))
        width = w.shape[0]
    if not layers or width != num_cards:
        raise BotError(f"{path}: the network outputs {width} values, the model card says {num_cards} actions")
    check_finite(layers, str(path))
    return layers, activation


def check_finite(layers: list[tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]], where: str) -> None:
    for i, (w, b) in enumerate(layers):
        if not (np.isfinite(w).all() and np.isfinite(b).all()):
            raise BotError(
                f"{where}: layer {i} holds NaN or infinite weights, so the bot's choices would be meaningless; "
                "re-export a checkpoint whose training did not diverge"
            )


@dataclass(frozen=True)
class BotFiles:
    """A bot export directory as read: its model card and, unless it is a search-only bot, its network."""

    directory: Path
    card: dict[str, Any]
    layers: Layers | None
    """``(weight (in, out), bias)``; None for a search-only (pimc) bot."""
    activation: str | None
    """A name of ``agents.nets.mlp.ACTIVATIONS``; None for a search-only bot."""


def read_bot_files(directory: str | Path) -> BotFiles:
    """The model card and ``policy.npz`` of a bot export directory, each file checked against the sha256 its card
    records; ``BotError`` saying what is wrong (``policy.onnx`` is opened by ``onnx_session`` when it is used)."""
    d = Path(directory)
    if not d.exists():
        raise BotError(
            f"bot directory {d} does not exist; export one with '{python_command('-m', 'agents.nets.export')}'"
        )
    if not d.is_dir():
        raise BotError(
            f"{d} is a file, not a bot export directory; give the directory that holds {MODEL_CARD} (e.g. {d.parent})"
        )
    card = read_card(d)
    layers: Layers | None = None
    activation: str | None = None
    if has_network(card):
        _check_sha256(d, card, WEIGHTS)
        layers, activation = _read_npz(d / WEIGHTS, int(card["obs_size"]), int(card["num_cards"]))
    if isinstance(card.get("search"), dict) and card["search"].get("agent") in VALUE_SEARCHES:
        if not card.get("files", {}).get(VALUE, {}).get("sha256"):
            raise BotError(
                f"{d}: its search needs the value network {VALUE}, which its card does not list; export again"
            )
        _check_sha256(d, card, VALUE)  # read when the search starts (agents.nets.vpimc.read_value_net)
    return BotFiles(d, card, layers, activation)


def onnx_session(directory: Path, card: dict[str, Any], threads: int) -> Any:
    """An onnxruntime session of the bot's ``policy.onnx`` (checked against its card's sha256; built-in CPU kernels
    only, no custom-op library; inputs ``obs`` and ``action_mask``, outputs ``probs`` and ``action``)."""
    import onnxruntime as ort

    if not (directory / ONNX).is_file():
        raise BotError(f"no {ONNX} in {directory}; load with prefer='numpy'")
    _check_sha256(directory, card, ONNX)
    opts = ort.SessionOptions()  # built-in CPU kernels only: no custom-op library is ever registered
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    opts.add_session_config_entry("session.load_model_format", "ONNX")
    try:
        session = ort.InferenceSession(str(directory / ONNX), opts, providers=["CPUExecutionProvider"])
    except Exception as e:  # onnxruntime raises its own exception types
        raise BotError(f"onnxruntime cannot load {directory / ONNX}: {e}") from None
    inputs = {i.name: i for i in session.get_inputs()}
    outputs = {o.name for o in session.get_outputs()}
    if set(inputs) != {"obs", "action_mask"} or not {"probs", "action"} <= outputs:
        raise BotError(
            f"{directory / ONNX} has inputs {sorted(inputs)} and outputs {sorted(outputs)}; expected inputs "
            "obs, action_mask and outputs probs, action; export the checkpoint again"
        )
    width = inputs["obs"].shape[-1]
    if isinstance(width, int) and width != int(card["obs_size"]):
        raise BotError(f"{directory / ONNX} takes {width} observation values, the card says {int(card['obs_size'])}")
    return session


# --------------------------------------------------------------------------------------------------- RLlib modules

RLLIB_WEIGHTS_FILE = "scopa_rllib_module.pt"
"""An RLlib module's state dict (tensors only), written by ``agents.nets.rllib`` beside RLlib's own checkpoint files."""
RLLIB_META_FILE = "scopa_rllib_module.json"
"""What the RLlib network is: variant, observation size, activations, module id."""
RLLIB_FORMAT = 1
"""Version of ``RLLIB_META_FILE``'s format."""


def read_rllib_module(path: str | Path, rules: Rules) -> tuple[dict[str, Any], dict[str, Any]]:
    """(JSON card, state dict of tensors) of an RLlib module saved by ``agents.nets.rllib`` in the folder ``path``,
    checked against ``rules``; ``AgentSpecError`` otherwise. Reads JSON and tensors only
    (``torch.load(weights_only=True)``); RLlib's pickle files are never opened."""
    import torch

    folder = Path(path)
    where = f"rllib checkpoint {str(path)!r}"
    if not folder.is_dir():
        raise AgentSpecError(f"{where} is not a folder; give the folder save_rllib_checkpoint wrote")
    if not (folder / RLLIB_META_FILE).is_file() or not (folder / RLLIB_WEIGHTS_FILE).is_file():
        raise AgentSpecError(
            f"{where} has no {RLLIB_META_FILE} / {RLLIB_WEIGHTS_FILE}. RLlib's own checkpoint files are pickle, which "
            "can run code when loaded, so they are not read: save with agents.nets.rllib.save_rllib_checkpoint(algo, "
            "DIR), or add the files to a checkpoint you trust with: "
            f"{python_command('-m', 'agents.nets.rllib', folder)}"
        )
    try:
        meta = json.loads((folder / RLLIB_META_FILE).read_text(encoding="utf-8"))
        if not isinstance(meta, dict):
            raise ValueError("not a JSON object")
        state = torch.load(folder / RLLIB_WEIGHTS_FILE, map_location="cpu", weights_only=True)
    except Exception as e:  # bad JSON, a damaged file, a refused (non-tensor) object in the weights
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise AgentSpecError(f"{where}: unreadable ({type(e).__name__}: {first}); export it again") from None
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise AgentSpecError(f"{where}: {RLLIB_WEIGHTS_FILE} is not a state dict of tensors")
    fmt = meta.get("format", RLLIB_FORMAT)
    if not isinstance(fmt, int) or isinstance(fmt, bool):
        raise AgentSpecError(f"{where}: {RLLIB_META_FILE} has format {fmt!r}, not a whole number; export it again")
    if fmt > RLLIB_FORMAT:
        raise AgentSpecError(f"{where} has format {fmt}, newer than this code's; update the code")
    missing = [key for key in ("variant", "obs_version", "obs_size", "num_cards") if key not in meta]
    if missing:
        raise AgentSpecError(
            f"{where}: {RLLIB_META_FILE} lacks {', '.join(missing)}; export it again "
            f"({python_command('-m', 'agents.nets.rllib', 'DIR')})"
        )
    if meta["variant"] != rules.name:
        raise AgentSpecError(
            f"{where} was trained for variant {meta['variant']!r}, not {rules.name!r}; play it with --variant "
            f"{meta['variant']}"
        )
    for key, ours in (
        ("obs_version", observation.observation_version(rules)),
        ("obs_size", observation.observation_size(rules)),
        ("num_cards", rules.num_actions),
    ):
        theirs = meta[key]
        if theirs != ours or type(theirs) is not int:
            raise AgentSpecError(
                f"{where}: {RLLIB_META_FILE} says {key} {theirs!r}, where this code's {rules.name} has {ours!r}; "
                "train it again with this code (or export it again if the file was edited)"
            )
    check_fit(where, meta, rules)  # the one check, after the card's own words (all its fields are known to fit)
    return meta, state


# --------------------------------------------------------------------------------------------------- the handle


@dataclass(frozen=True)
class Network:
    """A policy network read from its files as numpy layers (``open_network``)."""

    layers: Layers
    """``(weight (in, out), bias (out,))`` float32 arrays, input layer first; the last gives the action logits."""
    activation: str
    """The hidden activation, a name of ``agents.nets.mlp.ACTIVATIONS``."""
    source: str
    """The path it was read from."""
    kind: Literal["bot", "checkpoint"] = "bot"
    """What the path was: a bot export directory or a ``train.py`` checkpoint."""


def checkpoint_layers(state: dict[str, Any], activation: str, rules: Rules, path: str | Path) -> tuple[Layers, str]:
    """The actor of a checkpoint's policy state dict as numpy layers ``(weight (in, out), bias)`` and the activation's
    name in the one table, from a ``torch.nn`` class name (``read_activation``); ``AgentSpecError`` for weights that do
    not make an MLP from ``rules``' observations to its actions, or that hold NaN."""
    where = f"checkpoint {str(path)!r}"
    if activation not in TORCH_ACTIVATIONS:
        raise AgentSpecError(f"{where}: activation {activation!r} is not one of {', '.join(TORCH_ACTIVATIONS)}")
    bad = [k for k, v in state.items() if v.is_floating_point() and not bool(v.isfinite().all())]
    if bad:
        raise AgentSpecError(f"{where}: weights {', '.join(bad[:3])} hold NaN or infinite values; the file is damaged")
    prefixes = [f"mlp_extractor.policy_net.{k}" for k in range(0, 2 * len(state), 2)]
    prefixes = [p for p in prefixes if f"{p}.weight" in state] + ["action_net"]
    layers: Layers = []
    width = observation.observation_size(rules)
    for prefix in prefixes:
        w, b = state.get(f"{prefix}.weight"), state.get(f"{prefix}.bias")
        if w is None or b is None or w.ndim != 2 or w.shape[1] != width or tuple(b.shape) != (w.shape[0],):
            got = "missing" if w is None or b is None else f"weights {tuple(w.shape)}, bias {tuple(b.shape)}"
            raise AgentSpecError(
                f"{where}: cannot rebuild its policy network from its weights ({prefix}: {got}, input {width})"
            )
        weight = w.detach().cpu().numpy().astype(np.float32)
        layers.append((weight.T, b.detach().cpu().numpy().astype(np.float32)))
        width = int(w.shape[0])
    if width != rules.num_actions:
        raise AgentSpecError(
            f"{where}: cannot rebuild its policy network from its weights ({width} outputs, {rules.num_actions} "
            "actions)"
        )
    return layers, TORCH_ACTIVATIONS[activation]


def open_network(rules: Rules, path: str | Path, who: str = "", any_variant: bool = False) -> Network:
    """The network of a bot export directory or of a ``train.py`` checkpoint ``.zip``, checked for ``rules`` (the
    one compatibility check; ``any_variant``: another variant of the same shapes).

    A bot that cannot be read or does not fit the rules raises ``BotError``, a checkpoint ``AgentSpecError``; a path
    that is neither raises ``AgentSpecError`` (``who`` starts its message, e.g. ``agent az: ``).
    """
    kind = path_kind(path)
    if kind in ("bot", "dir"):
        files = read_bot_files(path)
        check_fit("the bot", files.card, rules, any_variant, error=BotError)
        if files.layers is None or files.activation is None:
            raise AgentSpecError(f"{who}{path} is a search-only bot (pimc, no network): give a bot with a network")
        return Network(files.layers, files.activation, str(path), "bot")
    if kind == "checkpoint":
        meta = read_checkpoint_meta(path)
        check_meta(meta, rules, path, any_variant=any_variant)
        layers, activation = checkpoint_layers(read_weights(path), read_activation(path, meta), rules, path)
        return Network(layers, activation, str(path), "checkpoint")
    raise AgentSpecError(f"{who}{path} is neither a bot directory nor a train.py checkpoint (.zip)")
