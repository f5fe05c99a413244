"""Settings of the command-line scripts: a typed dataclass per script, read from YAML and the command line alike.

A script's settings are one dataclass: ``agents.training.train_config.TrainConfig`` for ``train.py``,
``agents.evaluation.eval_config.EvalConfig`` for ``evaluate.py``, ``agents.training.expert_iteration.ExItConfig`` for
expert iteration, an ``Options`` dataclass for each of the smaller commands (the recorder ``python -m
agents.cli.record``, the terminal game, the web server, the exporter, the bench scripts). Each field is declared with
``setting(default, "one line of doc")``: the doc lives in the field's metadata (``field_docs``), not in the source,
so it is there however the module was loaded (``python -m cProfile train.py --help``, a zip, a frozen app). This
module holds the machinery they share, with the rest of the command-line plumbing in ``agents.cli`` (the env library
imports neither argparse nor PyYAML). Its errors, ``ConfigError`` (a ``ValueError``) and ``YamlFileError``, derive
from ``agents.errors.ScopaError`` like every error of the package:

- ``read_yaml_mapping``: the one YAML reader of every config and run config (``ConfigLoader``, a ``yaml.SafeLoader``
  that reads plain data only and refuses what a config never needs and an attacker would use: anchors and aliases,
  repeated keys, integers of more than 20 digits, tags such as ``!!set``, nesting past ``MAX_YAML_DEPTH`` levels,
  over ``MAX_YAML_NODES`` values, a file over ``MAX_YAML_BYTES``), each failure a ``YamlFileError`` whose
  ``describe`` is the one sentence every command prints (the file, the line where known, what is wrong, how to fix
  it); ``short_repr`` quotes a bad value in any message, cut to a short prefix;
- ``convert_value`` / ``config_from_dict`` / ``load_config`` / ``config_yaml``: values from YAML or the command
  line converted to the field's type (whole numbers also as ``2e7``, booleans as true/yes/on/1, lists from
  ``a,b`` or several arguments, ``float | None`` from null/none), errors naming where the value came from (the
  file, or "command line"), and the config written back as YAML with one comment line per field;
- ``add_field_options`` / ``cli_overrides``: one command-line option per field (``--total-steps``,
  ``--progress/--no-progress`` for a bool, ``nargs`` for a list; a field's ``setting(option=..., metavar=...,
  repeat=...)`` names its flag), only the options given becoming overrides (``given_fields``); with ``convert`` each
  value is checked as argparse reads it (``evaluate.py``: ``EvalConfig``'s own checks);
- ``parse_options``: the commands whose settings are their options alone (the recorder, ``python -m agents.play``,
  the web server, the exporter) declare them as a dataclass too, each field's ``setting(parse=..., choices=...,
  show_default=False)`` keeping the option's own type check, help and messages, and get the dataclass back;
- ``StoreOnce`` / ``BooleanOnce`` / ``SwitchOnce``: argparse actions refusing an option given twice (``--seed 1 --seed
  2``, ``--progress --no-progress``) instead of letting the last one silently win (the commands of
  ``parse_options`` keep argparse's last-one-wins, as they always had: ``once=False``).

Why not ``tyro`` or ``jsonargparse`` (both on PyPI, not dependencies here): tyro builds the same kind of parser from
a dataclass, but it reads field docs by tokenizing the class's source (the fragility this module removes), parses
``int`` fields strictly (``--total-steps 2e7`` is refused) and has no notion of a YAML file under the options;
jsonargparse has the YAML layering, but words its own errors and merges files its own way. The scripts' messages,
pinned by the tests, say which file or option was wrong and how to fix it, a config file's plugins are refused
unless trusted, and ``EvalConfig`` checks a value alike from YAML, the command line and Python: with either library
the conversion, layering and messages would still be custom code here, and it would add a dependency (and its own)
to an installed package for a ~350-line module.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import math
import reprlib
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import yaml

from agents.errors import ScopaError

__all__ = [
    "MAX_SEED",
    "MAX_YAML_BYTES",
    "MAX_YAML_DEPTH",
    "MAX_YAML_INT",
    "MAX_YAML_NODES",
    "BooleanOnce",
    "ConfigError",
    "ConfigLoader",
    "StoreOnce",
    "SwitchOnce",
    "YamlFileError",
    "add_field_options",
    "cli_overrides",
    "config_from_dict",
    "config_yaml",
    "convert_value",
    "field_docs",
    "field_types",
    "given_fields",
    "load_config",
    "parse_options",
    "path_arguments",
    "path_parser",
    "read_yaml_mapping",
    "setting",
    "short_repr",
    "to_bool",
    "to_float",
    "to_int",
    "variants_option",
]

C = TypeVar("C")


class ConfigError(ScopaError, ValueError):
    """A config file or option that is invalid: unknown key, bad value, or a conflict with a resumed run."""


# --------------------------------------------------------------------------------------------------- fields


def setting(
    default: Any = dataclasses.MISSING,
    doc: str = "",
    *,
    default_factory: Any = dataclasses.MISSING,
    option: str | bool = True,
    metavar: str | None = None,
    repeat: bool = False,
    parse: Callable[[str], Any] | None = None,
    choices: Sequence[str] | None = None,
    show_default: bool = True,
    negatable: bool = True,
    nargs: str | int | None = None,
) -> Any:
    """A dataclass field with its one-line ``doc`` (shown by ``--help`` and as the YAML comment of the field) and
    how ``add_field_options`` gives it an option: ``option`` its flag (default ``--field-name``; a name without a
    leading ``-``: a positional argument; False: none, the command sets the field its own way), ``metavar`` the
    value's name in ``--help``, ``repeat`` a list field taking one value per option, given as often as needed
    (``--plugin a --plugin b``) instead of several after one.

    For the commands whose settings are their options alone (the terminal game, the web server, the exporter, the
    bench scripts): ``parse`` turns the option's text into the value as argparse reads it (an argparse ``type``: its
    ``ArgumentTypeError`` is the message), ``choices`` the values allowed, ``show_default=False`` leaves the default
    out of ``--help`` (the doc words it), ``negatable=False`` makes a bool a plain switch (``--force``, no
    ``--no-force``), ``nargs`` the number of values after the option (argparse's ``"+"``, ``"*"``, 2). A field
    without a default is a required option (or positional argument)."""
    metadata = {
        "doc": doc,
        "option": option,
        "metavar": metavar,
        "repeat": repeat,
        "parse": parse,
        "choices": choices,
        "show_default": show_default,
        "negatable": negatable,
        "nargs": nargs,
    }
    if default_factory is not dataclasses.MISSING:
        return dataclasses.field(default_factory=default_factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def variants_option(parser: argparse.ArgumentParser, text: str, option: str = "--variants") -> list[str]:
    """The variants named in a command's comma-separated ``option`` (``rules.variant_list``); none, or an unknown
    name, is ``parser.error`` (one line naming the option, exit status 2)."""
    from scopa_env.rules import variant_list

    try:
        return variant_list(text)
    except ValueError as e:
        parser.error(f"{option}: {e}")


def path_parser(what: str = "a file or folder path") -> Callable[[str], Path]:
    """An argparse ``type`` for a path option: the text as a ``Path``, refusing an empty one (``Path("")`` is the
    working directory) or one holding a NUL character; ``what`` names what to give instead."""

    def parse(text: str) -> Path:
        if not text.strip():
            raise argparse.ArgumentTypeError(f"got an empty path; give {what}")
        if "\x00" in text:
            raise argparse.ArgumentTypeError(f"{short_repr(text)} holds a NUL character; give {what}")
        return Path(text)

    return parse


def path_arguments(name: str, doc: str) -> Any:
    """A ``list[Path]`` field given as the command's positional argument ``name``: one or more paths (the files or
    run directories a command reads)."""
    return setting(doc=doc, option=name, parse=Path, nargs="+", show_default=False)


def field_docs(cls: type) -> dict[str, str]:
    """The one-line doc of each field of the dataclass ``cls`` (``setting(..., doc)``), whitespace collapsed."""
    return {f.name: " ".join(str(f.metadata.get("doc", "")).split()) for f in dataclasses.fields(cls)}


@functools.cache
def field_types(cls: type) -> dict[str, Any]:
    """The resolved type of each field of the dataclass ``cls``."""
    return typing.get_type_hints(cls)


# --------------------------------------------------------------------------------------------------- values

SHOWN_CHARS = 60
"""The most characters of a value that a message quotes (``short_repr``)."""
MAX_YAML_INT = 10**20
"""Every whole number of a config (YAML or command line) is below this in magnitude: 20 digits, more than any setting
takes (the largest is a 64-bit seed, 2^64 - 1), and small enough to convert and check at once."""


class _ShortRepr(reprlib.Repr):
    """``reprlib.Repr`` that never formats a value whole: strings, lists and mappings cut short, a huge integer
    named by its size (its digits are never computed)."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel, self.maxstring, self.maxother, self.maxlong = 3, SHOWN_CHARS + 2, SHOWN_CHARS, SHOWN_CHARS
        self.maxlist = self.maxtuple = self.maxdict = self.maxset = self.maxfrozenset = 8

    def repr_str(self, x: str, level: int) -> str:
        return repr(x[: self.maxstring])  # a prefix: short_repr marks the cut

    def repr_int(self, x: int, level: int) -> str:
        return repr(x) if x.bit_length() <= 200 else f"<an integer of {x.bit_length():,} bits>"


