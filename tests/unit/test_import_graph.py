"""No import cycle in ``aios`` or ``aios_sdk`` (DESIGN §2: imports only run one way).

The graph is built from the source with :mod:`ast`, so it counts every
import: at module level, under ``if TYPE_CHECKING:``, and inside functions
(a deferred import still ties two modules together). ``from pkg import
name`` is an edge to the submodule ``pkg.name`` when there is one, else to
``pkg`` itself; importing ``pkg.sub`` is an edge to ``pkg.sub`` only.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("aios", "aios_sdk")


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> Iterator[str]:
    is_package = path.name == "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules:
                    yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                here = name.split(".") if is_package else name.split(".")[:-1]
                base = ".".join(
                    here[: len(here) - node.level + 1] + ([node.module] if node.module else [])
                )
            else:
                base = node.module or ""
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in modules:
                    yield sub
                elif base in modules:
                    yield base


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {
        name: {t for t in _imports(name, path, modules) if t != name}
        for name, path in modules.items()
    }


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _path(graph: dict[str, set[str]], component: list[str]) -> str:
    """One cycle through the component's first module, for the failure message."""
    start = component[0]
    members = set(component)
    trail = [start]
    seen = {start}
    while True:
        nxt = sorted(w for w in graph[trail[-1]] if w in members)
        if start in nxt and len(trail) > 1:
            return " -> ".join([*trail, start])
        fresh = [w for w in nxt if w not in seen]
        if not fresh:
            return " <-> ".join(component)
        trail.append(fresh[0])
        seen.add(fresh[0])


def test_the_graph_sees_deferred_and_type_checking_imports() -> None:
    graph = _graph()
    # aios.tools.base imports ProcessTable only under TYPE_CHECKING ...
    assert "aios.tools.processes" in graph["aios.tools.base"]
    # ... and aios_sdk.standalone imports aios.tools inside a method.
    assert "aios.tools" in graph["aios_sdk.standalone"]


def test_a_cycle_is_found() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _path({"a": {"b"}, "b": {"a"}}, ["a", "b"]) == "a -> b -> a"


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycle(package: str) -> None:
    graph = _graph()
    cycles = [c for c in _cycles(graph) if any(m.split(".")[0] == package for m in c)]
    assert not cycles, "import cycles:\n" + "\n".join(_path(graph, c) for c in cycles)


# ------------------------------------------------------------------ the layers

LAYERS: tuple[tuple[str, ...], ...] = (
    ("aios", "aios.errors", "aios.config", "aios.names", "aios.events", "aios.quotas"),
    ("aios.protocol",),
    ("aios.host",),
    ("aios.traces",),
    ("aios.store",),
    ("aios.tools",),
    ("aios.llm",),
    ("aios.memory",),
    ("aios.apphost",),
    ("aios.runs",),
    ("aios.desktop",),
    ("aios.control",),
    ("aios.duplex",),
    ("aios.system",),
    ("aios.web",),
    ("aios.entry",),
)
"""The subsystems of ``aios`` from the bottom up (README "How it fits together"): each may
import only its own layer and those below it. The shared vocabulary (errors, config,
names, events, quotas) imports nothing above itself."""

SDK_MAY_IMPORT = (
    "aios.protocol",
    "aios.errors",
    "aios.names",
    "aios.tools",
    "aios.host.hostprocs",
    "aios.llm",
)
"""What an app process's SDK may build on (the generic app calls the model through
``aios.llm``, not only ``aios.llm.toolcalls``)."""

SDK_DEVELOPER_TOOLS = (
    "aios_sdk.testing",
    "aios_sdk.dev",
    "aios_sdk.scaffold",
    "aios_sdk.standalone",
)
"""The SDK's developer tools, which run on the developer's machine and never inside an app's
sandbox: ``testing`` starts a whole system, ``dev`` runs an app with reload, ``scaffold``
checks a folder as the launcher will, ``standalone`` runs tools against a local store."""


def _layer(module: str) -> int | None:
    best: tuple[int, int] | None = None  # (prefix length, layer)
    for i, names in enumerate(LAYERS):
        for name in names:
            if module == name or module.startswith(name + "."):
                if best is None or len(name) > best[0]:
                    best = (len(name), i)
    return None if best is None else best[1]


def _upward(graph: dict[str, set[str]]) -> list[str]:
    found = []
    for src, targets in sorted(graph.items()):
        if not src.startswith("aios."):
            continue
        here = _layer(src)
        for dst in sorted(targets):
            there = _layer(dst)
            if here is not None and there is not None and there > here:
                found.append(f"{src} (layer {here}) -> {dst} (layer {there})")
    return found


def test_every_module_sits_in_a_layer() -> None:
    lost = [m for m in _modules() if m.startswith("aios.") and _layer(m) is None]
    assert not lost, f"modules outside every layer (add them to LAYERS): {lost}"


def test_no_module_imports_a_layer_above_its_own() -> None:
    upward = _upward(_graph())
    assert not upward, "imports up the layers:\n" + "\n".join(upward)


def test_an_upward_import_is_caught() -> None:
    assert _upward({"aios.store.db": {"aios.runs.runs"}}) == [
        "aios.store.db (layer 4) -> aios.runs.runs (layer 9)"
    ]
    assert _upward({"aios.runs.gate": {"aios.store.db", "aios.runs.runs"}}) == []


def test_the_sdk_builds_only_on_the_declared_parts() -> None:
    graph = _graph()
    bad = []
    for src, targets in sorted(graph.items()):
        if not src.startswith("aios_sdk") or src in SDK_DEVELOPER_TOOLS:
            continue
        for dst in sorted(targets):
            if dst.startswith("aios.") and not any(
                dst == ok or dst.startswith(ok + ".") for ok in SDK_MAY_IMPORT
            ):
                bad.append(f"{src} -> {dst}")
    assert not bad, "the SDK imports beyond its contract:\n" + "\n".join(bad)


# ------------------------------------------------------------------ one home per rule


def _sources(*packages: str) -> dict[str, str]:
    return {
        str(path.relative_to(ROOT)): path.read_text(encoding="utf-8")
        for package in packages
        for path in sorted((ROOT / package).rglob("*.py"))
    }


def test_only_the_store_opens_a_database_of_the_system() -> None:
    # aios/tools/db.py opens the apps' own databases (db_query), never aios.db
    opening = [
        f
        for f, text in _sources("aios").items()
        if "sqlite3.connect(" in text.replace("``sqlite3.connect(", "")
        and not f.startswith("aios/store/")
        and f != "aios/tools/db.py"
    ]
    assert not opening, f"modules outside aios/store that open a database: {opening}"


def test_wire_header_names_live_in_names_only() -> None:
    found = [
        f
        for f, text in _sources("aios", "aios_sdk").items()
        if "X-AIOS-" in text and f != "aios/names.py"
    ]
    assert not found, f"X-AIOS- header names outside aios/names.py: {found}"


APP_START = """
import sys
from aios_sdk import AIOSAgent

class App(AIOSAgent):
    name = "probe"

    def handle(self, instruction, context, action_request=None):
        return {}

App().make_app().test_client().get("/health")
print(",".join(m for m in ("pydantic", "jsonschema", "openai") if m in sys.modules))
"""


def test_an_app_starts_without_the_protocol_models() -> None:
    """Every app imports the SDK; the pydantic models it never uses cost each app ~14 MB.

    ``aios.protocol`` re-exports its names lazily, so the SDK's ``app_secret`` import
    loads one small module, not the package's models.
    """
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", APP_START],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=True,
    )
    assert out.stdout.strip() == "", f"an app's start loaded: {out.stdout.strip()}"
