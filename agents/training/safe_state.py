"""Save and load trees of Python objects without pickle: a file written here never runs code when it is read.

``pickle`` (and anything built on it: ``torch.load`` without ``weights_only``, SB3's ``load``) rebuilds objects by
calling whatever callables the file names, so a crafted file runs arbitrary code. This module writes the same kind
of object tree as plain data instead, in one ``.npz`` (read with ``agents.nets.weights.read_npz``:
``allow_pickle=False``, every member's size checked before it is allocated):

- ``__tree__``: the tree as JSON (UTF-8 bytes): numbers, strings, lists, dicts and tagged nodes;
- ``a0``, ``a1``, ...: every numpy array and torch tensor of the tree, as ``.npy`` members.

What a tree may hold: ``None``, ``bool``, ``int``, ``float``, ``str``, ``bytes``, ``pathlib`` paths, lists, tuples,
dicts (any encodable keys), ``OrderedDict``, ``deque``, sets; numpy arrays (no object dtype), scalars, dtypes,
``Generator``, bit generators and ``SeedSequence``; torch tensors, parameters, dtypes and devices; and objects of
*allowed classes*: every class defined in this project's packages (``scopa_env``, ``agents``) and a short, explicit
list of outside classes (the torch / SB3 layers of a policy network, Gymnasium's ``Box`` and ``Discrete``). An object is
stored as its class's name and its attribute dict; loading creates it with ``cls.__new__(cls)`` and fills in the
attributes (project classes with their own ``__setstate__`` get it called): no constructor of any outside class,
no function, nothing named by the file is ever called. Functions, lambdas and other classes cannot be saved
(``TypeError`` names the attribute path) and a file naming them is refused (``StateFileError``).

    blob = dumps({"env": env, "league": league, "steps": 4096})
    tree = loads(blob)          # StateFileError for a damaged or crafted file

Shared references are kept (an object reachable twice is saved once and loaded as one object), so a league member's
policy and the env's copy of it stay the same object, as they were.
"""

from __future__ import annotations

import base64
import collections
import importlib
import io
import json
import pathlib
from enum import Enum
from typing import Any

import numpy as np

from agents.errors import ScopaError
from agents.nets.weights import read_npz

__all__ = ["ALLOWED_OUTSIDE_CLASSES", "StateFileError", "dumps", "loads"]

