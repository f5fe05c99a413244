"""The layers import one way: cards -> rules -> core -> env faces (scopa_env) -> agents -> train / evaluate / play.

Nothing in ``scopa_env`` imports ``agents`` (not even inside a function), and no module of the project imports
itself back through others (lazy imports included): both are read from the source, so a new upward import or
circle fails here before it can hide behind import order.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("scopa_env", "agents")


TOOLS = {"scopa_bench": ROOT / "bench", "train": ROOT / "train.py", "evaluate": ROOT / "evaluate.py"}
"""The top layer: the benchmarks (installed as ``scopa_bench``) and the two scripts."""


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
    for node in ast.walk(ast.parse(path.read_text())):
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
        "from scopa_env.gym import ScopaVecEnv\n"
        "venv = ScopaVecEnv('classic', 4, opponents='random', seed=0)\n"
        "venv.reset()\n"
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
