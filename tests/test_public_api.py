"""nfst's public names: every name in a package's ``__all__`` resolves and none is a module (a
package that exports a function and holds a module of the same name gives one or the other by
import order)."""

import importlib
import pkgutil
import sys
import types

import nfst


def every_module() -> list[str]:
    """Every nfst module and package, by name (``nfst.tasks`` and ``nfst.fsts`` included)."""
    names = ["nfst", "nfst.tasks", "nfst.fsts"]
    for package in list(names):
        path = importlib.import_module(package).__path__
        names += [m.name for m in pkgutil.walk_packages(path, f"{package}.")
                  if m.name not in names]
    return names


def test_every_exported_name_resolves_and_none_is_a_module():
    modules = every_module()
    for name in modules:  # every submodule imported: each is then its package's attribute
        importlib.import_module(name)
    packages = [m for m in modules if hasattr(sys.modules[m], "__path__")]
    assert {"nfst", "nfst.train", "nfst.evaluate", "nfst.tasks"} <= set(packages)
    missing, clashes = [], []
    for package in packages:
        for name in getattr(sys.modules[package], "__all__", []):
            value = getattr(sys.modules[package], name, None)
            if value is None:
                missing.append(f"{package}.{name}")
            elif isinstance(value, types.ModuleType):
                clashes.append(f"{package}.{name} is the module {value.__name__}")
    assert not missing, f"in __all__ but not there: {missing}"
    assert not clashes, "rename the module by what it holds: " + "; ".join(clashes)
