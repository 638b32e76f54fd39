"""The samplers of a run (``nfst.experiment.run``): making them, their training seeds,
training each (after its teacher) or loading it trained, and the sampler stage that trains
them all, in worker processes with ``--jobs``."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import time

import torch

from ..errors import NfstError
from ..models.files import load_state, save_sampler
from ..models.samplers import Sampler, make_sampler
from ..runtime import storage
from ..runtime.distributed import stream_seed
from ..train.checkpoint import training_words
from ..train.sampler import train_sampler
from ..train.sleep import TripleBlocks, TripleFeed
from ..train.triples import Triple, TripleStream, length_summary
from .config import training_seed
from .rundir import sampler_key

TRIPLE_BLOCK = 1024
"""Triples a run draws at a time, as sleep training reaches them (its feed's chunk)."""


@contextlib.contextmanager
def _sleep_hint():
    """An NfstError raised inside (drawing triples) also says how to train without the sleep
    phase: the presets sleep by default."""
    try:
        yield
    except NfstError as e:
        hint = f"{e.hint}; or train without the sleep phase: --option sampler.sleep_steps=0"
        raise NfstError(str(e.args[0]), hint) from e


def _seed_words(seed: int) -> str:
    return f" (training seed {seed})" if seed else ""


class RunSamplers:
    """The samplers of a :class:`~nfst.experiment.run.Run` (a part of it: it reads the run's
    ``config``, ``preset``, ``dir``, ``run_dir``, ``device``, ``vocabulary``, ``jobs`` and its
    lattices and scorer)."""

    def new_sampler(self, name: str) -> Sampler:
        return make_sampler(name, self.vocabulary, self.preset.sampler.sampler)

    def training_seed(self, seed: int = 0) -> int:
        """The seed of a sampler's ``seed``-th training run (``--seeds``), whose streams
        initialise, train and evaluate it (``nfst.runtime.distributed``): training run 0 is
        the run without ``--seeds`` (``nfst.experiment.config.training_seed``)."""
        return training_seed(self.config.seed, seed, self.config.seeding)

    def untrained_sampler(self, name: str, seed: int = 0) -> Sampler:
        """The sampler ``name`` as its ``seed``-th training run starts (its seeded
        initialisation)."""
        torch.manual_seed(stream_seed(self.training_seed(seed), "init"))
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
            raise NfstError(
                f"{self.dir}: the {name} sampler{_seed_words(seed)} is not trained",
                f"train it with `nfst train-sampler --sampler {name} --run-dir "
                f"{self.dir}`" + (f" --seeds {seed + 1}" if seed else ""),
            )
        sampler = self.new_sampler(name)
        load_state(sampler, storage.load(path)["state"], path)
        return sampler.to(self.device).eval()

    def triples(self, seed: int = 0) -> TripleFeed | None:
        """The triples (x, y, ω) drawn from the frozen scorer for sleep training
        (``sampler.sleep_steps``, ``sampler.sleep_share``; ``nfst.train.triples``) of training
        seed ``seed``, each used once; None without sleep training. One stream per seed,
        drawn as training reaches it, ``TRIPLE_BLOCK`` triples at a time: each block once for
        all the seed's samplers and processes (``triples/seed-S/block-K.pt``, with the
        stream's state after it), so a sleep phase that ``auto`` ends early draws only what it
        used; ``stages/triples-S.json`` sums up the blocks drawn. Their lattices are compiled
        as training reaches them, through the run's lattice cache and processes: once for all
        the seed's samplers. Seeds do not share triples: each training seed is an independent
        replicate, whose spread is the error bar of the comparison."""
        n = self.preset.sampler.triples_needed()
        if not n:
            return None
        blocks = TripleBlocks(functools.partial(self._triple_block, seed), n, TRIPLE_BLOCK)
        return TripleFeed(
            self.T, blocks, cache_dir=self.cache_dir, processes=self.processes, chunk=TRIPLE_BLOCK
        )

    def _triple_block(self, seed: int, number: int) -> list[Triple]:
        """Block ``number`` of :meth:`triples`, drawn first (with any before it) if need be.
        The last block of a sequence holds only what the sequence needs (a tiny run's sleep
        needs fewer than a block); a longer sequence draws it on to its full size."""
        n = self.preset.sampler.triples_needed()
        size = min(TRIPLE_BLOCK, n - number * TRIPLE_BLOCK)
        folder = self.dir / "triples" / f"seed-{seed}"
        path = folder / f"block-{number}.pt"
        block = storage.load(path) if path.exists() else None
        if block is None or len(block["triples"]) < size:
            with self.run_dir.lock(f"triples-{seed}"):  # whichever process needs it first
                self._draw_blocks(seed, folder, number, n)
            block = storage.load(path)
        return block["triples"]

    def _draw_blocks(self, seed: int, folder, last: int, n: int) -> None:
        """The blocks of the first ``n`` triples to ``last``, those not yet drawn (or drawn
        short): the stream goes on from the state kept with the last block drawn (the same
        triples as one draw of them all)."""
        config = self.preset.sampler
        with _sleep_hint():
            stream = TripleStream(
                self.scorer(),
                self.T,
                device=self.device,
                seed=stream_seed(self.training_seed(seed), "triples"),
                max_length=config.sleep_max_length,
            )
        first, seconds, short = 0, 0.0, []
        while (folder / f"block-{first}.pt").exists():
            first += 1
        if first:  # only the last block drawn can be short: it goes on from its own state
            before = storage.load(folder / f"block-{first - 1}.pt")
            stream.load_state_dict(before["stream"])
            seconds = before["draw_seconds"]
            if len(before["triples"]) < TRIPLE_BLOCK:
                first, short = first - 1, before["triples"]
        else:
            self.say(f"drawing triples from the scorer{_seed_words(seed)} as training needs them")
        for number in range(first, last + 1):
            size = min(TRIPLE_BLOCK, n - number * TRIPLE_BLOCK)
            started = time.time()
            with _sleep_hint():
                triples = short + stream.take(size - len(short))
            seconds, short = seconds + time.time() - started, []
            block = {"triples": triples, "stream": stream.state_dict(), "draw_seconds": seconds}
            storage.save(folder / f"block-{number}.pt", block)
        train = self.lattices("train")
        self.run_dir.finish(
            f"triples-{seed}",
            {
                **stream.summary(),
                "draw_seconds": round(seconds, 2),
                "train_x_length": length_summary(lat.x for lat in train),
                "train_y_length": length_summary(lat.y for lat in train),
            },
        )

    def train_sampler(self, name: str, seed: int = 0, callback=None) -> Sampler:
        """The sampler ``name`` trained from training seed ``seed`` (after its teacher, which
        its training needs), or loaded if it is; ``callback``: ``train_sampler``'s, called
        after every step. One process at a time trains it, under the run's lock: another
        that shares the run waits, then loads it."""
        if self.is_trained(name, seed):
            return self.sampler(name, seed)
        self.scorer()  # first: a command failing on the run's data leaves no lock file behind
        with self.run_dir.lock(f"sampler-{sampler_key(name, seed)}"):
            return self._train_sampler(name, seed, callback)

    def _train_sampler(self, name: str, seed: int, callback) -> Sampler:
        key = sampler_key(name, seed)
        if not self.is_trained(name, seed):
            scorer = self.scorer()
            teacher_name = self.teacher_of(name)
            teacher = self.train_sampler(teacher_name, seed) if teacher_name else None
            config = dataclasses.replace(self.preset.sampler, teacher=teacher_name)
            untrained = self.untrained_sampler(name, seed).train()
            train, dev = self.lattices("train"), self.lattices("dev")
            self.run_dir.claim()  # before its first checkpoint
            triples = self.triples(seed)
            result = train_sampler(
                untrained,
                scorer,
                train,
                dev,
                config,
                seed=self.training_seed(seed),
                device=self.device,
                quiet=self.quiet,
                teacher=teacher,
                callback=callback,
                checkpoint=self.dir / "checkpoints" / f"{key}.ckpt",
                triples=triples,
            )
            if self.rank == 0:
                save_sampler(result.sampler, self.dir / "samplers" / f"{key}.pt")
            sleep = (
                {}
                if triples is None
                else {
                    "sleep": {
                        "setting": config.sleep_steps,
                        "steps": result.sleep_steps,
                        "stopped_by": result.sleep_stopped_by,
                        "share": config.sleep_share,
                        "sleep_seconds": result.sleep_seconds,
                        "best_dev_partial_kl": min(
                            (
                                h["dev_partial_kl"]
                                for h in result.history
                                if h["step"] <= result.sleep_steps and "dev_partial_kl" in h
                            ),
                            default=None,
                        ),
                        "skipped": triples.skipped,
                        **(self.done(f"triples-{seed}") or {}),
                    }
                }
            )
            self.run_dir.finish(
                f"sampler-{key}",
                {
                    "seconds": result.seconds,
                    "best_step": result.best_step,
                    "best_dev_partial_kl": result.best_dev_partial_kl,
                    "steps": result.steps,
                    "stopped_by": result.stopped_by,
                    "history": result.history,
                    **sleep,
                },
            )
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
        raise NfstError(
            f"{self.dir}: not trained yet: {', '.join(f'{n}{_seed_words(s)}' for n, s in missing)}",
            f"train each with {one} (NAME: {', '.join(names)}), or all with the "
            f"rest of the run: `nfst run --run-dir {self.dir} --samplers "
            f"{','.join(self.config.samplers)}{seeds}`",
        )

    def train_samplers(self) -> None:
        """The sampler stage: every (sampler, training seed) not yet trained, each seed's
        teacher first (the others learn from it), then the rest, longest first
        (:func:`~.jobs.longest_first`), ``jobs`` at a time in worker processes
        (``nfst.experiment.jobs``; one after another when ``jobs`` is 1 or under torchrun).
        Its wall time is recorded (``stages/samplers.json``) when it trains any: over every
        command that trained its samplers since it was last done (``RunDir.clock``), the last
        one's ``trained``."""
        from .jobs import longest_first, train_in_workers

        teacher = self.preset.sampler.teacher
        todo = [(n, s) for n, s in self.trainings() if not self.is_trained(n, s)]
        for name, seed in self.trainings():
            checkpoint = self.dir / "checkpoints" / f"{sampler_key(name, seed)}.ckpt"
            self.say(
                f"sampler {name}{_seed_words(seed)}: "
                + (training_words(checkpoint) if (name, seed) in todo else "reusing")
            )
        if not todo:
            return
        with self.run_dir.clock("samplers") as spent:
            for seed in sorted({s for _, s in todo} if teacher else ()):
                self.train_sampler(teacher, seed)  # in this process: every worker needs it
            rest = longest_first(self, [(n, s) for n, s in todo if n != teacher])
            if self.jobs > 1 and len(rest) > 1 and self.run_dir.world == 1:
                self.say(f"training {len(rest)} samplers in {min(self.jobs, len(rest))} processes")
                train_in_workers(self, rest, self.jobs)
            for name, seed in rest:  # trained above if in workers: then this loads them
                self.train_sampler(name, seed)
            self.run_dir.finish(
                "samplers",
                spent() | {"jobs": self.jobs, "trained": [sampler_key(n, s) for n, s in todo]},
            )
