"""The package's imports read one way: no import cycle between modules, and no import from a lower
layer to a higher one, in the layer order the README's "Layers" table states.

Every module's imports are read from its source (ast), those inside functions included: a
function-level import still ties the two modules together. Imports under `if TYPE_CHECKING:`
never run, so they count for the layers but not for cycles.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "metalport"
# Import cycles allowed for now: each entry must still be a cycle (the test fails once it is gone,
# so the entry goes with it). None are left.
KNOWN_CYCLES: set[frozenset[str]] = set()


class Import(NamedTuple):
    """`source` imports `target` (both module names) at `where` (path:line); `runtime` is False
    under `if TYPE_CHECKING:`."""

    source: str
    target: str
    where: str
    runtime: bool


def modules(root: Path, package: str = PACKAGE) -> dict[str, Path]:
    """Module name -> source file of every module of `package` under `root` (`__init__` is the package)."""
    out = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """ids of the nodes under an `if TYPE_CHECKING:` (or `typing.TYPE_CHECKING`) body."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            inside |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return inside


def imports(root: Path, package: str = PACKAGE) -> list[Import]:
    """Every import of a module of `package` by a module of `package`, at any depth of the source.

    `from a.b import c` names module `a.b.c` when that is a module, else `a.b` (whose `__init__`
    holds `c`); a relative import is resolved against the importing module's package.
    """
    known = modules(root, package)

    def owner(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    out = []
    for source, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        typing_only = _type_checking_nodes(tree)
        base = source if path.name == "__init__.py" else source.rpartition(".")[0]
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [owner(alias.name) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    parents = base.split(".")[: len(base.split(".")) - node.level + 1]
                    module = ".".join(parents + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                targets = [f"{module}.{alias.name}" if f"{module}.{alias.name}" in known else owner(module)
                           for alias in node.names]
            else:
                continue
            where = f"{path.relative_to(root)}:{node.lineno}"
            out += [Import(source, t, where, id(node) not in typing_only)
                    for t in dict.fromkeys(targets) if t is not None and t != source]
    return out


def cycles(edges: list[Import]) -> list[list[str]]:
    """The import cycles among `edges`' runtime imports: each strongly connected group of two or more
    modules, sorted (Tarjan's algorithm, iterative)."""
    graph: dict[str, set[str]] = {}
    for edge in edges:
        if edge.runtime:
            graph.setdefault(edge.source, set()).add(edge.target)
            graph.setdefault(edge.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        found.append(sorted(group))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return sorted(found)


def unit(module: str) -> str:
    """The layer unit of a module: its top-level package or module under metalport (`__init__` for
    the package itself)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def readme_layers(text: str) -> list[tuple[str, set[str]]]:
    """The README's "Layers" table, top layer first: (layer name, its units)."""
    section = text.split("\n### Layers\n", 1)
    assert len(section) == 2, "README.md has no '### Layers' section"
    rows = []
    for line in section[1].splitlines():
        if rows and not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == 2 and not set(cells[0]) <= {"-", " "} and cells[0] != "Layer":
            rows.append((cells[0], set(re.findall(r"`([\w.]+)`", cells[1]))))
    assert rows, "README.md's Layers section has no table"
    return rows


def layer_violations(edges: list[Import], layers: list[tuple[str, set[str]]]) -> list[str]:
    """One line for each import from a lower layer to a higher one (`layers` top first); an import
    within one layer is allowed."""
    rank = {u: len(layers) - i for i, (_, units) in enumerate(layers) for u in units}
    names = {u: name for name, units in layers for u in units}
    return [f"{e.where}: {e.source} ({names[unit(e.source)]}) imports {e.target} ({names[unit(e.target)]}, a higher layer)"
            for e in edges if rank[unit(e.target)] > rank[unit(e.source)]]


@pytest.fixture(scope="module")
def package_imports() -> list[Import]:
    return imports(ROOT)


def test_every_module_sits_in_one_readme_layer() -> None:
    layers = readme_layers((ROOT / "README.md").read_text(encoding="utf-8"))
    placed = [u for _, units in layers for u in units]
    assert len(placed) == len(set(placed)), f"a unit is in two layers: {sorted(u for u in placed if placed.count(u) > 1)}"
    units = {unit(m) for m in modules(ROOT)}
    assert units - set(placed) == set(), "place these in the README's Layers table"
    assert set(placed) - units == set(), "the README's Layers table names units the package does not have"


def test_imports_only_go_down_the_readme_layers(package_imports: list[Import]) -> None:
    layers = readme_layers((ROOT / "README.md").read_text(encoding="utf-8"))
    assert layer_violations(package_imports, layers) == []


def test_no_import_cycles(package_imports: list[Import]) -> None:
    found = {frozenset(group) for group in cycles(package_imports)}
    assert found - KNOWN_CYCLES == set(), "import cycles"
    assert KNOWN_CYCLES - found == set(), "no longer a cycle: remove it from KNOWN_CYCLES"


def test_the_layers_the_issue_names() -> None:
    """Nothing below graph/ imports agent/; store/ and graph/ sit above the run record; config sits
    below agent/; checks/ and port/ sit below graph/, agent/, commands/ and the CLI."""
    layers = readme_layers((ROOT / "README.md").read_text(encoding="utf-8"))
    rank = {u: len(layers) - i for i, (_, units) in enumerate(layers) for u in units}
    below_graph = {u for u, r in rank.items() if r < rank["graph"]} - {"agent"}
    assert all(rank[u] < rank["agent"] for u in below_graph)
    assert rank["store"] > rank["run_record"] and rank["graph"] > rank["run_record"]
    assert rank["agent"] > rank["config"] and rank["sweep"] > rank["budget_limits"]
    for low in ("checks", "port"):
        assert all(rank[low] < rank[high] for high in ("graph", "agent", "commands", "cli"))


def test_the_port_imports_neither_checks_nor_backlog(package_imports: list[Import]) -> None:
    """The port is deterministic planning and editing: it runs no conformance and reads no backlog
    (both sit above it and read the port); what it shares with the backlog (an op's status and
    family) is the port's own `op_facts`."""
    layers = readme_layers((ROOT / "README.md").read_text(encoding="utf-8"))
    rank = {u: len(layers) - i for i, (_, units) in enumerate(layers) for u in units}
    assert rank["port"] < rank["checks"] and rank["port"] < rank["backlog"]
    upward = [f"{e.where}: {e.target}" for e in package_imports
              if unit(e.source) == "port" and unit(e.target) in ("checks", "backlog")]
    assert upward == []


def test_code_outside_the_port_uses_its_face(package_imports: list[Import]) -> None:
    """Outside `port/`, code imports `metalport.port` (its face), never a module behind it; and every
    name of the face resolves (a name whose module moved fails here, not at a user's first run)."""
    import metalport.port as face

    behind = [f"{e.where}: {e.target}" for e in package_imports
              if unit(e.source) != "port" and e.target.startswith("metalport.port.")]
    assert behind == []
    for name in face.__all__:
        assert getattr(face, name) is not None, name


def test_port_folders_are_stages_or_models() -> None:
    """`port/` and `checks/` hold no loose modules but their face and driver: every other module sits
    in a folder named for a stage or a model (Note [one port model])."""
    stages = {"port": {"tree", "plan", "write", "spec", "translate"}, "checks": {"contract", "cases", "judge", "host"}}
    loose = {"port": {"__init__.py"}, "checks": {"__init__.py", "conformance.py", "report.py", "reuse_check.py"}}
    for package, folders in stages.items():
        root = ROOT / PACKAGE / package
        found = {p.name for p in root.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
        assert found == folders, package
        assert {p.name for p in root.glob("*.py")} == loose[package], package


# The checker itself, on a synthetic package: it must catch what someone might add.

def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = tmp_path / PACKAGE / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


SYNTHETIC_LAYERS = [("graph", {"graph"}), ("store", {"store"}), ("record", {"run_record"}),
                    ("foundation", {"__init__"})]


def test_checker_finds_function_level_relative_and_typing_imports(tmp_path: Path) -> None:
    root = _package(tmp_path, {
        "__init__.py": "",
        "run_record.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from metalport.graph import nodes\n",
        "graph/__init__.py": "",
        "graph/nodes.py": "from . import records\nfrom ..store import pg\n",
        "graph/records.py": "def get():\n    from metalport.store import open_store\n",
        "store/__init__.py": "from metalport.store.pg import open_store\n",
        "store/pg.py": "import metalport.run_record\n",
    })
    found = {(e.source, e.target, e.runtime) for e in imports(root)}
    assert found == {
        ("metalport.run_record", "metalport.graph.nodes", False),
        ("metalport.graph.nodes", "metalport.graph.records", True),
        ("metalport.graph.nodes", "metalport.store.pg", True),
        ("metalport.graph.records", "metalport.store", True),
        ("metalport.store", "metalport.store.pg", True),
        ("metalport.store.pg", "metalport.run_record", True),
    }
    assert cycles(imports(root)) == []  # the type-only import makes no cycle
    assert layer_violations(imports(root), SYNTHETIC_LAYERS) == [
        f"{Path(PACKAGE, 'run_record.py')}:3: metalport.run_record (record) imports metalport.graph.nodes "
        "(graph, a higher layer)"]


def test_checker_fails_on_an_added_cycle_and_an_upward_import(tmp_path: Path) -> None:
    """The circle this issue removed: store/ importing the record from graph/, which opens the store."""
    root = _package(tmp_path, {
        "__init__.py": "",
        "run_record.py": "",
        "graph/__init__.py": "",
        "graph/records.py": "def shared_store():\n    from metalport.store import open_store\n",
        "store/__init__.py": "from metalport.store.pg import open_store\n",
        "store/pg.py": "from metalport.graph.records import RunRecord\n",
    })
    edges = imports(root)
    assert cycles(edges) == [["metalport.graph.records", "metalport.store", "metalport.store.pg"]]
    assert [v.split(": ", 1)[1] for v in layer_violations(edges, SYNTHETIC_LAYERS)] == [
        "metalport.store.pg (store) imports metalport.graph.records (graph, a higher layer)"]


def test_readme_table_parsing() -> None:
    text = ("intro\n\n### Layers\n\nImports go down.\n\n| Layer | Modules |\n|---|---|\n"
            "| graph | `graph` |\n| base | `errors`, `run_record` |\n\nafter | not | a row\n")
    assert readme_layers(text) == [("graph", {"graph"}), ("base", {"errors", "run_record"})]
