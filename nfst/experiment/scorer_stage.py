"""The scorer of a run (``nfst.experiment.run``): the mark n-gram fitted by exact maximum
likelihood (``ngram.pt``) and the LSTM scorer p̃_θ it teaches (``scorer.pt``, 003 §4), each
made once, under the run's lock, or copied from the run a run is made ``--from``, and loaded
frozen."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from ..fst.lattice import Lattice
from ..models.files import load_state, save_scorer
from ..models.ngram import NgramScorer
from ..models.scorer import LSTMScorer, Scorer
from ..runtime import storage
from ..runtime.distributed import stream_seed
from ..train.ngram import fit_ngram
from ..train.scorer import train_scorer
from .branch import adopt


class RunScorer:
    """The scorer of a :class:`~nfst.experiment.run.Run` (a part of it: it reads the run's
    ``config``, ``preset``, ``dir``, ``run_dir``, ``rank``, ``device``, ``vocabulary``,
    ``quiet`` and its training lattices)."""

    def _once(self, name: str, make: Callable[[list[Lattice]], None]) -> None:
        """Make the model file ``NAME.pt`` (``ngram``, ``scorer``) with ``make``, given the
        training lattices, unless it is there: once they have loaded and the directory is
        claimed, under the run's lock ``name``, so that of several processes sharing the run
        one makes it and the others, having waited, load it. A run made ``--from`` another
        copies it from there instead (``nfst.experiment.branch.adopt``), never trains it."""
        path = self.dir / f"{name}.pt"
        if path.exists():
            return
        train = self.lattices("train")
        self.run_dir.claim()  # before the first checkpoint
        with self.run_dir.lock(name):
            # made by another process while this one waited? (torchrun's ranks decided above)
            if self.run_dir.world == 1 and path.exists():
                return
            if self.config.from_run:
                adopt(self.run_dir, Path(self.config.from_run), name)
            else:
                make(train)

    def ngram(self) -> NgramScorer:
        """The mark n-gram scorer fitted by exact maximum likelihood (``nfst.train.ngram``)."""
        self._once("ngram", self._fit_ngram)
        path = self.dir / "ngram.pt"
        state = storage.load(path)["state"]  # files of every version hold it
        scorer = NgramScorer(
            self.vocabulary.size, self.preset.scorer.ngram.order, histories=state.get("histories")
        )
        load_state(scorer, state, path)
        return scorer.to(self.device).freeze()

    def _fit_ngram(self, train: list[Lattice]) -> None:
        cfg = self.preset.scorer.ngram
        started = time.time()
        result = fit_ngram(train, cfg, device=self.device, quiet=self.quiet)
        if self.rank == 0:
            save_scorer(result.scorer, self.dir / "ngram.pt")
        self.run_dir.finish(
            "ngram",
            {"seconds": time.time() - started, "order": cfg.order, "history": result.history},
        )

    def scorer(self) -> Scorer:
        """p̃_θ: the LSTM scorer, trained on first use, or the n-gram (``scorer.kind``)."""
        cfg = self.preset.scorer
        if cfg.kind == "ngram":
            return self.ngram()
        self._once("scorer", self._train_scorer)
        scorer = LSTMScorer(self.vocabulary.size, cfg.hidden, cfg.layers, cfg.dropout)
        path = self.dir / "scorer.pt"
        load_state(scorer, storage.load(path)["state"], path)
        return scorer.to(self.device).freeze()

    def _train_scorer(self, train: list[Lattice]) -> None:
        cfg = self.preset.scorer
        ngram = None if cfg.proposal == "bootstrap" else self.ngram()
        result = train_scorer(
            train,
            cfg,
            vocabulary=self.vocabulary,
            seed=stream_seed(self.config.seed, "scorer"),
            device=self.device,
            ngram=ngram,
            checkpoint=self.dir / "checkpoints" / "scorer.ckpt",
            quiet=self.quiet,
        )
        if self.rank == 0:
            save_scorer(result.scorer, self.dir / "scorer.pt")
        tail = result.history[-max(1, len(result.history) // 10) :]
        self.run_dir.finish(
            "scorer",
            {
                "seconds": result.seconds,
                "proposal": cfg.proposal,
                "final_iwae": result.history[-1]["iwae"],
                "train_iwae": sum(h["iwae"] for h in tail) / len(tail),
                "curve": {
                    "step": [h["step"] for h in result.history],
                    "iwae": [h["iwae"] for h in result.history],
                },
            },
        )
