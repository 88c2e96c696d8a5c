"""How our packages import each other: no cycle, data flowing one way, modules kept small.

The graph is read from the source with `ast`, not by importing it: every `import` and
`from ... import` of our own modules, at module level and inside functions alike (a cycle
through a function-level import is still a cycle, only a later one), with relative imports
resolved, and imports under `if TYPE_CHECKING:` too: they never run, but a module that needs
its importer's types to be understood is part of a cycle all the same.

An edge goes to the module named, or to the package when the name is one of its attributes
(`from sources.drone_ops import ConfigError` is an edge to `sources.drone_ops`). Importing
`a.b.c` also runs `a/__init__.py` and `a/b/__init__.py`; those implicit edges are left out,
as every import linter does, or every package that imports its own submodules would be a cycle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("sources", "pipelines", "simulator", "bench", "testkit", "orchestration")
NAMESPACE = "drone_ops_sync."
"""The installed packages are imported under this prefix (pyproject.toml); the graph names
modules by their folders, so the prefix is dropped from imported names."""
INSTALLED = ("sources", "pipelines", "simulator", "orchestration")
MAX_LINES = 400
MAX_FUNCTION_LINES = 80


@dataclass(frozen=True)
class Edge:
    """`importer` imports `imported`, at `line` of the importer's file."""

    importer: str
    imported: str
    line: int


def _module_files() -> dict[str, Path]:
    """Every module of our packages by dotted name (a package by its `__init__.py`)."""
    modules: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")) if (REPO / package).is_dir() else []:
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


MODULES = _module_files()