_SHORT_REPR = _ShortRepr()


def short_repr(value: Any, limit: int = SHOWN_CHARS) -> str:
    """``repr(value)`` for a message, at most ``limit`` characters (a longer one cut, ending in ``...``); the value
    is never formatted whole, so a huge value costs no more than a small one."""
    text = _SHORT_REPR.repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def to_int(key: str, raw: Any) -> int:
    """``raw`` as a whole number: an int, or text / a float holding one (``2e7``, ``20_000_000``); below
    ``MAX_YAML_INT`` in magnitude."""
    if isinstance(raw, bool):
        raise ConfigError(f"{key} must be an integer, got {short_repr(raw)}")
    value: float
    if isinstance(raw, int):
        number = raw
    else:
        try:
            if isinstance(raw, str):
                text = raw.strip()
                if len(text) > 100:  # never convert a huge text (int() of 4,300+ digits is itself an error)
                    raise ConfigError(f"{key} must be a number of at most 20 digits, got {short_repr(raw)}")
                try:
                    number = int(text)
                except ValueError:
                    value = float(text)
                else:
                    return _bounded(key, number, raw)
            else:
                value = float(raw)
        except (TypeError, ValueError, OverflowError):
            raise ConfigError(
                f"{key} must be an integer (2e7 and 20_000_000 are fine), got {short_repr(raw)}"
            ) from None
        if not math.isfinite(value) or value != int(value):
            raise ConfigError(f"{key} must be a whole number, got {short_repr(raw)}")
        number = int(value)
    return _bounded(key, number, raw)


