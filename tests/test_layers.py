"""The import graph of nfst's modules (nfst/, and tasks/ and fsts/ as nfst.tasks and
nfst.fsts), imports at the top of a module and inside a function alike: imports never run
upward (docs/design.md §1), and no module imports itself through others."""

import ast
import subprocess
import sys
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).parents[1]
LAYERS = [
    ("errors", "runtime"),
    ("fst",),
    ("dp",),
    ("models",),
    ("smc",),
    ("evaluate",),
    ("train",),
    ("fsts", "tasks"),
    ("experiment",),
    ("cli", "cli_arguments", "cli_run_arguments", "cli_config", "bench"),
]
RANK = {name: i for i, names in enumerate(LAYERS) for name in names}
FOLDERS = {"nfst": ROOT / "nfst", "nfst.tasks": ROOT / "tasks", "nfst.fsts": ROOT / "fsts"}


def module_name(package: str, path: Path, folder: Path) -> str:
    parts = list(path.relative_to(folder).with_suffix("").parts)
    return ".".join([package] + [p for p in parts if p != "__init__"])


def modules() -> dict[str, Path]:
    """Every nfst module by name, with its file."""
    return {
        module_name(package, path, folder): path
        for package, folder in FOLDERS.items()
        for path in folder.rglob("*.py")
    }


def imported(node: ast.AST, module: str, is_package: bool, known) -> list[str]:
    """The modules an import statement reads from: ``from p import x`` reads p.x where x is a
    module (``from . import cipher``), else p. (Parent packages are not counted: every import
    of p.x runs p's ``__init__`` first, so counting them would make each package that exports
    its modules' names a cycle with them.)"""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level == 0:
        base = node.module
    else:
        parts = module.split(".")[: len(module.split(".")) - node.level + is_package]
        base = ".".join(parts + ([node.module] if node.module else []))
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]


def import_graph() -> nx.DiGraph:
    """module -> module it imports, for every import statement anywhere in nfst's modules."""
    known = modules()
    graph = nx.DiGraph()
    graph.add_nodes_from(known)
    for module, path in known.items():
        for node in ast.walk(ast.parse(path.read_text())):
            for target in imported(node, module, path.name == "__init__.py", known):
                if target != module:
                    graph.add_edge(module, target)
    return graph


def layer(module: str):
    parts = module.split(".")
    return RANK.get(parts[1]) if parts[0] == "nfst" and len(parts) > 1 else None


def test_imports_never_run_upward():
    upward = [
        f"{module} imports {target}"
        for module, target in import_graph().edges
        if layer(module) is not None and layer(target) is not None and layer(target) > layer(module)
    ]
    assert not upward, "\n".join(upward)


def test_no_import_cycles():
    graph = import_graph().subgraph(modules())  # nfst's own modules only
    tangles = [sorted(group) for group in nx.strongly_connected_components(graph) if len(group) > 1]
    report = []
    for group in tangles:  # one cycle of each group of modules that import each other
        cycle = [a for a, _ in nx.find_cycle(graph.subgraph(group))]
        report.append(" -> ".join(cycle + cycle[:1]) + f"  (group: {', '.join(group)})")
    assert not report, "import cycles:\n" + "\n".join(report)


def test_the_graph_sees_imports_inside_functions():
    graph = import_graph()
    assert graph.has_edge("nfst.experiment.commands", "nfst.fst.dataset")  # inside a function
    assert graph.has_edge("nfst.tasks", "nfst.tasks.cipher")  # `from . import cipher`


def test_every_package_has_a_layer():
    packages = {
        p.name for p in (ROOT / "nfst").iterdir() if p.is_dir() and (p / "__init__.py").exists()
    }
    packages |= {p.stem for p in (ROOT / "nfst").glob("*.py") if p.stem != "__init__"}
    assert packages <= set(RANK) | {"fsts", "tasks"}, packages - set(RANK)


def test_tasks_leave_the_evaluation_layer_unimported():
    """A task names its generating structure (``nfst.fst.structure``) without importing the
    evaluation layer, nor SMC beneath it."""
    code = (
        "import sys, nfst.tasks; "
        "print(sorted(m for m in sys.modules if m.startswith(('nfst.evaluate', 'nfst.smc'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "[]", out.stdout


# Counted in the formatter's lines (ruff, pyproject.toml). A module or function over them does
# more than one job: split it by concept, not by packing lines.
MAX_MODULE_LINES, MAX_FUNCTION_LINES = 300, 80
SIZED = [ROOT / "nfst", ROOT / "tasks", ROOT / "fsts", ROOT / "tools"]


def too_long(path: Path, root: Path = ROOT) -> list[str]:
    """The module if over MAX_MODULE_LINES lines, and each function (decorators included)
    over MAX_FUNCTION_LINES."""
    text = path.read_text(encoding="utf-8")
    name = path.relative_to(root)
    found = [f"{name}: {n} lines" for n in [len(text.splitlines())] if n > MAX_MODULE_LINES]
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            if node.end_lineno - first + 1 > MAX_FUNCTION_LINES:
                found.append(f"{name}:{first} {node.name}: {node.end_lineno - first + 1} lines")
    return found


def test_no_module_nor_function_over_its_size_limit():
    found = [f for folder in SIZED for path in sorted(folder.rglob("*.py")) for f in too_long(path)]
    assert not found, "split these by concept (docs/design.md):\n" + "\n".join(found)


def test_the_size_check_sees_long_functions_and_modules(tmp_path):
    path = tmp_path / "probe.py"
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES - 1))
    path.write_text(f"@staticmethod\ndef f():\n{body}\n" + "\n" * MAX_MODULE_LINES)
    lines = len(path.read_text().splitlines())
    assert too_long(path, tmp_path) == [
        f"probe.py: {lines} lines",
        f"probe.py:1 f: {MAX_FUNCTION_LINES + 1} lines",
    ]
    path.write_text(f"def f():\n{body}\n")
    assert too_long(path, tmp_path) == []  # MAX_FUNCTION_LINES lines: within the limit