def _import_nodes(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement, wherever it is: module level, in functions, under
    `if TYPE_CHECKING:`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node


def _own_module(name: str) -> str | None:
    """The module of ours that `name` (a module, or an attribute of one) belongs to."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def _imported_names(module: str, path: Path, node: ast.Import | ast.ImportFrom) -> list[str]:
    """Absolute dotted names one import statement asks for."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        parts = package.split(".")
        base = ".".join(parts[: len(parts) - (node.level - 1)])
        stem = f"{base}.{node.module}" if node.module else base
    else:
        stem = node.module or ""
    # `from package import submodule` imports the submodule; `from module import name`, the module
    return [f"{stem}.{alias.name}" for alias in node.names]


def _written_names(node: ast.Import | ast.ImportFrom) -> list[str]:
    """The module names an import statement spells out, as written (`from a.b import c`: a.b)."""
    if isinstance(node, ast.ImportFrom):
        return [node.module or ""]
    return [alias.name for alias in node.names]


def _folder_name(name: str) -> str:
    """`drone_ops_sync.sources.x` as the graph names it: `sources.x`."""
    return name.removeprefix(NAMESPACE)


def _edges() -> list[Edge]:
    edges: list[Edge] = []
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in _import_nodes(tree):
            for name in _imported_names(module, path, node):
                imported = _own_module(_folder_name(name))
                if imported is not None and imported != module:
                    edges.append(Edge(module, imported, node.lineno))
    return edges


EDGES = _edges()


def _find_cycle(edges: list[Edge]) -> list[Edge] | None:
    """One import cycle as the edges that close it, or None (depth-first search)."""
    graph: dict[str, list[Edge]] = {}
    for edge in edges:
        graph.setdefault(edge.importer, []).append(edge)
    state: dict[str, str] = {}  # "open" while on the current path, "done" after
    path: list[Edge] = []

    def visit(module: str) -> list[Edge] | None:
        state[module] = "open"
        for edge in sorted(graph.get(module, []), key=lambda e: (e.imported, e.line)):
            if state.get(edge.imported) == "open":
                start = next(i for i, e in enumerate(path) if e.importer == edge.imported)
                return [*path[start:], edge] if path else [edge]
            if edge.imported not in state:
                path.append(edge)
                found = visit(edge.imported)
                if found is not None:
                    return found
                path.pop()
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state:
            found = visit(module)
            if found is not None:
                return found
    return None


def _describe(edges: list[Edge]) -> str:
    return "\n".join(
        f"  {e.importer} -> {e.imported}  ({MODULES[e.importer].relative_to(REPO)}:{e.line})"
        for e in edges
    )


def test_the_graph_is_read() -> None:
    """A guard for the tests below: the parser finds edges of every kind it must resolve."""
    pairs = {(e.importer, e.imported) for e in EDGES}
    # relative (`from .delivery_waves import ...`) and absolute (`from sources.drone_ops ...`)
    assert ("pipelines.run.sync", "pipelines.run.delivery_waves") in pairs
    assert ("pipelines.run.sync", "sources.drone_ops") in pairs
    # inside a function: the demo starts the simulator only when it runs
    assert ("pipelines.demo", "simulator.server") in pairs
    # under `if TYPE_CHECKING:`: the console names the model build's result type
    assert ("pipelines.console.output", "pipelines.publish.dbt_build") in pairs


def test_no_import_cycle() -> None:
    cycle = _find_cycle(EDGES)
    assert cycle is None, "import cycle:\n" + _describe(cycle or [])


def test_find_cycle_reports_a_cycle() -> None:
    """The detector itself finds a cycle, also one closed by a function-level import."""
    edges = [Edge("a", "b", 1), Edge("b", "c", 2), Edge("c", "a", 9), Edge("c", "d", 3)]
    cycle = _find_cycle(edges)
    assert cycle is not None
    assert [e.importer for e in cycle] == ["a", "b", "c"]
    assert _find_cycle(edges[:2] + edges[3:]) is None


def _crossings(importer: str, imported: tuple[str, ...]) -> list[Edge]:
    return [
        e
        for e in EDGES
        if e.importer.split(".")[0] == importer and e.imported.split(".")[0] in imported
    ]


def test_sources_import_nothing_of_ours() -> None:
    """Data flows simulator -> HTTP -> sources -> pipelines: the source stands alone."""
    crossings = _crossings("sources", ("pipelines", "simulator", "bench"))
    assert not crossings, "sources/ imports:\n" + _describe(crossings)


def test_simulator_imports_nothing_of_ours() -> None:
    """The simulator is the API's stand-in: it knows nothing of the code that reads it."""
    crossings = _crossings("simulator", ("sources", "pipelines", "testkit", "bench"))
    assert not crossings, "simulator/ imports:\n" + _describe(crossings)


# the demo serves a simulated workspace in-process; `drone-sync sim serve` registers its CLI
SIMULATOR_USERS = ("pipelines.demo", "pipelines.cli_parser")


def test_pipelines_use_the_simulator_only_for_demo_and_sim() -> None:
    crossings = [
        e for e in _crossings("pipelines", ("simulator",)) if e.importer not in SIMULATOR_USERS
    ]
    assert not crossings, "pipelines/ imports the simulator outside the demo:\n" + _describe(
        crossings
    )
    assert not _crossings("pipelines", ("bench",)), "pipelines/ imports the benchmark"


def test_only_tests_and_benchmarks_use_the_testkit() -> None:
    """The testkit starts throwaway servers; what the sync or the simulator runs never needs it."""
    crossings = _crossings("sources", ("testkit",)) + _crossings("pipelines", ("testkit",))
    assert not crossings, "testkit imported outside tests and benchmarks:\n" + _describe(crossings)


def _line_counts(package: str) -> dict[str, int]:
    return {
        str(path.relative_to(REPO)): len(path.read_text(encoding="utf-8").splitlines())
        for module, path in MODULES.items()
        if module.split(".")[0] == package
    }


@pytest.mark.parametrize("package", PACKAGES)
def test_modules_are_small(package: str) -> None:
    """A module over ~400 lines does more than one job: split it by responsibility."""
    large = {path: n for path, n in _line_counts(package).items() if n > MAX_LINES}
    assert not large, f"over {MAX_LINES} lines: {large}"


@pytest.mark.parametrize("package", PACKAGES)
def test_functions_are_small(package: str) -> None:
    """A function over ~80 lines is several steps in one: name each step."""
    long: dict[str, int] = {}
    for module, path in MODULES.items():
        if module.split(".")[0] != package:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(REPO)}:{node.lineno} {node.name}"] = length
    assert not long, f"over {MAX_FUNCTION_LINES} lines: {long}"


def test_the_dagster_code_location_sits_on_top() -> None:
    """`orchestration/` (the Dagster code location) builds on `pipelines/` and the source's
    facade; nothing of ours imports it (tests and benchmarks, which measure it, do), and it
    never starts the simulator or the testkit's servers."""
    inward = [
        e
        for package in ("sources", "pipelines", "simulator", "testkit")
        for e in _crossings(package, ("orchestration",))
    ]
    assert not inward, "orchestration/ imported by:\n" + _describe(inward)
    outward = _crossings("orchestration", ("simulator", "testkit", "bench"))
    assert not outward, "orchestration/ imports:\n" + _describe(outward)
    assert ("orchestration.raw_assets", "pipelines.session") in {
        (e.importer, e.imported) for e in EDGES
    }


FACES = ("sources.drone_ops", "sources.drone_ops.internal")
"""The source's public face (its `__init__`, docs/plain-source.md) and what only drone-sync's
own code may use beside it (`internal.py`, no compatibility promise)."""