def _bounded(key: str, number: int, raw: Any) -> int:
    if not -MAX_YAML_INT < number < MAX_YAML_INT:
        raise ConfigError(f"{key} must be below 10^20 in magnitude (20 digits), got {short_repr(raw)}")
    return number


def to_float(key: str, raw: Any) -> float:
    """``raw`` as a finite number."""
    if isinstance(raw, bool):
        raise ConfigError(f"{key} must be a number, got {short_repr(raw)}")
    try:
        value = float(raw.strip() if isinstance(raw, str) else raw)
    except (TypeError, ValueError, OverflowError):
        raise ConfigError(f"{key} must be a number, got {short_repr(raw)}") from None
    if not math.isfinite(value):
        raise ConfigError(f"{key} must be finite, got {short_repr(raw)}")
    return value


def to_bool(key: str, raw: Any) -> bool:
    """``raw`` as a boolean: a bool, or true/yes/on/1, false/no/off/0."""
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower() if isinstance(raw, (str, int, float)) else ""
    if text in ("true", "yes", "on", "1"):
        return True
    if text in ("false", "no", "off", "0"):
        return False
    raise ConfigError(f"{key} must be true or false, got {short_repr(raw)}")


def convert_value(cls: type, key: str, raw: Any) -> Any:
    """``raw`` (from YAML or the command line) converted to the type of field ``key`` of the dataclass ``cls``."""
    types = field_types(cls)
    if key not in types:
        raise ConfigError(f"unknown config key {short_repr(key)}; valid keys: {', '.join(types)}")
    tp = types[key]
    if tp is int:
        return to_int(key, raw)
    if tp is float:
        return to_float(key, raw)
    if tp is bool:
        return to_bool(key, raw)
    if tp is str:
        if raw is None or isinstance(raw, (list, dict)):
            raise ConfigError(f"{key} must be a string, got {short_repr(raw)}")
        return str(raw)
    if tp == (float | None):
        if raw is None or (isinstance(raw, str) and raw.strip().lower() in ("none", "null", "")):
            return None
        return to_float(key, raw)
    if tp in (list[int], list[str]):
        items: list[Any]
        if isinstance(raw, (list, tuple)):
            items = list(raw)
        elif isinstance(raw, str):
            items = [x for x in raw.split(",") if x.strip()] if tp == list[int] else [raw]
        else:
            items = [raw]
        if tp == list[int]:
            return [to_int(key, x) for x in items]
        if any(isinstance(x, (list, dict)) or x is None for x in items):
            raise ConfigError(f"{key} must be a list of strings, got {short_repr(raw)}")
        return [str(x).strip() for x in items]
    raise ConfigError(f"config field {key} has an unsupported type {tp}")  # pragma: no cover


