"""The layers import one way: cards -> rules -> core -> env faces (scopa_env) -> agents -> train / evaluate / play.

Nothing in ``scopa_env`` imports ``agents`` (not even inside a function), and no module of the project imports
itself back through others (lazy imports included): both are read from the source, so a new upward import or
circle fails here before it can hide behind import order.
"""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("scopa_env", "agents")


TOOLS = {"scopa_bench": ROOT / "bench", "train": ROOT / "train.py", "evaluate": ROOT / "evaluate.py"}
"""The top layer: the benchmarks (installed as ``scopa_bench``) and the two scripts."""


@functools.cache
def _tree(path: Path) -> ast.Module:
    """``path``'s syntax tree, parsed once for all the tests here (they only read it)."""
    return ast.parse(path.read_text())


@functools.cache
def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[name] = path
    for name, path in TOOLS.items():
        if path.is_dir():
            out.update({f"{name}.{p.stem}" if p.stem != "__init__" else name: p for p in sorted(path.glob("*.py"))})
        else:
            out[name] = path
    return out


def _imports(path: Path, name: str, known: set[str]) -> set[str]:
    """Project modules that ``path`` imports anywhere in its body (functions included)."""
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(_tree(path)):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                )
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        for t in targets:
            while t and t not in known:
                t = t.rpartition(".")[0]
            if t and t != name:
                found.add(t)
    return found


@functools.cache
def _graph() -> dict[str, set[str]]:
    mods = _modules()
    known = set(mods)
    return {name: _imports(path, name, known) for name, path in mods.items()}


def test_the_env_layer_never_imports_agents() -> None:
    upward = {m: sorted(d for d in deps if d.split(".")[0] == "agents") for m, deps in _graph().items()}
    upward = {m: d for m, d in upward.items() if m.startswith("scopa_env") and d}
    assert not upward, f"scopa_env modules importing agents: {upward}"


def test_no_library_module_imports_the_tools() -> None:
    tools = tuple(TOOLS)
    upward = {
        m: sorted(d for d in deps if d.split(".")[0] in tools)
        for m, deps in _graph().items()
        if m.split(".")[0] in PACKAGES
    }
    upward = {m: d for m, d in upward.items() if d}
    assert not upward, f"scopa_env / agents modules importing train, evaluate or the benchmarks: {upward}"


