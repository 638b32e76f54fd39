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
``results.json`` is built from the stage files (``nfst.experiment.results``). The pairs and
lattices (stage 1) are ``nfst.experiment.data_stage``'s, the scorer (stage 2)
``nfst.experiment.scorer_stage``'s, the samplers (stage 3) ``nfst.experiment.sampler_stage``'s,
the evaluation (stage 4) ``nfst.experiment.evaluation``'s.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Optional

import torch

from ..errors import RunConfigError
from ..fst.lattice import Lattice
from ..models.samplers import Vocabulary
from ..runtime import storage
from ..runtime.distributed import stream_seed
from ..tasks import Task, file_of_task, get_task, load_task_file, resolve_data_dir, task_names
from ..train.checkpoint import training_words
from .config import RunConfig, check_run, json_default
from .data_stage import RunData
from .evaluation import evaluate_run
from .provenance import check_made_from, made_from, recorded
from .results import build_results
from .rundir import RunDir, recorded_where
from .sampler_stage import RunSamplers
from .scorer_stage import RunScorer


class Run(RunData, RunScorer, RunSamplers):
    """One run directory and its stages: its pairs and lattices (:class:`RunData`), its
    scorer (:class:`RunScorer`), its samplers (:class:`RunSamplers`), its evaluation and SMC
    stages here."""

    def __init__(
        self,
        config: RunConfig,
        run_dir: Optional[str | Path] = None,
        *,
        data_dir=None,
        cache_dir=None,
        device: str = "cpu",
        processes: int = 2,
        jobs: int = 1,
        quiet: bool = False,
        task_file: Optional[str] = None,
    ):
        self.config = config
        self.dir = Path(run_dir) if run_dir else config.default_dir()
        self.data_dir, self.cache_dir, self.quiet = data_dir, cache_dir, quiet
        self.device, self.processes, self.jobs = torch.device(device), processes, jobs
        if task_file and config.task not in task_names():  # NFST_TASKS's files come first
            if not Path(task_file).is_file():
                raise RunConfigError(
                    f"{self.dir} records its task {config.task} as defined in {task_file}, "
                    "which is not there now",
                    "if the file moved, name its new place: "
                    "NFST_TASKS=NEW/PATH.py nfst ... (the run then records it there)",
                )
            load_task_file(task_file)
        self.task: Task = get_task(config.task, **config.task_settings)
        self.preset = config.resolved_preset()
        check_run(config, self.preset)
        self.T = self.task.mfst(data_dir)
        self.vocabulary = Vocabulary.of(self.T)  # saved with every sampler
        self._lattices: dict[str, list[Lattice]] = {}
        self._skipped: dict[str, tuple[int, str]] = {}  # pairs not compiled, why
        self._no_test_file: Optional[bool] = None  # known once asked (RunData)
        self._made_from: Optional[dict] = None
        # Before anything is written: the run's models must fit this T and these pairs, and a
        # run made --from another, before it records its own, those of the run it takes from.
        base = self.config.from_run if recorded(self.dir) is None else None
        check_made_from(base or self.dir, self.made_from)
        # Under torchrun every process runs every stage, sharing its work; rank 0 writes.
        self.run_dir = RunDir(self.dir, self.settings(), self.where(), self.made_from)
        self.rank = self.run_dir.rank

    @classmethod
    def open(cls, run_dir: str | Path, **kwargs) -> "Run":
        """The run recorded in ``run_dir/config.json``, with its own settings, reading its data
        where it last did (``where.json``: its task file too) unless ``data_dir`` or
        ``cache_dir`` is given; ``kwargs``: the constructor's (``device``, ``quiet``: no
        progress bars, ...). Its stages are methods: :meth:`scorer`, :meth:`sampler`,
        :meth:`lattices`, :meth:`evaluation`, ... (``nfst.open_run`` is this)."""
        return cls(RunConfig.recorded(run_dir), run_dir, **(recorded_where(run_dir) | kwargs))

    # -- bookkeeping -------------------------------------------------------------------------
    def settings(self) -> dict:
        """Everything that determines the results (not where files live or the device)."""
        return json.loads(
            json.dumps(
                {"run": self.config, "task_settings": self.task.settings, "preset": self.preset},
                default=json_default,
            )
        )

    def where(self) -> dict:
        """Where the run reads its data, caches its lattices and finds its task (the file
        that defined it, ``nfst.tasks.file_of_task``), as absolute paths (None: no data
        directory, no cache, a built-in task), recorded for the commands that continue it."""
        data_dir, task_file = resolve_data_dir(self.data_dir), file_of_task(self.config.task)
        return {
            "data_dir": str(data_dir.resolve()) if data_dir else None,
            "cache_dir": str(Path(self.cache_dir).resolve()) if self.cache_dir else None,
            "task_file": str(task_file) if task_file else None,
        }

    def made_from(self) -> dict:
        """What the run is made from: its topology, task file and settings, and the pairs of
        each split (``nfst.experiment.provenance``), recorded when the run is claimed."""
        if self._made_from is None:
            self._made_from = made_from(
                self.T,
                file_of_task(self.config.task),
                self.settings()["task_settings"],
                self.pairs,
                self.task.splits,
            )
        return self._made_from

    def done(self, name: str) -> Optional[dict]:
        """The result of stage ``name`` if it has finished, else None."""
        return self.run_dir.done(name)

    def say(self, text: str) -> None:
        if not self.quiet and self.rank == 0:
            print(f"[{self.config.task}] {text}", flush=True)

    # -- stages -------------------------------------------------------------------------------
    def check_models(self) -> None:
        """An error if a model file of the run does not fit its vocabulary (a run recorded
        before nfst recorded what it is made from, whose topology changed since), before a
        command forgets what the models made (``--continue``)."""
        if (self.dir / "ngram.pt").exists():
            self.ngram()
        if self.preset.scorer.kind == "lstm" and (self.dir / "scorer.pt").exists():
            self.scorer()
        for name in self.config.samplers:
            for seed in range(self.config.seeds):
                if self.is_trained(name, seed):
                    self.sampler(name, seed)

    def evaluation(self) -> dict:
        """Partial KL, ESS and expected length of every sampler on the test pairs."""
        done = self.done("evaluate")
        if (
            done is not None
            and list(done["samplers"]) == list(self.config.samplers)
            and done.get("seeds", [0]) == list(range(self.config.seeds))
        ):
            return done
        self.require_trained()
        self.run_dir.forget("smc")  # its proposal is the best of these
        self.say("evaluating samplers, trained and untrained")
        started = time.time()
        result = evaluate_run(self).to_json()
        return self.run_dir.finish("evaluate", result | {"seconds": time.time() - started})

    def smoothing(self) -> dict:
        """Offset KL against M of the SMC methods, with the reference sampler as proposal."""
        best = self.evaluation()["reference"]  # chosen on validation pairs, not on test
        done = self.done("smc")  # forgotten by an evaluation of other samplers
        if done is not None:
            return done
        from ..evaluate.smc import SMCEvalConfig, evaluate_smc

        self.say(f"particle smoothing with the {best} sampler (the lowest validation partial KL)")
        started, sizes = time.time(), self.preset.evaluate
        result = evaluate_smc(
            self.sampler(best),
            self.scorer(),
            self.lattices("test")[: sizes.smc_pairs],
            particles=sizes.smc_particles,
            seed=stream_seed(self.config.seed, "smc"),
            device=self.device,
            train_lattices=self.lattices("train")[:256],
            quiet=self.quiet,
            config=SMCEvalConfig(lookahead_steps=sizes.smc_lookahead_steps),
        )
        return self.run_dir.finish(
            "smc", result | {"sampler": best, "seconds": time.time() - started}
        )

    def results(self) -> dict:
        """``results.json``'s content (``nfst.experiment.schema``); the evaluate stage must be
        done."""
        return build_results(self.run_dir).to_json()

    def run(self) -> Path:
        """Run (or finish) every stage; returns the report's path. Running it again after an
        interruption resumes (inside ``graceful_interrupts()``, as the CLI runs it, SIGINT and
        SIGTERM stop a training stage after a checkpoint)."""
        from .report import write_report

        if self.done("compile") is None:
            self.say("compiling lattices")
            self.run_dir.finish("compile", self.stage_compile())
        made = f"taking it from {self.config.from_run}" if self.config.from_run else None
        self.say(f"n-gram: {'reusing' if self.done('ngram') else made or 'fitting'}")
        self.ngram()
        if self.preset.scorer.kind == "lstm":
            made = made or training_words(self.dir / "checkpoints" / "scorer.ckpt")
            self.say("scorer: " + ("reusing" if (self.dir / "scorer.pt").exists() else made))
        self.scorer()
        self.train_samplers()
        self.smoothing()  # evaluates first
        if self.rank != 0:
            return self.dir / "report"
        storage.write_atomically(
            self.dir / "results.json", json.dumps(self.results(), indent=1).encode()
        )
        return write_report([self.dir], self.dir / "report")
