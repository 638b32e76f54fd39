"""The data of a run (``nfst.experiment.run``): the pairs of each split it uses, their
lattices (compiled through the on-disk cache) and the ``compile`` stage's record of them."""

from __future__ import annotations

import logging
import time

from ..fst.dataset import compile_dataset
from ..fst.lattice import Lattice
from ..tasks import DataError
from .provenance import MADE_FROM, record_split

log = logging.getLogger("nfst")


class RunData:
    """The pairs and lattices of a :class:`~nfst.experiment.run.Run` (a part of it: it reads
    the run's ``task``, ``preset``, ``T``, ``data_dir``, ``cache_dir``, ``processes`` and
    ``quiet``, and keeps its lattices in ``_lattices``, the number of pairs of each split not
    compiled and why in ``_skipped``, and ``_no_test_file``)."""

    def pairs(self, split: str) -> list:
        """The pairs of ``split`` this run uses. A task without a test file here (tr: the
        shared Dakshina data has train and dev only) holds out a disjoint part of dev: the
        first ``dev_pairs`` dev pairs (half of dev when ``dev_pairs`` is None) validate, the
        rest are the test pairs, so no test pair is ever a validation pair."""
        size = {
            "train": self.preset.train_pairs,
            "dev": self.preset.dev_pairs,
            "test": self.preset.test_pairs,
        }[split]
        if split in ("dev", "test") and self._test_from_dev():
            dev, held = self.task.pairs("dev", self.data_dir), self._held_out()
            pairs, size = (dev[:held], held) if split == "dev" else (dev[held:], size)
        else:
            pairs = self.task.pairs(split, self.data_dir)
        return pairs[:size] if size is not None else pairs

    def _test_from_dev(self) -> bool:
        """Whether the test pairs come from dev: the task has dev but no test file here."""
        if self._no_test_file is None:
            try:
                self.task.pairs("test", self.data_dir)
                self._no_test_file = False
            except DataError:
                if "dev" not in self.task.splits:
                    raise
                self._no_test_file = True
                log.warning(
                    "%s has no test split here; testing on the dev pairs after the "
                    "first %d, which validate",
                    self.task.name,
                    self._held_out(),
                )
        return self._no_test_file

    def _held_out(self) -> int:
        """How many dev pairs validate when the test pairs come from dev."""
        if self.preset.dev_pairs is not None:
            return self.preset.dev_pairs
        return len(self.task.pairs("dev", self.data_dir)) // 2

    def lattices(self, split: str) -> list[Lattice]:
        if split not in self._lattices:
            data = compile_dataset(
                self.T,
                self.pairs(split),
                cache_dir=self.cache_dir,
                processes=self.processes,
                progress=not self.quiet,
            )
            data.require_lattices(f"{self.task.name}/{split}")
            if self.rank == 0 and (self.dir / MADE_FROM).exists():
                with self.run_dir.lock("records"):
                    record_split(self.dir, split, self.pairs(split))
            self._lattices[split] = data.lattices
            self._skipped[split] = (len(data.skipped), data.why_skipped())
        return self._lattices[split]

    def stage_compile(self) -> dict:
        started = time.time()
        out = {}
        for split in ("train", "dev", "test"):
            lats = self.lattices(split)
            skipped, why = self._skipped[split]
            out[split] = {
                "pairs": len(lats),
                "skipped": skipped,
                **({"skipped_why": why} if skipped else {}),
                "mean_states": sum(lat.num_states for lat in lats) / len(lats),
                "mean_arcs": sum(lat.num_arcs for lat in lats) / len(lats),
            }
        if self._test_from_dev():
            out["test"]["from"] = f"dev, after the {self._held_out()} validation pairs"
        return out | {"seconds": time.time() - started}