def test_every_env_module_imports_with_agents_blocked() -> None:
    env_modules = [m for m in _modules() if m.startswith("scopa_env")]
    code = (
        "import sys, importlib\n"
        "sys.modules['agents'] = None  # any import of agents now raises ImportError\n"
        f"for m in {env_modules!r}:\n"
        "    importlib.import_module(m)\n"
        "from scopa_env.envs.gym import ScopaVecEnv  # defined in scopa_env.envs.vec_env, still importable from here\n"
        "assert ScopaVecEnv is importlib.import_module('scopa_env.envs.vec_env').ScopaVecEnv\n"
        "venv = ScopaVecEnv('classic', 4, opponents='random', seed=0)\n"
        "venv.reset()\n"
        "_, rewards, dones, infos = venv.step(venv.action_masks().argmax(axis=1))\n"
        "assert len(rewards) == len(dones) == len(infos) == 4\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_no_import_circles() -> None:
    graph = _graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    assert not cycles, f"import circles: {cycles}"


# --------------------------------------------------------------------------------------------------- scopa_env by job

ENV_FLOORS = {
    "scopa_env.rules": 1,
    "scopa_env.engine": 2,
    "scopa_env.oracle": 3,
    "scopa_env.records": 4,
    "scopa_env.games": 5,
    "scopa_env.envs": 6,
}
"""The env library's subpackages, one per job, from the bottom up (docs/architecture.md, "scopa_env/ by job"): the
rules, the engines, the oracle, records and saved states, games played by policies, the env faces. A module imports
only from its own subpackage, from lower floors and from ``scopa_env.errors``; the package's ``__init__`` (the
Gymnasium ids) and ``scopa_v0`` (PettingZoo's entry points) stand above them all."""
MAX_ENV_TOP_LEVEL_MODULES = 10
ENV_FORBIDDEN_IMPORTS = ("argparse", "yaml")
"""The command-line plumbing lives in ``agents.cli``: the env library parses no command line and reads no YAML."""


def _subpackage_floor(
    module: str, package: str, floors: dict[str, int], top: tuple[str, int] | None
) -> tuple[str, int] | None:
    """The subpackage of ``package`` that ``module`` is in and its floor (``top`` for a top-level module; None for a
    module outside ``package`` or the package itself)."""
    parts = module.split(".")
    if parts[0] != package or module == package:
        return None
    sub = ".".join(parts[:2])
    return (sub, floors[sub]) if sub in floors else top


def _assert_every_subpackage_has_a_floor(package: str, floors: dict[str, int]) -> None:
    subs = {f"{package}.{p.name}" for p in (ROOT / package).iterdir() if (p / "__init__.py").is_file()}
    assert subs == set(floors), f"subpackages without a floor, or floors without a subpackage: {subs ^ set(floors)}"


def _env_floor(module: str) -> tuple[str, int] | None:
    return _subpackage_floor(module, "scopa_env", ENV_FLOORS, None)


def test_every_env_subpackage_has_a_floor_and_the_top_level_is_small() -> None:
    _assert_every_subpackage_has_a_floor("scopa_env", ENV_FLOORS)
    top = sorted(p.name for p in (ROOT / "scopa_env").glob("*.py"))
    assert len(top) <= MAX_ENV_TOP_LEVEL_MODULES, f"{len(top)} modules at scopa_env/' top level: {top}"


def _upward_imports(
    package: str,
    floor: Callable[[str], tuple[str, int] | None],
    allowed: Callable[[str, tuple[str, int], tuple[str, int] | None], bool],
) -> list[str]:
    """``module -> dep``, sorted, for every import by a module that has a ``floor`` of a module of ``package`` in
    another subpackage on the same floor or higher (or with no floor), unless ``allowed(dep, the importer's floor,
    dep's floor)``."""
    upward = []
    for module, deps in _graph().items():
        mine = floor(module)
        if mine is None:
            continue
        for dep in deps:
            theirs = floor(dep)
            if dep.split(".")[0] != package or allowed(dep, mine, theirs):
                continue
            if theirs is None or (theirs[0] != mine[0] and theirs[1] >= mine[1]):
                upward.append(f"{module} -> {dep}")
    return sorted(upward)


def test_the_env_subpackages_import_only_down_their_floors() -> None:
    upward = _upward_imports("scopa_env", _env_floor, lambda dep, mine, theirs: dep == "scopa_env.errors")
    assert not upward, f"imports that do not go down a floor of scopa_env: {upward}"


def test_the_env_library_parses_no_command_line_and_reads_no_yaml() -> None:
    found = []
    for path in sorted((ROOT / "scopa_env").rglob("*.py")):
        for node in ast.walk(_tree(path)):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            found += [f"{path.relative_to(ROOT)}: {n}" for n in names if n.split(".")[0] in ENV_FORBIDDEN_IMPORTS]
    assert not found, f"command-line plumbing in the env library (it belongs in agents.cli): {found}"


# --------------------------------------------------------------------------------------------------- agents' floors

AGENT_FLOORS = {
    "agents.cli": 0,
    "agents.baselines": 1,
    "agents.search": 2,
    "agents.nets": 3,
    "agents.evaluation": 4,
    "agents.play": 4,
    "agents.training": 5,
}
"""The subpackages of ``agents`` from the bottom up (docs/architecture.md draws them). A module imports only from its
own subpackage, from lower floors and from the top-level modules (``base``, ``errors``, which stand on ``cli``, the
command-line plumbing of floor 0); two subpackages on one floor (evaluation, play) do not import each other. The
package's ``__init__`` is the front door: its lazy names (``from agents import Bot``) may come from any floor."""
MAX_TOP_LEVEL_MODULES = 8
MAX_LINES = 800


def _floor(module: str) -> tuple[str, int] | None:
    return _subpackage_floor(module, "agents", AGENT_FLOORS, ("agents", 0))


def test_every_agents_subpackage_has_a_floor() -> None:
    _assert_every_subpackage_has_a_floor("agents", AGENT_FLOORS)


def _agents_allowed(dep: str, mine: tuple[str, int], theirs: tuple[str, int] | None) -> bool:
    """The package's ``__init__`` (the front door) is not a floor; the top-level modules (``base``) stand on the
    command-line plumbing; every floor may raise the package's errors."""
    return dep in ("agents", "agents.errors") or (
        theirs is not None and theirs[0] == "agents.cli" and mine[0] == "agents"
    )


def test_agents_import_only_down_their_floors() -> None:
    upward = _upward_imports("agents", _floor, _agents_allowed)
    assert not upward, f"imports that do not go down a floor: {upward}"


def test_agents_top_level_holds_few_modules() -> None:
    top = sorted(p.name for p in (ROOT / "agents").glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, f"{len(top)} modules at agents/' top level: {top}"


def test_no_module_over_800_lines() -> None:
    long = {
        str(p.relative_to(ROOT)): n
        for package in PACKAGES
        for p in sorted((ROOT / package).rglob("*.py"))
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert not long, f"modules over {MAX_LINES} lines (split them by job): {long}"


def _top_level_names(path: Path) -> tuple[set[str], dict[str, str]]:
    """Names a module defines at its top level (if / try blocks included) and the names it imports (-> module)."""
    defined: set[str] = set()
    imported: dict[str, str] = {}

    def walk(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defined.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                defined.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
            elif isinstance(node, ast.ImportFrom):
                imported.update({a.asname or a.name: node.module or "" for a in node.names})
            elif isinstance(node, ast.Import):
                imported.update({a.asname or a.name: a.name for a in node.names})
            elif isinstance(node, ast.If):
                walk(node.body)
                walk(node.orelse)
            elif isinstance(node, ast.Try):
                walk(node.body)
                walk(node.orelse)
                for h in node.handlers:
                    walk(h.body)

    walk(_tree(path).body)
    return defined, imported


def _dunder_all(path: Path) -> list[str] | None:
    for node in _tree(path).body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and node.value is not None:
                return [ast.literal_eval(e) for e in node.value.elts]  # type: ignore[attr-defined]
    return None


def _agents_modules() -> dict[str, Path]:
    return {m: p for m, p in _modules().items() if m.split(".")[0] in ("agents", "train", "evaluate")}


def test_every_all_lists_only_names_the_module_defines() -> None:
    """No facade: ``__all__`` of an agents module (and of train.py, evaluate.py) names only what it defines. The
    package's ``__init__`` is the exception: its lazy front-door names (``from agents import Bot``)."""
    foreign = {}
    for module, path in _agents_modules().items():
        names = _dunder_all(path)
        if names is None or path.name == "__init__.py":
            continue
        defined, _ = _top_level_names(path)
        if missing := sorted(set(names) - defined):
            foreign[module] = missing
    assert not foreign, f"__all__ names re-exported from elsewhere (import them from where they are defined): {foreign}"


def test_no_module_only_re_exports() -> None:
    """A module holding nothing but imports (and a docstring) is a signpost: its importers should go to the source.
    Package ``__init__`` files (a docstring, at most lazy names) and ``__main__`` files are exempt."""
    signposts = []
    for module, path in _agents_modules().items():
        if path.name in ("__init__.py", "__main__.py"):
            continue
        body = [
            n
            for n in _tree(path).body
            if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))
            and not isinstance(n, (ast.Import, ast.ImportFrom))
            and not (isinstance(n, ast.Assign) and [getattr(t, "id", "") for t in n.targets] == ["__all__"])
        ]
        if not body:
            signposts.append(module)
    assert not signposts, f"modules that only re-export others' names: {signposts}"


def test_every_name_is_imported_from_the_module_that_defines_it() -> None:
    """``from M import X`` with M in agents, train or evaluate: X is defined in M (or is a submodule of the package
    M). Reaching a name through a module that merely imports it hides where it lives. Scanned: the package, the
    scripts, the tests and the benchmarks. ``from agents import Bot, make_agent`` (the lazy front door) is allowed."""
    known = _agents_modules()
    files = [*known.values(), *sorted((ROOT / "tests").glob("*.py")), *sorted((ROOT / "bench").glob("*.py"))]
    cache: dict[str, set[str]] = {}
    wrong = []
    for path in dict.fromkeys(files):
        for node in ast.walk(_tree(path)):
            if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in known):
                continue
            if node.module == "agents":
                continue
            if node.module not in cache:
                cache[node.module] = _top_level_names(known[node.module])[0]
            for alias in node.names:
                if alias.name not in cache[node.module] and f"{node.module}.{alias.name}" not in known:
                    wrong.append(f"{path.relative_to(ROOT)}:{node.lineno}: {alias.name} from {node.module}")
    assert not wrong, f"names imported from a module that does not define them: {wrong}"


# --------------------------------------------------------------------------------------------------- the map

ARCHITECTURE = ROOT / "docs" / "architecture.md"


def _mapped_files() -> list[str]:
    """The files named in the first column of docs/architecture.md's table: ``a/b.py``, ``c.py`` (beside the last)."""
    out = []
    for line in ARCHITECTURE.read_text().splitlines():
        if not line.startswith("| `"):
            continue
        folder = ""
        for item in line.split("|")[1].split("`")[1::2]:
            if "/" in item:
                folder = item.rpartition("/")[0] + "/"
                out.append(item)
            else:
                out.append(folder + item)
    return out


def test_every_module_has_its_line_in_the_architecture_map() -> None:
    mapped = set(_mapped_files())
    modules = {str(p.relative_to(ROOT)) for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}
    missing = sorted(modules - mapped)
    assert not missing, (
        f"modules without a line in docs/architecture.md's table (add one: what the file is for): {missing}"
    )


def test_the_architecture_map_names_only_files_that_exist() -> None:
    gone = sorted(f for f in _mapped_files() if not (ROOT / f).exists())
    assert not gone, f"docs/architecture.md names files that do not exist: {gone}"


# --------------------------------------------------------------------------------------------------- one way to weights

WEIGHTS_LOADER = "agents/nets/weights.py"
"""The one module that opens a network's files (checkpoints, bot directories, RLlib modules)."""
OTHER_READERS = {
    ("agents/training/expert_iteration.py", "np.load"): "expert iteration's self-play data (data/iter_K.npz), not "
    "weights",
}
"""Reads of the kinds below outside the loader, each with why it is no weight file."""
_READERS = {"torch", "np", "numpy", "onnx", "pickle", "safetensors"}
"""Modules whose ``load`` reads a file (SB3's algorithms too: ``PPO.load``, ``MaskablePPO.load``)."""


def _weight_opens(source: str) -> list[tuple[int, str]]:
    """(line, call) of each call in ``source`` that opens a weight file its own way: ``torch.load``, ``np.load``,
    ``onnx.load``, ``pickle.load(s)``, SB3's ``PPO.load`` / ``MaskablePPO.load``, an onnxruntime
    ``InferenceSession``, a zip opened for reading (``zipfile.ZipFile`` without a write mode, ``is_zipfile``).
    Writers (``ZipFile(..., mode="w" / "a")``, ``np.savez``, ``torch.save``) are not reads."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        f = node.func
        base = f.value.id if isinstance(f.value, ast.Name) else getattr(f.value, "attr", "")
        name = f"{base}.{f.attr}"
        if (f.attr == "load" and (base in _READERS or base.endswith("PPO"))) or name == "pickle.loads":
            found.append((node.lineno, name))
        elif f.attr in ("is_zipfile", "InferenceSession"):
            found.append((node.lineno, name))
        elif f.attr == "ZipFile":
            mode = (
                node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "mode"), None)
            )
            if mode is None or (isinstance(mode, ast.Constant) and mode.value == "r"):
                found.append((node.lineno, name))
    return found


def test_the_weight_rule_sees_the_ways_to_open_a_file() -> None:
    code = (
        "torch.load(p, weights_only=True)\nnp.load(p)\nzipfile.ZipFile(p)\nzipfile.ZipFile(b, mode='w')\n"
        "ort.InferenceSession(p)\nMaskablePPO.load(p)\npickle.loads(b)\njson.loads(t)\nnp.savez(p, a=a)\n"
    )
    assert [name for _, name in _weight_opens(code)] == [
        "torch.load",
        "np.load",
        "zipfile.ZipFile",
        "ort.InferenceSession",
        "MaskablePPO.load",
        "pickle.loads",
    ]


def test_only_the_loader_opens_weight_files() -> None:
    """Every loader (the agents, the bots, the exporter, the searches, the trainer's warm start and resume, expert
    iteration, RLlib) reads a network's files through ``agents.nets.weights``, which keeps each format's safety
    (``torch.load(weights_only=True)``, ``np.load(allow_pickle=False)``, no SB3 ``load``, no pickle) in one place."""
    files = [p for pkg in (*PACKAGES, "bench") for p in sorted((ROOT / pkg).rglob("*.py"))]
    files += [ROOT / "train.py", ROOT / "evaluate.py"]
    elsewhere = []
    for path in files:
        rel = str(path.relative_to(ROOT))
        if rel == WEIGHTS_LOADER:
            continue
        opens = _weight_opens(path.read_text())
        elsewhere += [f"{rel}:{line}: {name}" for line, name in opens if (rel, name) not in OTHER_READERS]
    assert not elsewhere, f"files opened outside {WEIGHTS_LOADER} (read them through it): {elsewhere}"
    assert [name for _, name in _weight_opens((ROOT / WEIGHTS_LOADER).read_text())], "the loader reads nothing?"


# --------------------------------------------------------------------------------------------------- variant names

NAME_EDGES = {
    "agents/base.py": {"make_agent", "act_observation"},  # the registry: specs with a variant name
    "agents/nets/bot.py": {"Bot.load", "shipped_bot", "shipped_bot_spec", "make_bot_policy"},  # files, the spec
    "agents/nets/checkpoint.py": {"checkpoint_meta", "load_checkpoint_policy"},
    "agents/training/duplicate_eval.py": {
        "duplicate_eval",
        "duplicate_eval_on_ray",
    },  # documented (docs/agents.md, ray.md)
    "agents/training/imitation.py": {"collect_teacher_data"},  # documented (docs/ray.md)
    "scopa_env/engine/core.py": {
        "reset",
        "step",
        "legal_action_mask",
        "rules_key",
    },  # the engine's public entry points (README, docs/examples.md)
    "scopa_env/engine/state_moves.py": {"legal_moves", "legal_move_lists", "move_classes", "is_open"},  # the same
    "scopa_env/engine/observation.py": {
        "observe",
        "observation_size",
        "observation_version",
        "observation_layout",
        "observation_bounds",
    },
    "scopa_env/records/state_io.py": {
        "state_to_dict",
        "state_to_json",
        "state_from_json",
        "state_from_dict",
        "_from_dict",
    },
    "scopa_env/games/policy.py": {"Policy.__init__", "resolve_policy"},  # the policy interface users build on, specs
    "scopa_env/envs/interop.py": {"act_observation"},
    "scopa_env/games/driver.py": {"play"},
    "agents/cli/record.py": {"play_random_records"},
    "scopa_env/engine/render.py": {"render_text"},
    "scopa_env/engine/kernel.py": {"kernel_for"},
    "scopa_env/oracle/reference.py": {"ReferenceGame.__init__"},  # the engines and envs, built with a name
    "scopa_env/engine/single.py": {"SingleGame.__init__", "SingleGame.from_state", "new_game", "game_from_state"},
    "scopa_env/games/learner.py": {"LearnerGames.__init__"},
    "scopa_env/games/learner_single.py": {"SingleLearnerGame.__init__"},
}
"""The functions that take a variant *name* as well as ``Rules`` (``Rules | str``): the edges where a person or a file
names a variant (commands, specs, files, the engine's and the envs' public entry points). Everything inside takes
``Rules``: a name is resolved once, at the edge (``get_rules``)."""


def _takes_a_name(annotation: ast.expr | None) -> bool:
    text = ast.unparse(annotation) if annotation is not None else ""
    parts = {p.strip() for p in text.replace("Optional[", "").replace("]", "").split("|")}
    return "Rules" in parts and "str" in parts


def _functions_taking_a_name(path: Path) -> set[str]:
    found: set[str] = set()

    def walk(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                walk(node.body, f"{prefix}{node.name}.")
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
                if any(a.arg == "rules" and _takes_a_name(a.annotation) for a in args):
                    found.add(prefix + node.name)

    walk(_tree(path).body, "")
    return found


def test_variant_names_are_resolved_at_the_edges() -> None:
    """Only the functions of ``NAME_EDGES`` take ``rules: Rules | str``; every other function takes ``Rules``."""
    inside = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = str(path.relative_to(ROOT))
            if extra := sorted(_functions_taking_a_name(path) - NAME_EDGES.get(rel, set())):
                inside[rel] = extra
    assert not inside, (
        f"functions inside that take a variant name (take Rules; resolve names at the edge with get_rules): {inside}"
    )


# --------------------------------------------------------------------------------------------------- variant families

FAMILY_TESTERS = {
    "scopa_env/rules/__init__.py": "defines the flag (Rules.cirulla) and the action count it adds",
    "scopa_env/rules/cirulla.py": "the cirulla family: CirullaHook.covers(rules)",
    "scopa_env/oracle/reference.py": "the independent oracle: shares no code with the engine, it tests the rules",
    "scopa_env/oracle/reference_scoring.py": "the oracle's scoring: no code shared with the engine (cirulla's points)",
}
"""The modules that may ask whether rules are cirulla's (``.cirulla``); everything else asks the rules' family hook
(``scopa_env.rules.variant``: ``core.tables_for(rules).variant``, ``variant.hook_class(rules)``) or the data it
gives."""


def _family_tests(source: str) -> list[int]:
    """Lines of ``source`` that read an attribute ``cirulla`` (``rules.cirulla``, ``tb.cirulla``), the module
    ``scopa_env.rules.cirulla`` aside."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute)
        and node.attr == "cirulla"
        and ast.unparse(node.value) not in ("scopa_env", "scopa_env.rules")  # the module
    ]