def config_from_dict(cls: type[C], values: dict[str, Any], source: str = "config") -> C:
    """A ``cls`` from raw values; unknown keys and bad values raise ``ConfigError`` naming ``source``."""
    if not isinstance(values, dict):
        raise ConfigError(f"{source}: expected a mapping of config keys to values, got {type(values).__name__}")
    valid = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    unknown = [k for k in values if k not in valid]
    if unknown:
        shown = ", ".join(map(short_repr, unknown[:5])) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
        raise ConfigError(f"{source}: unknown config key(s) {shown}; valid keys: {', '.join(valid)}")
    try:
        return cls(**{k: convert_value(cls, k, v) for k, v in values.items()})
    except ConfigError as e:
        raise ConfigError(f"{source}: {e}") from None


def load_config(cls: type[C], values: dict[str, Any], source: str, overrides: dict[str, Any] | None = None) -> C:
    """A ``cls`` from a file's ``values`` (read from ``source``) with the command line's ``overrides`` on top.

    An error is blamed on the file when the file alone is wrong, else on "command line"."""
    try:
        return config_from_dict(cls, {**values, **(overrides or {})}, source=source)
    except ConfigError as e:
        if not overrides:
            raise
        try:
            config_from_dict(cls, values, source=source)
        except ConfigError:
            raise e from None
        raise ConfigError(str(e).replace(f"{source}: ", "command line: ", 1)) from None  # the file alone is fine


def config_yaml(cfg: Any) -> str:
    """The dataclass ``cfg`` as YAML, one line per field (in field order) commented with its doc."""
    docs = field_docs(type(cfg))
    lines = []
    for key, value in dataclasses.asdict(cfg).items():
        text = yaml.safe_dump({key: value}, default_flow_style=True, width=1000).strip()
        if text.startswith("{") and text.endswith("}"):
            text = text[1:-1]
        lines.append(f"{text}  # {docs.get(key, '')}".rstrip())
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------------- YAML files


MAX_YAML_BYTES = 1_000_000
"""The largest YAML file ``read_yaml_mapping`` reads (a config is a few lines, a run's config.yaml about 5 KB)."""
MAX_YAML_DEPTH = 32
"""The deepest nesting of lists and mappings a YAML config may have (a config's values nest two levels at most)."""
MAX_YAML_NODES = 10_000
"""The most values (scalars, lists and mappings, keys included) a YAML config may hold: a config holds a few dozen,
and a file of hundreds of thousands of tiny values would take PyYAML minutes and hundreds of MB to read."""
YAML_FIX = "give a YAML file of 'key: value' lines (see configs/)"
"""The fix a ``YamlFileError`` suggests unless its caller gives its own."""
_PLAIN_TAGS = frozenset(f"tag:yaml.org,2002:{name}" for name in ("str", "int", "float", "bool", "null", "seq", "map"))


class _Refused(yaml.MarkedYAMLError, ScopaError):
    """A YAML construct that a config may not use (``ConfigLoader``); ``problem`` says which and how to fix it."""

    def __init__(self, node: Any, problem: str) -> None:
        super().__init__()
        self.context, self.context_mark, self.note = None, None, None
        self.problem, self.problem_mark = problem, node.start_mark


class _TooDeep(_Refused):
    """Lists and mappings nested past ``MAX_YAML_DEPTH`` (``read_yaml_mapping``: ``too_deep``)."""


