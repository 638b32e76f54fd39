"""The task registry: :func:`register_task`, :func:`get_task`, and task files loaded on demand.

The built-in tasks register themselves when ``nfst.tasks`` is imported. Files named in the
``NFST_TASKS`` environment variable (``os.pathsep``-separated) and files passed to
:func:`load_task_file` are imported on demand, so ``get_task("reverse")`` finds a task defined
in a user's own file.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
from pathlib import Path

from nfst.errors import NfstError, TaskError
from nfst.runtime.settings import nearest

from .base import Task

TASKS_ENV = "NFST_TASKS"

_REGISTRY: dict[str, type[Task]] = {}
_LOADED_FILES: dict[Path, list[str]] = {}


def register_task(cls: type[Task]) -> type[Task]:
    """Class decorator: make ``cls`` available to :func:`get_task` under ``cls.name``."""
    if not (isinstance(cls, type) and issubclass(cls, Task)):
        raise TaskError(f"register_task expects a subclass of nfst.tasks.Task, got {cls!r}")
    if not cls.name:
        raise TaskError(f"{cls.__qualname__} needs a non-empty class attribute `name`")
    old = _REGISTRY.get(cls.name)
    if old is not None and _where(old) != _where(cls):  # the same class again is fine (reload)
        raise TaskError(
            f"task name {cls.name!r} is taken by {_where(old)}", "give the new task another name"
        )
    _REGISTRY[cls.name] = cls
    return cls


def _where(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def load_task_file(path: str | os.PathLike) -> list[str]:
    """Import a Python file that defines (and registers) tasks; returns their names.

    Loading the same file again is a no-op."""
    path = Path(path).expanduser().resolve()
    if path in _LOADED_FILES:
        return _LOADED_FILES[path]
    if not path.is_file():
        raise TaskError(
            f"task file {path} does not exist",
            f"check the path (and {TASKS_ENV}, if it came from there)",
        )
    # A stable, unique module name: dataclasses and pickle look classes up in sys.modules.
    module_name = f"nfst_task_{path.stem}_{hashlib.sha1(str(path).encode()).hexdigest()[:8]}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    before = set(_REGISTRY)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except NfstError:
        del sys.modules[module_name]
        raise
    except Exception as exc:
        del sys.modules[module_name]
        raise TaskError(f"task file {path} failed to import: {type(exc).__name__}: {exc}") from exc
    _LOADED_FILES[path] = names = sorted(set(_REGISTRY) - before)
    return names


def file_of_task(name: str) -> Path | None:
    """The file that defined the task ``name`` (loaded by :func:`load_task_file` or from
    ``NFST_TASKS``), None for a built-in task or one registered by other code: a run records
    it, so that later commands on the run find the task without ``NFST_TASKS``."""
    _load_tasks()
    return next((path for path, names in _LOADED_FILES.items() if name in names), None)


def _load_tasks() -> None:
    """Import the task files named in $NFST_TASKS (the built-in tasks are already loaded)."""
    for entry in os.environ.get(TASKS_ENV, "").split(os.pathsep):
        if entry.strip():
            load_task_file(entry.strip())


def task_names() -> list[str]:
    _load_tasks()
    return sorted(_REGISTRY)


def get_task(name: str, **settings) -> Task:
    """A new instance of the task called ``name``, with ``settings`` overriding its defaults."""
    _load_tasks()
    if name not in _REGISTRY:
        near = nearest(name, sorted(_REGISTRY))
        raise TaskError(
            f"no task named {name!r}; "
            + (
                f"the nearest: {', '.join(near)}"
                if near
                else f"known tasks: {', '.join(sorted(_REGISTRY))}"
            ),
            f"add your own in one Python file and list it in {TASKS_ENV}",
        )
    return _REGISTRY[name](**settings)
