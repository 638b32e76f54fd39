"""The data of a run (``nfst.experiment.run``): the pairs of each split it uses, their
lattices (compiled through the on-disk cache) and the ``compile`` stage's record of them."""

from __future__ import annotations

import logging
import time

from ..errors import NfstError
from ..fst.dataset import compile_dataset
from ..fst.lattice import Lattice
from ..tasks import DataError

log = logging.getLogger("nfst")


class RunData:
    """The pairs and lattices of a :class:`~nfst.experiment.run.Run` (a part of it: it reads
    the run's ``task``, ``preset``, ``T``, ``data_dir``, ``cache_dir``, ``processes`` and
    ``quiet``, and keeps its lattices in ``_lattices``, ``_skipped`` and ``_pairs_found``)."""

    def pairs(self, split: str) -> list:
        """The pairs of ``split`` this run uses. A task without a test file here (tr: the
        shared Dakshina data has train and dev only) holds out a disjoint part of dev: the
        first ``dev_pairs`` dev pairs (half of dev when ``dev_pairs`` is None) validate, the
        rest are the test pairs, so no test pair is ever a validation pair."""
        size = {"train": self.preset.train_pairs, "dev": self.preset.dev_pairs,
                "test": self.preset.test_pairs}[split]
        try:
            pairs = self.task.pairs(split, self.data_dir)
        except DataError:
            if split != "test" or "dev" not in self.task.splits:
                raise
            pairs = self.task.pairs("dev", self.data_dir)[self._held_out():]
            log.warning("%s has no test split here; testing on the dev pairs after the first "
                        "%d, which validate", self.task.name, self._held_out())
        if split == "dev" and self._test_from_dev():
            size = self._held_out()
        return pairs[:size] if size is not None else pairs

    def _test_from_dev(self) -> bool:
        if "test" not in self._pairs_found:
            try:
                self.task.pairs("test", self.data_dir)
                self._pairs_found["test"] = True
            except DataError:
                self._pairs_found["test"] = False
        return not self._pairs_found["test"] and "dev" in self.task.splits

    def _held_out(self) -> int:
        """How many dev pairs validate when the test pairs come from dev."""
        if self.preset.dev_pairs is not None:
            return self.preset.dev_pairs
        return len(self.task.pairs("dev", self.data_dir)) // 2

    def lattices(self, split: str) -> list[Lattice]:
        if split not in self._lattices:
            data = compile_dataset(self.T, self.pairs(split), cache_dir=self.cache_dir,
                                   processes=self.processes, progress=not self.quiet)
            data.require_lattices(f"{self.task.name}/{split}")
            self._lattices[split] = data.lattices
            self._skipped[split] = len(data.skipped)
        return self._lattices[split]

    def stage_compile(self) -> dict:
        started = time.time()
        out = {}
        for split in ("train", "dev", "test"):
            lats = self.lattices(split)
            out[split] = {"pairs": len(lats), "skipped": self._skipped[split],
                          "mean_states": sum(lat.num_states for lat in lats) / len(lats),
                          "mean_arcs": sum(lat.num_arcs for lat in lats) / len(lats)}
        if self._test_from_dev():
            out["test"]["from"] = f"dev, after the {self._held_out()} validation pairs"
        return out | {"seconds": time.time() - started}