class ConfigLoader(yaml.SafeLoader):
    """The YAML loader of every config: ``yaml.SafeLoader`` (plain data, never Python objects or code) refusing, at the
    node that uses it, what a config never needs and a hostile file would use:

    - an anchor or alias (``&name`` / ``*name``): nine nested aliases of nine make a 350-byte file expand into a
      billion strings (the "billion laughs"); refused at the first one, before anything is expanded;
    - a key given twice in one mapping (``seed: 1`` then ``seed: 2``): the last one would silently win, as the
      command line refuses ``--seed 1 --seed 2``; a merge key (``<<``) likewise;
    - an integer of ``MAX_YAML_INT`` (10^20) or more in magnitude, checked before it is converted (a number of
      4,300 digits or more cannot even be converted by Python);
    - an explicit tag other than the plain ones (``!!str``, ``!!int``, ``!!float``, ``!!bool``, ``!!null``,
      ``!!seq``, ``!!map``): ``!!set``, ``!!binary``, ``!!omap``, ``!!python/...``, ``!custom``;
    - lists and mappings nested more than ``MAX_YAML_DEPTH`` levels, more than ``MAX_YAML_NODES`` values in all.

    A date-like value (``2026-01-01``) stays the text it is (no config setting is a date). Use it as
    ``yaml.load(text, Loader=ConfigLoader)``; ``read_yaml_mapping`` is the file reader built on it."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._depth = 0
        self._nodes = 0
        self._ints_checked: set[int] = set()  # ids of the nodes _check_ints has walked: each node once

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            name = event.anchor if len(event.anchor) <= 30 else event.anchor[:27] + "..."
            kind = f"alias *{name}" if isinstance(event, yaml.AliasEvent) else f"anchor &{name}"
            raise _Refused(
                event,
                f"the {kind} is refused: a config may not use YAML anchors and aliases (an alias can expand a few "
                "hundred bytes into gigabytes); write each value out in full",
            )
        self._nodes += 1
        if self._nodes > MAX_YAML_NODES:
            raise _Refused(
                event,
                f"the file holds over {MAX_YAML_NODES:,} values; a config holds a few dozen settings, give only those",
            )
        tag = getattr(event, "tag", None)
        if tag not in (None, "!") and tag not in _PLAIN_TAGS:
            shown = "!!" + tag.removeprefix("tag:yaml.org,2002:") if tag.startswith("tag:yaml.org,2002:") else tag
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"the tag {short_repr(shown, 40)} is not accepted: a config holds plain values (text, numbers, "
                "true/false, null, lists and mappings); remove the tag",
                event.start_mark,
            )
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            if self._depth >= MAX_YAML_DEPTH:
                raise _TooDeep(event, f"lists and mappings nested over {MAX_YAML_DEPTH} levels")
            self._depth += 1
            try:
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1
        return super().compose_node(parent, index)

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, KeyError, TypeError, OverflowError):  # ``!!int abc``, ``!!bool maybe``: not yaml.YAMLError
            tag = node.tag.replace("tag:yaml.org,2002:", "!!")
            shown = short_repr(node.value, 40) if isinstance(node, yaml.ScalarNode) else "this value"
            raise yaml.constructor.ConstructorError(
                None, None, f"{shown} is not a valid {tag}; fix the value or remove the tag", node.start_mark
            ) from None

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, value_node in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    raise _Refused(key_node, "a merge key (<<) is refused in a config; write the keys out in full")
                if not isinstance(key_node, yaml.ScalarNode):
                    continue  # a list or mapping as a key: SafeLoader refuses it (unhashable)
                key = self.construct_object(key_node, deep=True)
                if key in seen:
                    raise _Refused(
                        key_node,
                        f"key {short_repr(key, 40)} is given twice in one mapping (first on line {seen[key]}), and "
                        "the later one would silently win; keep one of them",
                    )
                seen[key] = key_node.start_mark.line + 1
                self._check_ints(value_node, key)  # before anything is converted, naming the setting
        return super().construct_mapping(node, deep=deep)

    def _check_ints(self, node: Any, key: Any = None) -> None:
        """Refuse an integer of ``MAX_YAML_INT`` or more in magnitude at or under ``node`` (the value of ``key``)."""
        todo = [node]
        while todo:
            n = todo.pop()
            if id(n) in self._ints_checked:
                continue  # walked from an outer mapping already (nested mappings are walked top-down)
            self._ints_checked.add(id(n))
            if isinstance(n, yaml.ScalarNode):
                if n.tag != "tag:yaml.org,2002:int":
                    continue
                text = str(n.value).replace("_", "")
                try:
                    if len(text) <= 100 and -MAX_YAML_INT < super().construct_yaml_int(n) < MAX_YAML_INT:
                        continue
                except ValueError:  # an explicit ``!!int abc``
                    raise yaml.constructor.ConstructorError(
                        None, None, f"{short_repr(n.value, 40)} is not a valid !!int; fix the value", n.start_mark
                    ) from None
                setting = f"{short_repr(key, 40).strip(chr(39))}: " if key is not None else ""
                raise _Refused(
                    n,
                    f"{setting}the integer {short_repr(n.value, 30).strip(chr(39))} is too big: a config's whole "
                    "numbers are below 10^20 in magnitude (20 digits; the largest setting, a 64-bit seed, is at most "
                    "2^64 - 1); give a smaller value",
                )
            elif isinstance(n, yaml.SequenceNode):
                todo.extend(n.value)
            elif isinstance(n, yaml.MappingNode):
                todo.extend(v for pair in n.value for v in pair)

    def construct_yaml_int(self, node: Any) -> int:
        self._check_ints(node)
        return int(super().construct_yaml_int(node))

    def construct_date_text(self, node: Any) -> str:
        return str(self.construct_scalar(node))


ConfigLoader.add_constructor("tag:yaml.org,2002:int", ConfigLoader.construct_yaml_int)
ConfigLoader.add_constructor("tag:yaml.org,2002:timestamp", ConfigLoader.construct_date_text)


class YamlFileError(ScopaError):
    """A YAML config file that cannot be used. ``kind`` says why (``describe`` words it; ``str()`` is ``describe``
    with the generic fix):

    ``folder`` (a directory), ``missing``, ``too_big`` (over ``detail`` bytes), ``unreadable`` (``detail``: the
    ``OSError``), ``not_text`` (not UTF-8), ``bad_yaml`` (``detail``: the ``yaml.YAMLError``), ``refused`` (valid
    YAML that a config may not use, ``ConfigLoader``: ``detail`` the ``yaml.MarkedYAMLError`` saying which),
    ``too_deep`` (nested past ``MAX_YAML_DEPTH``), ``not_mapping`` (``detail``: the data, which is not a dict)."""

    def __init__(self, path: Path, kind: str, detail: Any = None) -> None:
        self.path, self.kind, self.detail = Path(path), kind, detail
        super().__init__(self.describe())

    @property
    def line(self) -> int | None:
        """The line of the file where the problem is (1-based), where known."""
        mark = getattr(self.detail, "problem_mark", None)
        return None if mark is None else int(mark.line) + 1

    def describe(self, fix: str = YAML_FIX, what: str = "config file") -> str:
        """The one sentence for this error, as every command prints it: ``{what} {path}``, what is wrong (the line
        where known, a value quoted by a short prefix at most) and ``fix``, what to give instead."""
        head = f"{what} {self.path}"
        kind, detail = self.kind, self.detail
        if kind == "folder":
            return f"{head} is a folder, not a file; {fix}"
        if kind == "missing":
            return f"{head} does not exist; check the path, or {fix}"
        if kind == "too_big":
            return f"{head} is over {detail:,} bytes, too big for a config; {fix}"
        if kind == "unreadable":
            reason = getattr(detail, "strerror", None) or type(detail).__name__
            return f"{head} cannot be read ({reason}); check the path and its permissions"
        if kind == "not_text":
            return f"{head} is not text (not UTF-8); {fix}"
        if kind == "too_deep":
            return f"{head} is nested too deeply to be a config (over {MAX_YAML_DEPTH} levels); {fix}"
        if kind == "not_mapping":
            return f"{head} must hold a mapping of settings, got {short_repr(detail)} ({type(detail).__name__}); {fix}"
        mark = getattr(detail, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(detail, "problem", None) or " ".join(str(detail).split())
        problem = problem if len(problem) <= 300 else problem[:297] + "..."
        if kind == "refused":
            return f"{head}, {where}: {problem}" if where else f"{head}: {problem}"
        return f"{head} is not valid YAML ({where + ': ' if where else ''}{problem}); {fix}"


def read_yaml_mapping(path: str | Path, max_bytes: int = MAX_YAML_BYTES) -> dict[str, Any]:
    """The mapping in the YAML file ``path`` (an empty file: {}), read with ``ConfigLoader`` (plain data only: no
    Python objects, no code, no aliases, no repeated keys, integers below 10^20) from at most ``max_bytes`` bytes;
    ``YamlFileError`` saying why it cannot be used."""
    p = Path(path)
    if p.is_dir():
        raise YamlFileError(p, "folder")
    try:
        with open(p, "rb") as f:
            raw = f.read(max_bytes + 1)
    except FileNotFoundError:
        raise YamlFileError(p, "missing") from None
    except IsADirectoryError:
        raise YamlFileError(p, "folder") from None
    except OSError as e:
        raise YamlFileError(p, "unreadable", e) from None
    if len(raw) > max_bytes:
        raise YamlFileError(p, "too_big", max_bytes)
    try:
        data = yaml.load(raw.decode("utf-8"), Loader=ConfigLoader)  # ConfigLoader is a SafeLoader
    except UnicodeDecodeError as e:
        raise YamlFileError(p, "not_text", e) from None
    except (RecursionError, _TooDeep):
        raise YamlFileError(p, "too_deep") from None
    except _Refused as e:
        raise YamlFileError(p, "refused", e) from None
    except yaml.YAMLError as e:
        raise YamlFileError(p, "bad_yaml", e) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise YamlFileError(p, "not_mapping", data)
    return data


# --------------------------------------------------------------------------------------------------- command line


class StoreOnce(argparse.Action):
    """``store``, but an option given twice is an error instead of the last one silently winning."""

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option: str | None = None
    ) -> None:
        _once(self, parser, namespace, option)
        setattr(namespace, self.dest, values)


class SwitchOnce(StoreOnce):
    """``store_true``, refusing the switch given twice."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option: str | None = None
    ) -> None:
        super().__call__(parser, namespace, True, option)