def test_the_family_rule_sees_a_family_test() -> None:
    code = (
        "if rules.cirulla:\n    t = tables_for(rules).cirulla\nimport scopa_env.rules.cirulla\n"
        "m = scopa_env.rules.cirulla.X\n"
    )
    assert _family_tests(code) == [1, 2]


def test_only_the_families_ask_which_family_the_rules_are_in() -> None:
    """Variant families (cirulla) live behind one hook in their own module: the core and the faces call the rules'
    hook (``scopa_env.rules.variant``) instead of testing ``rules.cirulla``; only ``FAMILY_TESTERS`` may."""
    files = [p for pkg in (*PACKAGES, "bench") for p in sorted((ROOT / pkg).rglob("*.py"))]
    files += [ROOT / "train.py", ROOT / "evaluate.py"]
    found = []
    for path in files:
        rel = str(path.relative_to(ROOT))
        if rel not in FAMILY_TESTERS:
            found += [f"{rel}:{line}" for line in _family_tests(path.read_text())]
    assert not found, f"modules testing .cirulla (ask core.tables_for(rules).variant instead): {found}"


# ------------------------------------------------------------------------------------------- one settings machinery

PLAIN_ARGPARSE: dict[str, str] = {}
"""The command lines that may build their options by hand (path: why): none. Every one declares them as a dataclass
(``agents.cli.settings.setting``) and builds its parser with ``agents.cli.settings.add_field_options``; the machinery is
in the env layer, so the recorder (``agents/cli/record.py``) uses it too."""


