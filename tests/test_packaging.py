"""The installed package: every subpackage of nfst/ is listed in pyproject.toml (an unlisted one
works in an editable install but is missing from a wheel), and the repository's tasks/ and fsts/
install as nfst.tasks and nfst.fsts, never as top-level `tasks` and `fsts`."""

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).parents[1]


def test_every_package_is_installed_under_nfst():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    on_disk = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "nfst").rglob("__init__.py")}
    assert set(config["packages"]) == on_disk | {"nfst.fsts", "nfst.tasks"}
    assert config["package-dir"] == {"nfst.fsts": "fsts", "nfst.tasks": "tasks"}
    assert all(name.startswith("nfst") for name in config["packages"])


NEWER_STDLIB = {"tomllib": (3, 11)}
"""Standard-library modules the code may import, and the Python version that added them."""


def test_requires_python_is_what_the_code_needs():
    """Every installed module parses with the grammar of the oldest Python that pyproject.toml
    allows, and imports no standard module added after it (tomllib: 3.11)."""
    spec = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    major, minor = map(int, spec.removeprefix(">=").split("."))
    too_new = []
    for folder in ("nfst", "tasks", "fsts"):
        for path in (ROOT / folder).rglob("*.py"):
            tree = ast.parse(path.read_text(), feature_version=(major, minor))
            for node in ast.walk(tree):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                    [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
                too_new += [f"{path.relative_to(ROOT)} imports {name}" for name in names
                            if NEWER_STDLIB.get(name, (0, 0)) > (major, minor)]
    assert not too_new, f"requires-python {spec}, but " + "; ".join(too_new)
