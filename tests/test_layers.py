"""Imports never run upward: a module imports only from its own layer or lower ones
(docs/design.md §1), at the top of a module or inside a function alike."""

import ast
from pathlib import Path

ROOT = Path(__file__).parents[1]
LAYERS = [("errors", "runtime"), ("fst",), ("dp",), ("models",), ("smc",), ("evaluate",),
          ("train",), ("fsts", "tasks"), ("experiment",), ("cli", "bench")]
RANK = {name: i for i, names in enumerate(LAYERS) for name in names}
FOLDERS = {"nfst": ROOT / "nfst", "nfst.tasks": ROOT / "tasks", "nfst.fsts": ROOT / "fsts"}


def module_name(package: str, path: Path, folder: Path) -> str:
    parts = list(path.relative_to(folder).with_suffix("").parts)
    return ".".join([package] + [p for p in parts if p != "__init__"])


def imported(node: ast.AST, module: str, is_package: bool) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        if node.level == 0:
            return [node.module]
        base = module.split(".")[:len(module.split(".")) - node.level + is_package]
        target = ".".join(base + ([node.module] if node.module else []))
        # `from . import x` imports submodules x of the package
        return [f"{target}.{a.name}" for a in node.names] if not node.module else [target]
    return []


def layer(module: str):
    parts = module.split(".")
    return RANK.get(parts[1]) if parts[0] == "nfst" and len(parts) > 1 else None


def test_imports_never_run_upward():
    upward = []
    for package, folder in FOLDERS.items():
        for path in folder.rglob("*.py"):
            module = module_name(package, path, folder)
            own = layer(module)
            for node in ast.walk(ast.parse(path.read_text())):
                for target in imported(node, module, path.name == "__init__.py"):
                    other = layer(target or "")
                    if own is not None and other is not None and other > own:
                        upward.append(f"{module} imports {target}")
    assert not upward, "\n".join(upward)


def test_every_package_has_a_layer():
    packages = {p.name for p in (ROOT / "nfst").iterdir()
                if p.is_dir() and (p / "__init__.py").exists()}
    packages |= {p.stem for p in (ROOT / "nfst").glob("*.py") if p.stem != "__init__"}
    assert packages <= set(RANK) | {"fsts", "tasks"}, packages - set(RANK)