FORMAT = 1
"""Version of the tree layout; a newer file is refused."""
OWN_PACKAGES = ("scopa_env", "agents")
ALLOWED_OUTSIDE_CLASSES = frozenset(
    {
        "torch.nn.modules.linear:Linear",
        "torch.nn.modules.linear:Identity",
        "torch.nn.modules.container:Sequential",
        "torch.nn.modules.activation:Tanh",
        "torch.nn.modules.activation:ReLU",
        "torch.nn.modules.flatten:Flatten",
        "stable_baselines3.common.torch_layers:FlattenExtractor",
        "gymnasium.spaces.box:Box",
        "gymnasium.spaces.discrete:Discrete",
    }
)
"""Classes from outside the project that a state file may hold (as attribute dicts; never constructed)."""
_BIT_GENERATORS = ("PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64")
_PATHS = {cls.__name__: cls for cls in (type(pathlib.Path()), pathlib.PurePosixPath, pathlib.PureWindowsPath)}
"""The path classes a state file may hold, by name: the platform's concrete path and the pure paths."""
_TORCH_DTYPES = ("float16", "float32", "float64", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool")


class StateFileError(ScopaError, ValueError):
    """A state file that is damaged, from a newer version, or names something this module will not load."""


# --------------------------------------------------------------------------------------------------- classes


def _own(module: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in OWN_PACKAGES)


def _class_name(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _allowed(cls: type) -> bool:
    return ("<locals>" not in cls.__qualname__ and _own(cls.__module__)) or _class_name(cls) in ALLOWED_OUTSIDE_CLASSES


def _resolve(name: Any) -> type:
    """The allowed class called ``name`` ("module:qualname"); ``StateFileError`` for anything else."""
    if not isinstance(name, str) or name.count(":") != 1:
        raise StateFileError(f"bad class name {name!r}")
    module, qualname = name.split(":")
    if not (_own(module) or name in ALLOWED_OUTSIDE_CLASSES) or "<" in qualname:
        raise StateFileError(f"class {name!r} is not one a state file may hold")
    try:
        obj: Any = importlib.import_module(module)  # only this project's modules or the allowed ones' own
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as e:
        raise StateFileError(f"class {name!r} does not exist in this code ({e})") from None
    if not isinstance(obj, type) or obj.__module__ != module or obj.__qualname__ != qualname:
        raise StateFileError(f"{name!r} is not a class of module {module!r}")
    return obj


def _own_method(cls: type, name: str) -> bool:
    """Whether ``cls`` (a project class) or one of its project bases defines ``name`` itself."""
    return any(name in vars(k) for k in cls.__mro__ if _own(k.__module__))


# --------------------------------------------------------------------------------------------------- writing


class _Writer:
    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}
        self.memo: dict[int, int] = {}
        self.keep: list[Any] = []  # holds every memoised object so that ids are not reused while writing

    def _ref(self, obj: Any) -> int | None:
        return self.memo.get(id(obj))

    def _remember(self, obj: Any) -> int:
        n = len(self.keep)
        self.memo[id(obj)] = n
        self.keep.append(obj)
        return n

    def array(self, a: np.ndarray, where: str) -> str:
        if a.dtype.hasobject:
            raise TypeError(f"{where}: arrays of Python objects cannot be saved")
        key = f"a{len(self.arrays)}"
        self.arrays[key] = np.ascontiguousarray(a)
        return key

    def enc(self, obj: Any, where: str) -> Any:
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if type(obj) is int or type(obj) is float:
            return obj
        ref = self._ref(obj)
        if ref is not None:
            return {"$": "ref", "i": ref}
        if isinstance(obj, np.ndarray):
            return {"$": "nd", "i": self._remember(obj), "a": self.array(obj, where)}
        if isinstance(obj, np.generic):
            if obj.dtype.hasobject:
                raise TypeError(f"{where}: numpy object scalars cannot be saved")
            return {"$": "npscalar", "dtype": obj.dtype.str, "v": obj.item()}
        if isinstance(obj, np.dtype):
            if obj.hasobject or obj.names is not None:
                raise TypeError(f"{where}: only plain numpy dtypes can be saved, not {obj}")
            return {"$": "dtype", "v": obj.str}
        if isinstance(obj, bytes):
            return {"$": "bytes", "v": base64.b64encode(obj).decode("ascii")}
        if _PATHS.get(type(obj).__name__) is type(obj):
            return {"$": "path", "c": type(obj).__name__, "v": str(obj)}
        if isinstance(obj, np.random.Generator):
            return {"$": "gen", "i": self._remember(obj), "bg": self.enc(obj.bit_generator, f"{where}.bit_generator")}
        if isinstance(obj, np.random.BitGenerator):
            name = type(obj).__name__
            if name not in _BIT_GENERATORS:
                raise TypeError(f"{where}: bit generator {name} cannot be saved")
            return {"$": "bitgen", "i": self._remember(obj), "name": name, "state": self.enc(obj.state, where)}
        if isinstance(obj, np.random.SeedSequence):
            return {
                "$": "seedseq",
                "entropy": self.enc(obj.entropy, where),
                "spawn_key": list(obj.spawn_key),
                "pool_size": obj.pool_size,
                "children": obj.n_children_spawned,
            }
        torch_node = self._torch(obj, where)
        if torch_node is not None:
            return torch_node
        if isinstance(obj, type):
            if not _allowed(obj):
                raise TypeError(f"{where}: class {_class_name(obj)} cannot be saved (not a project class)")
            return {"$": "class", "c": _class_name(obj)}
        if isinstance(obj, Enum):
            cls = type(obj)
            if not _allowed(cls):
                raise TypeError(f"{where}: enum {_class_name(cls)} cannot be saved")
            return {"$": "enum", "c": _class_name(cls), "v": self.enc(obj.value, where)}
        if type(obj) is tuple:
            return {"$": "tuple", "v": [self.enc(x, f"{where}[{i}]") for i, x in enumerate(obj)]}
        if type(obj) is list:
            node: dict[str, Any] = {"$": "list", "i": self._remember(obj)}
            node["v"] = [self.enc(x, f"{where}[{i}]") for i, x in enumerate(obj)]
            return node
        if type(obj) in (dict, collections.OrderedDict):
            node = {"$": "dict" if type(obj) is dict else "odict", "i": self._remember(obj)}
            node["k"] = [self.enc(k, f"{where} key") for k in obj]
            node["v"] = [self.enc(v, f"{where}[{k!r}]") for k, v in obj.items()]
            return node
        if type(obj) is collections.deque:
            node = {"$": "deque", "i": self._remember(obj), "maxlen": obj.maxlen}
            node["v"] = [self.enc(x, f"{where}[{i}]") for i, x in enumerate(obj)]
            return node
        if type(obj) in (set, frozenset):
            return {"$": type(obj).__name__, "v": [self.enc(x, f"{where} item") for x in obj]}
        cls = type(obj)
        if not _allowed(cls):
            raise TypeError(
                f"{where}: an object of type {_class_name(cls)} cannot be saved (only this project's classes and "
                f"{len(ALLOWED_OUTSIDE_CLASSES)} torch/SB3/Gymnasium layer classes can)"
            )
        if isinstance(obj, tuple):  # named tuples: their fields, rebuilt through the (project) class
            return {
                "$": "ntuple",
                "c": _class_name(cls),
                "v": [self.enc(x, f"{where}[{i}]") for i, x in enumerate(obj)],
            }
        node = {"$": "obj", "c": _class_name(cls), "i": self._remember(obj)}
        if _own(cls.__module__) and _own_method(cls, "__getstate__"):
            state = obj.__getstate__()
        elif hasattr(obj, "__dict__"):
            state = vars(obj)
        else:
            raise TypeError(f"{where}: {_class_name(cls)} has no attribute dict to save")
        if not isinstance(state, dict):
            raise TypeError(f"{where}: {_class_name(cls)}.__getstate__ must return a dict to be saved")
        node["d"] = self.enc(dict(state), f"{where}.__dict__")
        return node

    def _torch(self, obj: Any, where: str) -> dict[str, Any] | None:
        import sys

        torch = sys.modules.get("torch")
        if torch is None:
            return None
        if isinstance(obj, torch.Tensor):
            if obj.dtype == torch.bfloat16:
                raise TypeError(f"{where}: bfloat16 tensors cannot be saved")
            node = {"$": "tensor", "i": self._remember(obj), "dtype": str(obj.dtype).removeprefix("torch.")}
            node["a"] = self.array(obj.detach().cpu().numpy(), where)
            node["param"] = isinstance(obj, torch.nn.Parameter)
            node["grad"] = bool(obj.requires_grad)
            return node
        if isinstance(obj, torch.Size):
            return {"$": "tsize", "v": list(obj)}
        if isinstance(obj, torch.dtype):
            return {"$": "tdtype", "v": str(obj).removeprefix("torch.")}
        if isinstance(obj, torch.device):
            return {"$": "tdevice", "v": str(obj)}
        return None


def dumps(obj: Any) -> bytes:
    """``obj`` as the bytes of an ``.npz`` state file (see the module docstring); ``TypeError`` names anything in
    it that cannot be saved safely."""
    w = _Writer()
    tree = {"format": FORMAT, "root": w.enc(obj, "root")}
    text = json.dumps(tree, separators=(",", ":"))
    buf = io.BytesIO()
    members: dict[str, Any] = {"__tree__": np.frombuffer(text.encode("utf-8"), dtype=np.uint8), **w.arrays}
    np.savez(buf, **members)
    return buf.getvalue()


# --------------------------------------------------------------------------------------------------- reading


class _Reader:
    def __init__(self, arrays: Any) -> None:
        self.arrays = arrays
        self.memo: dict[int, Any] = {}

    def _put(self, node: dict[str, Any], obj: Any) -> Any:
        i = node["i"]
        if type(i) is not int or i in self.memo:
            raise StateFileError(f"bad object index {i!r}")
        self.memo[i] = obj
        return obj

    def _array(self, key: Any) -> np.ndarray:
        if not isinstance(key, str) or key == "__tree__" or key not in self.arrays:
            raise StateFileError(f"the state file lacks array {key!r}")
        a = self.arrays[key]
        return np.array(a)  # writable, own memory

    def dec(self, node: Any) -> Any:
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if not isinstance(node, dict) or not isinstance(node.get("$"), str):
            raise StateFileError(f"unexpected node {str(node)[:80]!r}")
        kind = node["$"]
        if kind == "ref":
            if node.get("i") not in self.memo:
                raise StateFileError(f"reference to unknown object {node.get('i')!r}")
            return self.memo[node["i"]]
        if kind == "nd":
            return self._put(node, self._array(node["a"]))
        if kind == "npscalar":
            dtype = np.dtype(node["dtype"])
            if dtype.hasobject or dtype.names is not None:
                raise StateFileError(f"bad numpy scalar dtype {node['dtype']!r}")
            return dtype.type(node["v"])
        if kind == "dtype":
            dtype = np.dtype(node["v"])
            if dtype.hasobject or dtype.names is not None:
                raise StateFileError(f"bad numpy dtype {node['v']!r}")
            return dtype
        if kind == "bytes":
            return base64.b64decode(node["v"], validate=True)
        if kind == "path":
            if node["c"] not in _PATHS or not isinstance(node["v"], str):
                raise StateFileError(f"bad path node {node['c']!r}")
            return _PATHS[node["c"]](node["v"])
        if kind == "gen":
            bg = self.dec(node["bg"])
            if not isinstance(bg, np.random.BitGenerator):
                raise StateFileError("a Generator's bit generator is missing")
            return self._put(node, np.random.Generator(bg))
        if kind == "bitgen":
            if node["name"] not in _BIT_GENERATORS:
                raise StateFileError(f"unknown bit generator {node['name']!r}")
            bg = getattr(np.random, node["name"])()
            self._put(node, bg)
            bg.state = self.dec(node["state"])
            return bg
        if kind == "seedseq":
            return np.random.SeedSequence(
                self.dec(node["entropy"]),
                spawn_key=tuple(int(x) for x in node["spawn_key"]),
                pool_size=int(node["pool_size"]),
                n_children_spawned=int(node["children"]),
            )
        if kind in ("tensor", "tsize", "tdtype", "tdevice"):
            return self._torch(node)
        if kind == "class":
            return _resolve(node["c"])
        if kind == "enum":
            cls = _resolve(node["c"])
            if not issubclass(cls, Enum):
                raise StateFileError(f"{node['c']!r} is not an enum")
            return cls(self.dec(node["v"]))
        if kind == "tuple":
            return tuple(self.dec(x) for x in self._items(node))
        if kind == "list":
            out: list[Any] = self._put(node, [])
            out.extend(self.dec(x) for x in self._items(node))
            return out
        if kind in ("dict", "odict"):
            d: dict[Any, Any] = self._put(node, {} if kind == "dict" else collections.OrderedDict())
            keys, values = node["k"], node["v"]
            if not isinstance(keys, list) or not isinstance(values, list) or len(keys) != len(values):
                raise StateFileError("a dict's keys and values differ in number")
            for k, v in zip(keys, values, strict=True):
                d[self.dec(k)] = self.dec(v)
            return d
        if kind == "deque":
            maxlen = node["maxlen"]
            if maxlen is not None and (type(maxlen) is not int or maxlen < 0):
                raise StateFileError(f"bad deque length {maxlen!r}")
            dq: collections.deque[Any] = self._put(node, collections.deque(maxlen=maxlen))
            dq.extend(self.dec(x) for x in self._items(node))
            return dq
        if kind in ("set", "frozenset"):
            items = [self.dec(x) for x in self._items(node)]
            return set(items) if kind == "set" else frozenset(items)
        if kind == "ntuple":
            cls = _resolve(node["c"])
            if not issubclass(cls, tuple) or not _own(cls.__module__):
                raise StateFileError(f"{node['c']!r} is not a project named tuple")
            return cls(*(self.dec(x) for x in self._items(node)))
        if kind == "obj":
            cls = _resolve(node["c"])
            if issubclass(cls, (tuple, Enum, BaseException)):
                raise StateFileError(f"{node['c']!r} cannot be loaded as an attribute dict")
            inst = self._put(node, cls.__new__(cls))
            state = self.dec(node["d"])
            if not isinstance(state, dict) or not all(isinstance(k, str) for k in state):
                raise StateFileError(f"the attributes of a {node['c']} are not a dict of names")
            if _own(cls.__module__) and _own_method(cls, "__setstate__"):
                inst.__setstate__(state)
            elif hasattr(inst, "__dict__"):
                inst.__dict__.update(state)
            else:
                raise StateFileError(f"{node['c']!r} objects have no attribute dict")
            return inst
        raise StateFileError(f"unknown node kind {kind!r}")

    def _items(self, node: dict[str, Any]) -> list[Any]:
        items = node["v"]
        if not isinstance(items, list):
            raise StateFileError(f"the items of a {node['$']} are not a list")
        return items

    def _torch(self, node: dict[str, Any]) -> Any:
        import torch

        kind = node["$"]
        if kind == "tsize":
            return torch.Size(int(x) for x in node["v"])
        if kind == "tdevice":
            return torch.device(str(node["v"]))
        if node.get("dtype" if kind == "tensor" else "v") not in _TORCH_DTYPES:
            raise StateFileError(f"bad torch dtype {node.get('dtype', node.get('v'))!r}")
        if kind == "tdtype":
            return getattr(torch, node["v"])
        t = torch.from_numpy(self._array(node["a"]))
        if str(t.dtype).removeprefix("torch.") != node["dtype"]:
            raise StateFileError(f"tensor dtype {t.dtype} differs from the recorded {node['dtype']!r}")
        if node.get("param"):
            t = torch.nn.Parameter(t, requires_grad=bool(node.get("grad")))
        elif node.get("grad"):
            t.requires_grad_(True)
        return self._put(node, t)


def loads(data: bytes) -> Any:
    """The object tree of a state file written by ``dumps``; ``StateFileError`` for a damaged, newer or crafted one.

    Reading never calls anything the file names: see the module docstring."""
    try:
        arrays = read_npz(data)
        if "__tree__" not in arrays:
            raise StateFileError("not a state file (no __tree__ member)")
        tree = json.loads(arrays["__tree__"].tobytes().decode("utf-8"))
        if not isinstance(tree, dict) or "root" not in tree:
            raise StateFileError("not a state file (no root)")
        if tree.get("format") != FORMAT:
            raise StateFileError(f"state format {tree.get('format')!r}; this code reads format {FORMAT}")
        return _Reader(arrays).dec(tree["root"])
    except StateFileError:
        raise
    except RecursionError:
        raise StateFileError("the state file nests too deeply (damaged or crafted)") from None
    except (  # read_npz gives a damaged archive as ValueError
        OSError,
        UnicodeDecodeError,
        KeyError,
        IndexError,
        TypeError,
        ValueError,
    ) as e:
        raise StateFileError(f"damaged state file ({type(e).__name__}: {e})") from None