def _face_imports() -> Iterator[tuple[Path, ast.ImportFrom, str]]:
    """Every `from <the source> import ...` in `pipelines/`, `bench/` and `orchestration/`."""
    for module, path in MODULES.items():
        if module.split(".")[0] not in ("pipelines", "bench", "orchestration"):
            continue
        for node in _import_nodes(ast.parse(path.read_text(encoding="utf-8"))):
            for name in _written_names(node):
                if _folder_name(name).startswith("sources.drone_ops"):
                    assert isinstance(node, ast.ImportFrom), f"{path}:{node.lineno}"
                    yield path, node, _folder_name(name)


def test_callers_use_the_source_through_its_facade() -> None:
    """`pipelines/`, `bench/` and `orchestration/` import the source from its public face or
    its internal module only: the wings behind them are free to move."""
    reaching_in = [
        f"  {path.relative_to(REPO)}:{node.lineno} imports {name}"
        for path, node, name in _face_imports()
        if name not in FACES
    ]
    assert not reaching_in, "past the facade:\n" + "\n".join(reaching_in)


def _exported(face: str) -> list[str]:
    """The `__all__` of one of the source's faces, read from its file."""
    path = REPO / (
        face.replace(".", "/") + (".py" if face.endswith("internal") else "/__init__.py")
    )
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "__all__":
            return list(ast.literal_eval(node.value))
    raise AssertionError(f"{path} has no __all__")


def test_the_public_face_is_what_the_plain_source_page_documents() -> None:
    """The source's `__all__` is a promise to plain-source users: it lists exactly the names
    docs/plain-source.md documents under "The public face"."""
    page = (REPO / "docs" / "plain-source.md").read_text(encoding="utf-8")
    section = page.split("## The public face", 1)[1].split("\n## ", 1)[0]
    documented = {
        name.strip("`")
        for line in section.splitlines()
        if line.startswith("| `")
        for name in line.split("|")[1].replace(",", " ").split()
    }
    assert documented == set(_exported(FACES[0]))


def test_every_internal_name_has_a_caller() -> None:
    """`internal.py` holds only what drone-sync's own code imports, and nothing of the public
    face: a name no caller imports any more is deleted, not kept as plumbing."""
    imported = {
        alias.name for _, node, name in _face_imports() if name == FACES[1] for alias in node.names
    }
    internal = set(_exported(FACES[1]))
    assert internal - imported == set(), "imported by nobody"
    assert internal & set(_exported(FACES[0])) == set(), "public and internal"


def test_the_http_layer_imports_nothing_above_it() -> None:
    """`http/` takes checked values: it may import the source's constants, errors and the file
    lock (a leaf: the host budget's), nothing else."""
    allowed = {
        "sources.drone_ops.settings",
        "sources.drone_ops.exceptions",
        "sources.drone_ops.file_lock",
    }
    upward = [
        e
        for e in EDGES
        if e.importer.startswith("sources.drone_ops.http")
        and not e.imported.startswith("sources.drone_ops.http")
        and e.imported not in allowed
    ]
    assert not upward, "http/ imports:\n" + _describe(upward)


def test_installed_packages_are_imported_under_the_namespace() -> None:
    """`sources`, `pipelines`, `simulator` and `orchestration` are installed as subpackages of
    `drone_ops_sync` (a user's own `sources/` must not shadow them, nor they it): an absolute
    import by the bare folder name would work from the repository root and fail in a wheel."""
    bare = []
    for path in MODULES.values():
        for node in _import_nodes(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                continue
            names = _written_names(node)
            bare += [
                f"  {path.relative_to(REPO)}:{node.lineno} imports {name}"
                for name in names
                if name.split(".")[0] in INSTALLED
            ]
    assert not bare, "imported without drone_ops_sync.:\n" + "\n".join(bare)


def test_the_run_lock_is_taken_at_one_site() -> None:
    """A workspace's turn has one owner (`pipelines/session.py`): no other module of the
    package takes the run lock, so no driver can lock, repair or record differently."""
    callers = set()
    for path in sorted(REPO.glob("*/**/*.py")):
        relative = path.relative_to(REPO)
        if relative.parts[0] not in ("sources", "pipelines", "orchestration", "simulator"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if name == "warehouse_lock":
                    callers.add(str(relative))
    assert callers == {"pipelines/session.py"}, callers


def test_a_table_status_changes_only_through_the_report() -> None:
    """A run's report has one writer of each table's outcome: `TableResult`'s own methods
    (`sources/drone_ops/report.py`, which set the error with the status); nothing else assigns
    another object's `status` or `loaded`, so a status cannot be written by one layer and
    rewritten by another."""
    outside = [
        f"  {path.relative_to(REPO)}:{node.lineno}"
        for module, path in MODULES.items()
        if module.split(".")[0] in ("sources", "pipelines", "orchestration")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Attribute)
        and target.attr in ("status", "loaded")
        and ast.unparse(target.value) != "self"
    ]
    assert not outside, "a status written outside report.py:\n" + "\n".join(outside)
