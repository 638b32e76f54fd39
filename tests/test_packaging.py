"""The installed package: every subpackage of nfst/ is listed in pyproject.toml (an unlisted one
works in an editable install but is missing from a wheel), and the repository's tasks/ and fsts/
install as nfst.tasks and nfst.fsts, never as top-level `tasks` and `fsts`; the citation file
agrees with pyproject.toml."""

import ast
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


def test_every_package_is_installed_under_nfst():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    on_disk = {
        ".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "nfst").rglob("__init__.py")
    }
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
                names = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module]
                    if isinstance(node, ast.ImportFrom) and node.module
                    else []
                )
                too_new += [
                    f"{path.relative_to(ROOT)} imports {name}"
                    for name in names
                    if NEWER_STDLIB.get(name, (0, 0)) > (major, minor)
                ]
    assert not too_new, f"requires-python {spec}, but " + "; ".join(too_new)


def test_citation_file_has_what_cff_requires_and_matches_pyproject():
    """CITATION.cff holds the keys that the Citation File Format 1.2.0 requires, every author
    and reference author has a name, and the version and licence are pyproject.toml's."""
    yaml = pytest.importorskip("yaml", reason="PyYAML comes with the docs extra (mkdocs)")
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    missing = {"cff-version", "message", "title", "authors"} - set(cff)
    assert not missing, f"CITATION.cff lacks {sorted(missing)}"
    assert cff["cff-version"] == "1.2.0"
    assert isinstance(cff["message"], str) and cff["message"].strip()
    for reference in [cff, *cff.get("references", [])]:
        assert reference["authors"], f"{reference['title']}: no authors"
        for author in reference["authors"]:
            assert "name" in author or "family-names" in author, f"{reference['title']}: {author}"
    assert str(cff["version"]) == project["version"]
    assert cff["license"] == project["license"]


def test_metadata_claims_no_release_and_no_address_that_do_not_exist():
    """No release has been tagged (the changelog says so), so CITATION.cff gives no release
    date; the project has no public address, so no metadata names one (an earlier version
    pointed at a GitHub organisation that does not exist)."""
    yaml = pytest.importorskip("yaml", reason="PyYAML comes with the docs extra (mkdocs)")
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    if "no tagged releases" in (ROOT / "CHANGELOG.md").read_text():
        assert "date-released" not in cff, "CITATION.cff dates a release that was never tagged"
    addresses = [cff.get(key) for key in ("repository-code", "repository", "url")]
    addresses += list(project.get("urls", {}).values())
    assert not [a for a in addresses if a], f"addresses that do not exist: {addresses}"
    for path in ("README.md", "CITATION.cff", "pyproject.toml", *map(str, ROOT.glob("docs/*.md"))):
        text = (ROOT / path).read_text(encoding="utf-8")
        assert not re.search(r"github\.com/nfst\b", text), f"{path} names a repository"
