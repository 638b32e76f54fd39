"""``nfst run TASK --preset P``: the whole pipeline for one task, into one run directory.

Stages, each skipped when its result is already in the run directory:

1. ``compile``  – lattices of the train/dev/test pairs (through the on-disk cache);
2. ``ngram``    – fit the mark n-gram scorer by exact maximum likelihood (``ngram.pt``): the
   proposal that teaches the LSTM scorer, and an exact reference beside it;
   ``scorer``   – train the LSTM scorer p̃_θ (003 §4), then freeze it (``scorer.pt``); with
   ``--option scorer.kind=ngram`` the n-gram itself is the scorer (a WFST: exact log Z);
3. ``sampler-NAME`` – train each proposal sampler against the frozen scorer
   (``samplers/NAME.pt``, its training curve in ``stages/sampler-NAME.json``);
4. ``evaluate`` – partial KL, deduplicated ESS and expected length on test; the scorer's
   test log Ẑ (a lower bound, by importance sampling from the n-gram's posterior and every
   sampler, with Pareto k̂), hence lower bounds on the exclusive KL; the n-gram's exact test
   log-likelihood; where the task knows how its pairs were generated, the share of samples
   that agree with it; with a WFST scorer, exact log Z and exclusive and inclusive KL
   (``stages/evaluate.json``);
5. ``smc``      – particle smoothing with the reference sampler: offset KL against M
   (``stages/smc.json``);
6. ``report``   – ``results.json`` and ``report/report.md`` with plots.

Settings are recorded and checked by ``nfst.experiment.rundir``, so results never mix;
training stages checkpoint (``checkpoints/``) and resume after an interruption;
``results.json`` is built from the stage files (``nfst.experiment.results``).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from pathlib import Path
from typing import Optional

import torch

from ..errors import NfstError
from ..fst.dataset import compile_dataset
from ..fst.lattice import Lattice
from ..models.files import save_sampler, save_scorer
from ..models.ngram import NgramScorer
from ..models.samplers import Sampler, Vocabulary, make_sampler
from ..models.scorer import LSTMScorer, Scorer
from ..runtime import storage
from ..tasks import DataError, Task, get_task, resolve_data_dir
from ..train.ngram import fit_ngram
from ..train.sampler import train_sampler
from ..train.scorer import train_scorer
from .config import RunConfig, apply_overrides, check_run, json_default
from .evaluation import evaluate_run
from .presets import preset
from .results import build_results
from .rundir import RunDir, recorded_where, sampler_key

log = logging.getLogger("nfst")


def _seed_words(seed: int) -> str:
    return f" (training seed {seed})" if seed else ""


class Run:
    """One run directory and its stages."""

    def __init__(self, config: RunConfig, run_dir: Optional[str | Path] = None, *,
                 data_dir=None, cache_dir=None, device: str = "cpu", processes: int = 2,
                 jobs: int = 1, quiet: bool = False):
        self.config = config
        self.dir = Path(run_dir) if run_dir else config.default_dir()
        self.data_dir, self.cache_dir, self.quiet = data_dir, cache_dir, quiet
        self.device, self.processes, self.jobs = torch.device(device), processes, jobs
        self.task: Task = get_task(config.task, **config.task_settings)
        self.preset = apply_overrides(preset(config.preset), config.overrides)
        check_run(config, self.preset)
        # Under torchrun every process runs every stage, sharing its work; rank 0 writes.
        self.run_dir = RunDir(self.dir, self.settings(), self.where())
        self.rank = self.run_dir.rank
        self.T = self.task.mfst(data_dir)
        self.vocabulary = Vocabulary.of(self.T)  # saved with every sampler
        self._lattices: dict[str, list[Lattice]] = {}
        self._skipped: dict[str, int] = {}
        self._pairs_found: dict[str, bool] = {}

    @classmethod
    def open(cls, run_dir: str | Path, **kwargs) -> "Run":
        """The run recorded in ``run_dir/config.json``, with its own settings, reading its data
        where it last did (``where.json``) unless ``data_dir`` or ``cache_dir`` is given."""
        return cls(RunConfig.recorded(run_dir), run_dir, **(recorded_where(run_dir) | kwargs))

    # -- bookkeeping -------------------------------------------------------------------------
    def settings(self) -> dict:
        """Everything that determines the results (not where files live or the device)."""
        return json.loads(json.dumps({
            "run": self.config, "task_settings": self.task.settings, "preset": self.preset},
            default=json_default))

    def where(self) -> dict:
        """Where the run reads its data and caches its lattices, as absolute paths (None: no
        data directory, no cache), recorded for the commands that continue it."""
        data_dir = resolve_data_dir(self.data_dir)
        return {"data_dir": str(data_dir.resolve()) if data_dir else None,
                "cache_dir": str(Path(self.cache_dir).resolve()) if self.cache_dir else None}

    def done(self, name: str) -> Optional[dict]:
        """The result of stage ``name`` if it has finished, else None."""
        return self.run_dir.done(name)

    def say(self, text: str) -> None:
        if not self.quiet and self.rank == 0:
            print(f"[{self.config.task}] {text}", flush=True)

    # -- stages -------------------------------------------------------------------------------
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

    def ngram(self) -> NgramScorer:
        """The mark n-gram scorer fitted by exact maximum likelihood (``nfst.train.ngram``)."""
        path = self.dir / "ngram.pt"
        cfg = self.preset.scorer.ngram
        if not path.exists():
            started = time.time()
            result = fit_ngram(self.lattices("train"), cfg, device=self.device,
                               quiet=self.quiet)
            self.run_dir.claim()
            if self.rank == 0:
                save_scorer(result.scorer, path)
            self.run_dir.finish("ngram", {"seconds": time.time() - started, "order": cfg.order,
                                   "history": result.history})
        state = storage.load(path)["state"]  # files of every version hold it
        scorer = NgramScorer(self.vocabulary.size, cfg.order, histories=state.get("histories"))
        scorer.load_state_dict(state)
        return scorer.to(self.device).freeze()

    def scorer(self) -> Scorer:
        """p̃_θ: the LSTM scorer, trained on first use, or the n-gram (``scorer.kind``)."""
        path = self.dir / "scorer.pt"
        cfg = self.preset.scorer
        if cfg.kind == "ngram":
            return self.ngram()
        if not path.exists():
            ngram = None if cfg.proposal == "bootstrap" else self.ngram()
            self.run_dir.claim()  # before its first checkpoint
            started = time.time()
            result = train_scorer(self.lattices("train"), cfg, vocabulary=self.vocabulary,
                                  seed=self.config.seed, device=self.device, ngram=ngram,
                                  checkpoint=self.dir / "checkpoints" / "scorer.ckpt",
                                  quiet=self.quiet)
            if self.rank == 0:
                save_scorer(result.scorer, path)
            tail = result.history[-max(1, len(result.history) // 10):]
            self.run_dir.finish("scorer", {
                "seconds": time.time() - started, "proposal": cfg.proposal,
                "final_iwae": result.history[-1]["iwae"],
                "train_iwae": sum(h["iwae"] for h in tail) / len(tail),
                "curve": {"step": [h["step"] for h in result.history],
                          "iwae": [h["iwae"] for h in result.history]}})
        scorer = LSTMScorer(self.vocabulary.size, cfg.hidden, cfg.layers, cfg.dropout)
        scorer.load_state_dict(storage.load(path)["state"])
        return scorer.to(self.device).freeze()

    def new_sampler(self, name: str) -> Sampler:
        return make_sampler(name, self.vocabulary, self.preset.sampler.sampler)

    def training_seed(self, seed: int = 0) -> int:
        """The seed that initialises and trains a sampler's ``seed``-th training run (``--seeds``):
        the run's seed plus ``seed``, so that training run 0 is the run without ``--seeds``."""
        return self.config.seed + seed

    def untrained_sampler(self, name: str, seed: int = 0) -> Sampler:
        """The sampler ``name`` as its ``seed``-th training run starts (its seeded
        initialisation)."""
        torch.manual_seed(self.training_seed(seed))
        return self.new_sampler(name).to(self.device).eval()

    def teacher_of(self, name: str) -> str:
        """The teacher whose paths train ``name`` (SamplerTrainConfig.teacher), or ""."""
        teacher = self.preset.sampler.teacher
        return teacher if teacher != name else ""

    def is_trained(self, name: str, seed: int = 0) -> bool:
        return self.done(f"sampler-{sampler_key(name, seed)}") is not None

    def sampler(self, name: str, seed: int = 0) -> Sampler:
        """The trained sampler ``name`` (its ``seed``-th training run), loaded; an error if it
        is not trained (:meth:`train_sampler` trains it)."""
        key = sampler_key(name, seed)
        path = self.dir / "samplers" / f"{key}.pt"
        if not self.is_trained(name, seed) or not path.exists():
            raise NfstError(f"{self.dir}: the {name} sampler{_seed_words(seed)} is not trained",
                            f"train it with `nfst train-sampler --sampler {name} --run-dir "
                            f"{self.dir}`" + (f" --seeds {seed + 1}" if seed else ""))
        sampler = self.new_sampler(name)
        sampler.load_state_dict(storage.load(path)["state"])
        return sampler.to(self.device).eval()

    def train_sampler(self, name: str, seed: int = 0, callback=None) -> Sampler:
        """The sampler ``name`` trained from training seed ``seed`` (after its teacher, which
        its training needs), or loaded if it is; ``callback``: ``train_sampler``'s, called
        after every step."""
        key = sampler_key(name, seed)
        if not self.is_trained(name, seed):
            scorer = self.scorer()
            teacher_name = self.teacher_of(name)
            teacher = self.train_sampler(teacher_name, seed) if teacher_name else None
            config = dataclasses.replace(self.preset.sampler, teacher=teacher_name)
            started = time.time()
            untrained = self.untrained_sampler(name, seed).train()
            train, dev = self.lattices("train"), self.lattices("dev")
            self.run_dir.claim()  # before its first checkpoint
            result = train_sampler(untrained, scorer, train, dev, config,
                                   seed=self.training_seed(seed), device=self.device,
                                   quiet=self.quiet, teacher=teacher, callback=callback,
                                   checkpoint=self.dir / "checkpoints" / f"{key}.ckpt")
            if self.rank == 0:
                save_sampler(result.sampler, self.dir / "samplers" / f"{key}.pt")
            self.run_dir.finish(f"sampler-{key}", {
                "seconds": time.time() - started, "best_step": result.best_step,
                "best_dev_partial_kl": result.best_dev_partial_kl, "steps": result.steps,
                "stopped_by": result.stopped_by, "history": result.history})
        return self.sampler(name, seed)

    def trainings(self) -> list[tuple[str, int]]:
        """Every (sampler, training seed) the run compares."""
        return [(name, s) for s in range(self.config.seeds) for name in self.config.samplers]

    def require_trained(self) -> None:
        """An error naming every sampler (and seed) of the run not yet trained, with the
        commands that train them: stages after the sampler stage never train one themselves."""
        missing = [(n, s) for n, s in self.trainings() if not self.is_trained(n, s)]
        if not missing:
            return
        names = list(dict.fromkeys(n for n, _ in missing))
        seeds = f" --seeds {self.config.seeds}" if self.config.seeds > 1 else ""
        one = f"`nfst train-sampler --run-dir {self.dir} --sampler NAME{seeds}`"
        raise NfstError(f"{self.dir}: not trained yet: "
                        f"{', '.join(f'{n}{_seed_words(s)}' for n, s in missing)}",
                        f"train each with {one} (NAME: {', '.join(names)}), or all with the "
                        f"rest of the run: `nfst run --run-dir {self.dir} --samplers "
                        f"{','.join(self.config.samplers)}{seeds}`")

    def evaluation(self) -> dict:
        """Partial KL, ESS and expected length of every sampler on the test pairs."""
        done = self.done("evaluate")
        if done is not None and list(done["samplers"]) == list(self.config.samplers) and \
                done.get("seeds", [0]) == list(range(self.config.seeds)):
            return done
        self.require_trained()
        self.run_dir.forget("smc")  # its proposal is the best of these
        self.say("evaluating samplers, trained and untrained")
        started = time.time()
        result = evaluate_run(self)
        return self.run_dir.finish("evaluate", result | {"seconds": time.time() - started})

    def smoothing(self) -> dict:
        """Offset KL against M of the SMC methods, with the reference sampler as proposal."""
        best = self.evaluation()["reference"]  # chosen on validation pairs, not on test
        done = self.done("smc")  # forgotten by an evaluation of other samplers
        if done is not None:
            return done
        from ..evaluate.smc import SMCEvalConfig, evaluate_smc
        self.say(f"particle smoothing with the {best} sampler (the lowest validation "
                 "partial KL)")
        started, sizes = time.time(), self.preset.evaluate
        result = evaluate_smc(
            self.sampler(best), self.scorer(), self.lattices("test")[:sizes.smc_pairs],
            particles=sizes.smc_particles, seed=self.config.seed, device=self.device,
            train_lattices=self.lattices("train")[:256], quiet=self.quiet,
            config=SMCEvalConfig(lookahead_steps=sizes.smc_lookahead_steps))
        return self.run_dir.finish("smc", result | {"sampler": best,
                                                    "seconds": time.time() - started})

    def train_samplers(self) -> None:
        """The sampler stage: every (sampler, training seed) not yet trained, each seed's
        teacher first (the others learn from it), then the rest, longest first
        (:func:`~.jobs.longest_first`), ``jobs`` at a time in worker processes
        (``nfst.experiment.jobs``; one after another when ``jobs`` is 1 or under torchrun).
        Its wall time is recorded (``stages/samplers.json``) when it trains any."""
        from .jobs import longest_first, train_in_workers
        teacher = self.preset.sampler.teacher
        todo = [(n, s) for n, s in self.trainings() if not self.is_trained(n, s)]
        for name, seed in self.trainings():
            self.say(f"sampler {name}{_seed_words(seed)}: "
                     f"{'training' if (name, seed) in todo else 'reusing'}")
        if not todo:
            return
        started = time.time()
        for seed in sorted({s for _, s in todo} if teacher else ()):
            self.train_sampler(teacher, seed)  # in this process: every worker needs it
        rest = longest_first(self, [(n, s) for n, s in todo if n != teacher])
        if self.jobs > 1 and len(rest) > 1 and self.run_dir.world == 1:
            self.say(f"training {len(rest)} samplers in {min(self.jobs, len(rest))} processes")
            train_in_workers(self, rest, self.jobs)
        for name, seed in rest:  # trained above if in workers: then this loads them
            self.train_sampler(name, seed)
        self.run_dir.finish("samplers", {"seconds": time.time() - started, "jobs": self.jobs,
                                         "trained": [sampler_key(n, s) for n, s in todo]})

    def results(self) -> dict:
        """``results.json`` (``nfst.experiment.results``); the evaluate stage must be done."""
        return build_results(self.run_dir)

    def run(self) -> Path:
        """Run (or finish) every stage; returns the report's path. Running it again after an
        interruption resumes (inside ``graceful_interrupts()``, as the CLI runs it, SIGINT and
        SIGTERM stop a training stage after a checkpoint)."""
        from .report import write_report
        if self.done("compile") is None:
            self.say("compiling lattices")
            self.run_dir.finish("compile", self.stage_compile())
        self.say(f"n-gram: {'reusing' if self.done('ngram') else 'fitting'}")
        self.ngram()
        if self.preset.scorer.kind == "lstm":
            self.say(f"scorer: {'reusing' if (self.dir / 'scorer.pt').exists() else 'training'}")
        self.scorer()
        self.train_samplers()
        self.smoothing()  # evaluates first
        if self.rank != 0:
            return self.dir / "report"
        storage.write_atomically(self.dir / "results.json",
                                 json.dumps(self.results(), indent=1).encode())
        return write_report([self.dir], self.dir / "report")