class BooleanOnce(argparse.BooleanOptionalAction):
    """``--x`` / ``--no-x``, refusing the option given twice (both forms, or one form again)."""

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option: str | None = None
    ) -> None:
        _once(self, parser, namespace, option)
        super().__call__(parser, namespace, values, option)


def _once(action: argparse.Action, parser: argparse.ArgumentParser, namespace: argparse.Namespace, option: Any) -> None:
    seen = namespace.__dict__.setdefault("_given_options", {})
    if action.dest in seen:
        first = seen[action.dest]
        both = f"{first} twice" if first == option else f"both {first} and {option}"
        parser.error(f"argument {option}: got {both}; give it once (one would silently override the other)")
    seen[action.dest] = option


_TYPED = (int, float, Path)
"""The field types ``add_field_options(typed=True)`` converts with the type itself (argparse's own messages)."""


def _typed_parse(tp: Any) -> tuple[Callable[[str], Any] | None, bool]:
    """``(parse, many)`` for a field of type ``tp`` under ``typed=True``: ``int``, ``float`` or ``Path`` (optional or a
    list of them) converted by the type, a list taking one or more values."""
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    if tp not in _TYPED and len(args) == 1 and typing.get_origin(tp) is not list:  # X | None
        tp = args[0]
    many = typing.get_origin(tp) is list
    if many:
        tp = typing.get_args(tp)[0]
    return (tp if tp in _TYPED else None), many


