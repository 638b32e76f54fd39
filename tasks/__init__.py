"""Tasks: where the (x, y) pairs of a dataset come from, and the MFST T that aligns them.

A task is one class in one Python file::

    from nfst.fsts import deletion_insertion
    from nfst.tasks import Task, register_task

    @register_task
    class Reverse(Task):
        name = "reverse"
        splits = ("train", "test")

        def build_mfst(self, data_dir):
            return deletion_insertion("ab", "ab", name=self.name)

        def load(self, split, data_dir):
            return [(("a", "b"), ("b", "a"))]

List the file in ``NFST_TASKS`` (or pass it to :func:`load_task_file`) and ``get_task("reverse")``
finds it; docs/tasks.md has a longer example. The built-in tasks, one module each:

- ``cipher``: synthetic, 5 substitution ciphers then a noisy copy (the default task)
- ``tr``: Dakshina Urdu reverse transliteration (needs the data directory)
- ``scan``: the SCAN length split, generated from the grammar

This package is the repository's top-level ``tasks/`` folder, installed as ``nfst.tasks``.
"""

from nfst.errors import DataError, TaskError

from . import cipher, scan, tr  # noqa: E402,F401  (built-in tasks register themselves)
from .base import (
    DATA_ENV,
    MalformedLine,
    Pair,
    PaperStats,
    Task,
    TaskSettings,
    data_file,
    read_records,
    resolve_data_dir,
)
from .registry import TASKS_ENV, file_of_task, get_task, load_task_file, register_task, task_names

__all__ = [
    "DATA_ENV",
    "DataError",
    "MalformedLine",
    "Pair",
    "PaperStats",
    "TASKS_ENV",
    "Task",
    "TaskError",
    "TaskSettings",
    "data_file",
    "file_of_task",
    "get_task",
    "load_task_file",
    "read_records",
    "register_task",
    "resolve_data_dir",
    "task_names",
]