def _calls(source: str, name: str) -> list[int]:
    """Lines of ``source`` calling ``name`` (``name(...)`` or ``x.name(...)``)."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Name) and node.func.id == name)
            or (isinstance(node.func, ast.Attribute) and node.func.attr == name)
        )
    ]


def test_the_settings_rule_sees_a_parser() -> None:
    code = "p = argparse.ArgumentParser()\nq = ArgumentParser()\nadd_field_options(p, Options)\n"
    assert _calls(code, "ArgumentParser") == [1, 2] and _calls(code, "add_field_options") == [3]


def test_every_command_line_uses_the_settings_machinery() -> None:
    files = [p for pkg in (*PACKAGES, "bench") for p in sorted((ROOT / pkg).rglob("*.py"))]
    files += [ROOT / "train.py", ROOT / "evaluate.py"]
    by_hand = []
    for path in files:
        rel = str(path.relative_to(ROOT))
        source = path.read_text()
        if rel not in PLAIN_ARGPARSE and _calls(source, "ArgumentParser") and not _calls(source, "add_field_options"):
            by_hand.append(rel)
    assert not by_hand, (
        f"command lines building their options by hand (declare a dataclass of agents.cli.settings.setting fields and "
        f"use add_field_options / parse_options): {by_hand}"
    )
    assert all(_calls((ROOT / rel).read_text(), "ArgumentParser") for rel in PLAIN_ARGPARSE), "stale PLAIN_ARGPARSE"


# ------------------------------------------------------------------------------------------- private names stay home

PRIVATE_IMPORTS: dict[str, str] = {}
"""``from M import _name`` between modules that may stay (``"importer: _name from M"``: why): none. A name another
module needs is that module's API: public, with a docstring, or the code moves to where it is used."""