def add_field_options(
    group: Any,
    cls: type,
    skip: Sequence[str] = (),
    convert: Callable[[str, str], Any] | None = None,
    typed: bool = False,
    once: bool = True,
) -> None:
    """One option per field of the dataclass ``cls`` on the argparse parser or group ``group``: ``--total-steps``
    for ``total_steps`` (or the field's ``setting(option=...)``), ``--x/--no-x`` for a bool, one or more values for a
    list; the help is the field's doc and default. Options not given leave no attribute (``argparse.SUPPRESS``), so
    only those become overrides (``given_fields``).

    ``convert(name, text)``, if given, turns each value into the field's (one item of a list) as argparse reads it,
    raising ``argparse.ArgumentTypeError`` (``evaluate.py``: its settings' own checks, so that a bad value is
    reported as ``argument --x: ...``); without it values stay text for ``cli_overrides`` to convert. A field's own
    ``setting(parse=...)`` comes before ``convert``; with ``typed`` (``parse_options``' commands) a field of type
    ``int``, ``float`` or ``Path`` (optional, or a list: one or more values, shown as ``NAME``) is converted by its
    type. ``once=False``
    keeps argparse's own rule for an option given twice, the last one wins (the commands that always had it: a
    script may override an earlier ``--opponent``)."""
    docs, types = field_docs(cls), field_types(cls)
    for f in dataclasses.fields(cls):
        md = f.metadata
        option = md.get("option", True)
        if f.name in skip or option is False:
            continue
        flag = option if isinstance(option, str) else "--" + f.name.replace("_", "-")
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        default = (
            None if required else f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        )
        shown = " ".join(map(str, default)) if isinstance(default, list) else default
        help_text = docs.get(f.name, "")
        if md.get("show_default", True) and default is not None and default != []:
            help_text += f" (default: {shown})"
        kwargs: dict[str, Any] = {"help": help_text.replace("%", "%%")}
        if flag.startswith("-"):
            kwargs.update(dest=f.name, default=argparse.SUPPRESS)
            if required:
                kwargs["required"] = True
        elif flag != f.name:  # pragma: no cover - a declaration mistake
            raise ValueError(f"positional argument {flag!r} must be named as its field {f.name!r}")
        tp = types[f.name]
        parse, many = _typed_parse(tp) if typed else (None, False)
        if md.get("parse") is not None:
            kwargs["type"] = md["parse"]
        elif parse is not None:
            kwargs["type"] = parse
        elif convert is not None and tp is not bool:
            kwargs["type"] = functools.partial(convert, f.name)
        if md.get("choices") is not None:
            kwargs["choices"] = md["choices"]
        metavar = md.get("metavar")
        store: Any = StoreOnce if once else "store"
        if tp is bool and md.get("negatable", True):
            group.add_argument(flag, action=BooleanOnce if once else argparse.BooleanOptionalAction, **kwargs)
        elif tp is bool:
            group.add_argument(flag, action=SwitchOnce if once else "store_true", **kwargs)
        elif md.get("repeat"):
            group.add_argument(flag, action="append", metavar=metavar or f.name.upper(), **kwargs)
        elif not flag.startswith("-"):
            group.add_argument(flag, metavar=metavar, **({"nargs": md["nargs"]} if md.get("nargs") else {}), **kwargs)
        elif md.get("nargs") or many or tp in (list[int], list[str]):
            shown_as = metavar or (f.name.upper() if typed else "X")
            group.add_argument(flag, action=store, nargs=md.get("nargs") or "+", metavar=shown_as, **kwargs)
        elif md.get("choices") is not None:
            group.add_argument(flag, action=store, metavar=metavar, **kwargs)
        else:
            group.add_argument(flag, action=store, metavar=metavar or f.name.upper(), **kwargs)


