"""What a run was made from (``made_from.json``): its topology T, its task file and settings,
and the pairs of each split, as fingerprints recorded when the run is claimed.

A run's models fit the T they were trained on (its marks are their vocabulary) and its figures
the pairs they were computed on. Edit the task file, or the data, and a later command on the
run would train or evaluate the old models on the new T or the new pairs: a size mismatch at
best, and where the sizes agree (a mark renamed, a pair changed) figures that silently mix.
So every command that opens a recorded run checks first, before it changes anything
(:func:`check_made_from`): a changed topology or changed pairs is an error that says what
changed and to start a new run directory. A task file whose text changed while its topology
and pairs did not (a comment, a docstring) is only noted.

The record (``made_from.json``)::

    {"topology": {"sha256": ..., "states": S, "arcs": A, "marks": [...], "inputs": [...],
                  "outputs": [...]},
     "task_file": {"path": ..., "sha256": ...} or null (a built-in task),
     "task_settings": {...},
     "pairs": {"train": {"count": n, "sha256": ...}, "dev": ..., "test": ...}}
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Callable, Optional, Sequence

from ..errors import DataError, RunConfigError
from ..fst.mfst import MarkedFST
from ..runtime import storage

MADE_FROM = "made_from.json"
SPLITS = ("train", "dev", "test")
log = logging.getLogger("nfst")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def topology_record(T: MarkedFST) -> dict:
    """T's fingerprint (states, finals, arcs with their symbols and marks) and its sizes and
    alphabets, to say what changed."""
    return {
        "sha256": T.fingerprint(),
        "states": T.num_states,
        "arcs": len(T.arcs),
        "marks": list(T.mark_alphabet),
        "inputs": list(T.input_alphabet),
        "outputs": list(T.output_alphabet),
    }


def pairs_record(pairs: Sequence) -> dict:
    """The number of ``pairs`` ((x, y) symbol tuples, in order) and a digest of them."""
    text = json.dumps([[list(x), list(y)] for x, y in pairs], ensure_ascii=False)
    return {"count": len(pairs), "sha256": _sha256(text.encode())}


def task_file_record(path: Optional[Path]) -> Optional[dict]:
    """The task file's path and a digest of its text; None for a built-in task."""
    if path is None:
        return None
    return {"path": str(path), "sha256": _sha256(Path(path).read_bytes())}


def made_from(
    T: MarkedFST,
    task_file: Optional[Path],
    task_settings: dict,
    pairs: Callable[[str], Sequence],
    splits: Sequence[str],
) -> dict:
    """The record of a run of topology ``T`` defined in ``task_file`` with ``task_settings``,
    whose split ``s`` (of ``splits``: those of :data:`SPLITS` the task has) holds
    ``pairs(s)``."""
    readable = {}
    for split in SPLITS:
        if split in splits:
            try:
                readable[split] = pairs_record(pairs(split))
            except DataError:  # not there yet (a scorer trained before dev's file came)
                continue
    return {
        "topology": topology_record(T),
        "task_file": task_file_record(task_file),
        "task_settings": task_settings,
        "pairs": readable,
    }


def record_split(run_dir: str | Path, split: str, pairs: Sequence) -> None:
    """Add ``split``'s pairs to the record of the run in ``run_dir``, where it has one that
    lacks them (their file was not there when the run was claimed)."""
    old = recorded(run_dir)
    if old is not None and split not in old["pairs"]:
        old["pairs"][split] = pairs_record(pairs)
        storage.write_atomically(Path(run_dir) / MADE_FROM, json.dumps(old, indent=1).encode())


def recorded(run_dir: str | Path) -> Optional[dict]:
    """The record in ``run_dir``, None for a run made before nfst recorded it."""
    file = Path(run_dir) / MADE_FROM
    return json.loads(file.read_text()) if file.exists() else None


def _topology_change(old: dict, new: dict) -> str:
    """What changed between two topology records, in words."""
    changes = []
    for key, name in (
        ("marks", "marks"),
        ("inputs", "input symbols"),
        ("outputs", "output symbols"),
    ):
        added = sorted(set(new[key]) - set(old[key]))
        removed = sorted(set(old[key]) - set(new[key]))
        if added:
            changes.append(f"{name} added: {' '.join(added)}")
        if removed:
            changes.append(f"{name} removed: {' '.join(removed)}")
    for key in ("states", "arcs"):
        if old[key] != new[key]:
            changes.append(f"{old[key]} {key} then, {new[key]} now")
    return "; ".join(changes) or "the same sizes and alphabets, other arcs"


def check_made_from(run_dir: str | Path, now: Callable[[], dict], *, pairs: bool = True) -> None:
    """An error, before anything changes, if the run recorded in ``run_dir`` was made from
    another topology than ``now()['topology']`` or (``pairs``) from other pairs than
    ``now()['pairs']``; a note where only the task file's text changed. ``now``: the record of
    what the command would use (:func:`made_from`), computed only where ``run_dir`` holds a
    record."""
    old = recorded(run_dir)
    if old is None:
        return
    new = now()
    where = "the task file " + old["task_file"]["path"] if old["task_file"] else "its task"
    hint = (
        "a changed task or data needs a new run: give another --run-dir (or restore what "
        f"{run_dir} was made from)"
    )
    if old["topology"]["sha256"] != new["topology"]["sha256"]:
        raise RunConfigError(
            f"{run_dir} was made from another topology than {where} builds now "
            f"({_topology_change(old['topology'], new['topology'])}): its models do not fit it",
            hint,
        )
    if pairs:
        changed = [
            f"{split} ({old['pairs'][split]['count']} pairs then, "
            f"{new['pairs'].get(split, {}).get('count', 'no')} now)"
            for split in old["pairs"]
            if old["pairs"][split] != new["pairs"].get(split)
        ]
        if changed:
            raise RunConfigError(
                f"{run_dir} was made from other data: its pairs of "
                f"{', '.join(changed)} changed since",
                hint,
            )
    if (
        old["task_file"]
        and new["task_file"]
        and old["task_file"]["sha256"] != new["task_file"]["sha256"]
    ):
        log.warning(
            "%s: the task file %s changed since the run was made; its topology and pairs did not",
            run_dir,
            new["task_file"]["path"],
        )
