"""The installed package: every subpackage of nfst/ is listed in pyproject.toml (an unlisted one
works in an editable install but is missing from a wheel), and the repository's tasks/ and fsts/
install as nfst.tasks and nfst.fsts, never as top-level `tasks` and `fsts`."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).parents[1]


def test_every_package_is_installed_under_nfst():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    on_disk = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "nfst").rglob("__init__.py")}
    assert set(config["packages"]) == on_disk | {"nfst.fsts", "nfst.tasks"}
    assert config["package-dir"] == {"nfst.fsts": "fsts", "nfst.tasks": "tasks"}
    assert all(name.startswith("nfst") for name in config["packages"])