def given_fields(cls: type, ns: argparse.Namespace) -> dict[str, Any]:
    """The fields of the dataclass ``cls`` given on the command line (``add_field_options``), as parsed."""
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in vars(ns).items() if k in names}


def parse_options(parser: argparse.ArgumentParser, cls: type[C], argv: Sequence[str] | None = None) -> C:
    """A ``cls`` from the command line ``argv`` parsed by ``parser`` (whose options ``add_field_options(parser, cls,
    typed=True, once=False)`` made, each value converted as argparse reads it): the options given, the field
    defaults for the rest. For the commands whose settings are their options alone (no YAML file under them)."""
    return cls(**given_fields(cls, parser.parse_args(argv)))


def cli_overrides(cls: type, ns: argparse.Namespace) -> dict[str, Any]:
    """The fields of ``cls`` given on the command line (``add_field_options``), converted; ``ConfigError`` names the
    option (``--total-steps: total_steps must be ...``)."""
    overrides = {}
    for k, v in given_fields(cls, ns).items():
        if isinstance(v, list) and field_types(cls)[k] == list[int]:
            v = [x for item in v for x in str(item).split(",") if x.strip()]
        try:
            overrides[k] = convert_value(cls, k, v)
        except ConfigError as e:
            raise ConfigError(f"--{k.replace('_', '-')}: {e}") from None
    return overrides


MAX_SEED = 2**64 - 1
"""The largest seed (seeds are 64-bit unsigned integers)."""