def test_no_private_name_is_imported_across_modules() -> None:
    """No module of ``scopa_env``, ``agents`` or the tools imports another's private (``_``) name: the floors and the
    one-module-per-job split hold only if what crosses a module's edge is its public face."""
    files = [p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))]
    files += [ROOT / "train.py", ROOT / "evaluate.py"]
    crossing = []
    for path in files:
        for node in ast.walk(_tree(path)):
            if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module):
                continue
            if node.module.split(".")[0] not in PACKAGES:
                continue
            crossing += [
                f"{path.relative_to(ROOT)}: {a.name} from {node.module}"
                for a in node.names
                if a.name.startswith("_") and not a.name.startswith("__")
            ]
    unexplained = sorted(set(crossing) - set(PRIVATE_IMPORTS))
    assert not unexplained, (
        f"private names imported from another module (make them public or move the code): {unexplained}"
    )
    assert not set(PRIVATE_IMPORTS) - set(crossing), (
        f"stale PRIVATE_IMPORTS: {sorted(set(PRIVATE_IMPORTS) - set(crossing))}"
    )


# ------------------------------------------------------------------------------------------- one door to a network

NETWORK_DOORS = {
    "agents.base.make_agent": "a playing agent from a spec: a bot directory, a checkpoint, an RLlib export, az, pimc",
    "agents.base.load_network": "a search's network (az, pimc:model=PATH), the registry's door below the nets floor",
    "agents.nets.weights.open_network": "a network's numpy layers and activation, checked against the rules",
    "agents.nets.weights.open_checkpoint": "a checkpoint's zip for the readers beside it (metadata, members)",
    "agents.nets.bot.Bot.load": "the torch-free bot of docs/export_play.md; make_agent('bot:path=DIR') builds on it",
    "agents.nets.checkpoint.load_checkpoint_policy": "a checkpoint's torch actor, for the exporter (ONNX), its check",
}
"""Every public way to open a network (functions and methods of ``agents.base`` and ``agents.nets`` named ``load``,
``open_...``, ``load_...`` or ``..._from_checkpoint``), each with its job: one for play (``make_agent``), one for a
search (``load_network``), one for layers (``open_network``); a new way is a new entry here, argued."""


