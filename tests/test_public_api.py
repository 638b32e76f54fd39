"""nfst's public names: every name in a package's ``__all__`` resolves and none is a module (a
package that exports a function and holds a module of the same name gives one or the other by
import order); the names ``nfst`` imports on first use are visible to ``dir``, to static
analysis (the API docs, IDEs) and typed, and ``import nfst`` stays light."""

import importlib
import inspect
import pkgutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

import nfst

ROOT = Path(__file__).parents[1]


def every_module() -> list[str]:
    """Every nfst module and package, by name (``nfst.tasks`` and ``nfst.fsts`` included)."""
    names = ["nfst", "nfst.tasks", "nfst.fsts"]
    for package in list(names):
        path = importlib.import_module(package).__path__
        names += [m.name for m in pkgutil.walk_packages(path, f"{package}.") if m.name not in names]
    return names


def test_every_exported_name_resolves_and_none_is_a_module():
    modules = every_module()
    for name in modules:  # every submodule imported: each is then its package's attribute
        importlib.import_module(name)
    packages = [m for m in modules if hasattr(sys.modules[m], "__path__")]
    assert {"nfst", "nfst.train", "nfst.evaluate", "nfst.tasks"} <= set(packages)
    missing, clashes = [], []
    for package in packages:
        module = sys.modules[package]
        for name in getattr(module, "__all__", []):
            if not hasattr(module, name):
                missing.append(f"{package}.{name}")
            elif isinstance(getattr(module, name), types.ModuleType):
                clashes.append(f"{package}.{name} is the module {getattr(module, name).__name__}")
    assert not missing, f"in __all__ but not there: {missing}"
    assert not clashes, "rename the module by what it holds: " + "; ".join(clashes)


def test_the_names_imported_on_first_use_are_in_dir_and_open_run_is_typed():
    assert set(nfst.__all__) <= set(dir(nfst))
    assert not {"os", "Any", "TYPE_CHECKING", "annotations"} & set(dir(nfst))  # no helpers
    signature = inspect.signature(nfst.open_run)
    assert list(signature.parameters) == ["run_dir", "kwargs"]
    assert signature.return_annotation == "Run"  # postponed: the experiment layer stays unloaded


def test_static_analysis_sees_every_public_name():
    """What the API docs (mkdocstrings) and IDEs see without running ``nfst/__init__.py``:
    every name of ``__all__``, the lazily imported ones resolved to their definitions."""
    griffe = pytest.importorskip("griffe", reason="griffe comes with the docs extra (mkdocs)")
    module = griffe.load("nfst", search_paths=[str(ROOT)])
    for name in nfst.__all__:
        assert name in module.members, name
    assert module["evaluate_all"].final_target.path == "nfst.evaluate.whole.evaluate_all"
    assert module["save_sampler"].final_target.path == "nfst.models.files.save_sampler"
    assert module["open_run"].returns.canonical_path == "nfst.experiment.Run"


def test_import_nfst_leaves_torch_and_the_layers_above_fst_unimported():
    code = (
        "import sys, nfst; dir(nfst); print(sorted(m for m in sys.modules if m == 'torch' or "
        "m.startswith(('nfst.dp', 'nfst.models', 'nfst.smc', 'nfst.evaluate', 'nfst.train', "
        "'nfst.experiment'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "[]", out.stdout
