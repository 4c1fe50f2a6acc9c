"""The import graph of the project's apps: layers, no cycle, no arrow up.

Data flows GitHub -> ingest -> corpus -> labeling; imports run the other way round the layers
below, from the interfaces (api, web) down to the shared kernel. A domain app may import only
apps of lower layers; `ingest` sits above `labeling` because it feeds studies that follow a
source, and nothing below it may know that GitHub exists.
"""

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Lower index = lower layer. Apps in one layer may not import each other.
LAYERS: list[set[str]] = [
    {"common"},
    {"taxonomy", "accounts"},
    {"corpus"},
    {"labeling"},
    {"ingest", "machines"},
    # The dataset export carries the machine annotators' labels and runs apart from people's.
    {"exports"},
    {"api", "web"},
    {"config"},
]
LAYER_OF = {app: index for index, apps in enumerate(LAYERS) for app in apps}
APPS = set(LAYER_OF)
# The one arrow up: each app's module of Celery tasks binds its tasks to the project's app, which
# config makes. Imported there, Celery loads in the processes that send or run tasks only, not
# at every start (config/__init__.py).
TASKS_APP = "config.celery"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every project module a file imports, at the top or inside a function."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in found if name.split(".")[0] in APPS}


def _project_files() -> list[Path]:
    return [
        path
        for app in APPS
        for path in (ROOT / app).rglob("*.py")
        if "migrations" not in path.parts
    ]


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(path): path for path in _project_files()}
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        for imported in _imports(path):
            # "from a.b import c" names a module or an attribute; keep what is a module.
            while imported and imported not in modules:
                imported = imported.rpartition(".")[0]
            if imported and imported != name:
                graph[name].add(imported)
    return graph


def test_no_app_imports_an_app_of_its_own_or_a_higher_layer():
    arrows_up = sorted(
        f"{source} -> {target}"
        for source, targets in _graph().items()
        for target in targets
        if (source_app := source.split(".")[0]) != (target_app := target.split(".")[0])
        and LAYER_OF[target_app] >= LAYER_OF[source_app]
        and not (source.endswith(".tasks") and target == TASKS_APP)
    )
    assert arrows_up == []


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return [*stack[stack.index(target) :], target]
            if target not in state and (found := visit(target)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_modules_import_each_other_without_a_cycle():
    assert _cycle(_graph()) is None


def test_only_the_github_client_imports_pygithub():
    importers = sorted(
        _module_name(path)
        for path in _project_files()
        if any(
            isinstance(node, ast.Import | ast.ImportFrom)
            and any(
                (name or "").split(".")[0] == "github"
                for name in (
                    [node.module]
                    if isinstance(node, ast.ImportFrom)
                    else [a.name for a in node.names]
                )
            )
            for node in ast.walk(ast.parse(path.read_text()))
        )
    )
    assert importers == ["ingest.github"]


def test_only_the_model_endpoint_client_imports_openai():
    importers = sorted(
        _module_name(path)
        for path in _project_files()
        if any(name.split(".")[0] == "openai" for name in _all_imports(path))
    )
    assert importers == ["machines.llm"]


@pytest.mark.parametrize(
    "app", ["common", "taxonomy", "corpus", "labeling", "ingest", "exports", "machines"]
)
def test_domain_apps_never_import_drf(app):
    offenders = sorted(
        _module_name(path)
        for path in (ROOT / app).rglob("*.py")
        if any(name.startswith("rest_framework") for name in _all_imports(path))
    )
    assert offenders == []


def _all_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names