def test_one_public_way_to_open_a_network() -> None:
    import re

    door_name = re.compile(r"(load|open)(_\w+)?|\w*from_checkpoint|make_agent")
    found = set()
    for module, path in _agents_modules().items():
        if not (module == "agents.base" or module.startswith("agents.nets.")):
            continue
        for node in _tree(path).body:
            defs = [(node, "")] if isinstance(node, ast.FunctionDef) else []
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                defs = [(m, f"{node.name}.") for m in node.body if isinstance(m, ast.FunctionDef)]
            for fn, owner in defs:
                if not fn.name.startswith("_") and door_name.fullmatch(fn.name):
                    found.add(f"{module}.{owner}{fn.name}")
    assert found == set(NETWORK_DOORS), (
        f"public ways to open a network not argued in NETWORK_DOORS: {sorted(found - set(NETWORK_DOORS))}; "
        f"stale entries: {sorted(set(NETWORK_DOORS) - found)}"
    )


def test_one_single_agent_loop_under_both_envs() -> None:
    """``ScopaEnv`` (every variant, cirulla included) and ``ScopaVecEnv`` run on one loop, ``LearnerGames``: the
    one-game engine is a subclass that swaps the game, not the loop; the reward and the episode ends are written once
    (``learner.hand_outcome``, ``LearnerGames._end_episodes``, ``_begin``) and never overridden."""
    from scopa_env.envs.gym import ScopaEnv
    from scopa_env.envs.vec_env import ScopaVecEnv
    from scopa_env.games import learner
    from scopa_env.games.learner import LearnerGames
    from scopa_env.games.learner_single import SingleLearnerGame
    from scopa_env.rules import VARIANTS

    for once in ("_end_episodes", "_begin", "_collect_ends"):
        assert once in vars(LearnerGames) and once not in vars(SingleLearnerGame), once
    for variant in VARIANTS:
        assert type(ScopaEnv(variant).games) is SingleLearnerGame, variant
    assert type(ScopaVecEnv("cirulla", 2).games) is LearnerGames
    sources = {p: p.read_text() for p in (ROOT / "scopa_env").rglob("*.py")}
    callers = sorted(str(p.relative_to(ROOT)) for p, text in sources.items() if "hand_outcome(" in text)
    assert callers == ["scopa_env/games/learner.py", "scopa_env/games/learner_single.py"], callers
    assert callable(learner.hand_outcome)
