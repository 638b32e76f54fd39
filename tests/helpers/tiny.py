"""Settings that make a whole run take seconds: tiny models, a few steps, a few pairs; and a run
directory with a run recorded, nothing done."""

from nfst.experiment.config import RunConfig
from nfst.experiment.run import Run

TINY = [
    "scorer.hidden=16",
    "scorer.bootstrap.d=16",
    "sampler.sampler.d=16",
    "scorer.steps=4",
    "scorer.ngram.steps=10",
    "sampler.steps=12",
    "sampler.eval_every=4",
    "sampler.eval_k=4",
    "sampler.checkpoint_every=1",
    "sampler.sleep_steps=0",  # the default sleeps: tests/experiment/conftest.py's run does
    "train_pairs=16",
    "dev_pairs=4",
    "test_pairs=4",
    "evaluate.k=4",
    "evaluate.smc_particles=[4, 8]",
    "evaluate.smc_pairs=2",
    "evaluate.log_z_samples=8",
    "evaluate.smc_lookahead_steps=5",
]
TASK = {"train_size": 16, "eval_size": 4}
FINISHED = [o for o in TINY if not o.startswith("sampler.sleep_steps=")] + [
    "scorer.kind=ngram",
    "sampler.sleep_cap=8",
]
"""The settings of tests/experiment's shared finished run: TINY with the default's sleep
phase (which TINY turns off), capped at 8 steps (two validations, TINY validating every 4;
the tiny preset's 10 would only make the suite slower), and the n-gram as scorer."""


def tiny_options(*extra: str, settings=TINY) -> list[str]:
    """The command line's ``--option``s and ``--set``s of ``settings`` (then ``extra``) and
    TASK."""
    return [a for o in (*settings, *extra) for a in ("--option", o)] + [
        a for k, v in TASK.items() for a in ("--set", f"{k}={v}")
    ]


def tiny_config(**kw):
    return RunConfig(
        **{
            "task": "cipher",
            "samplers": ("swa", "swp"),
            "task_settings": TASK,
            "overrides": tuple(TINY),
        }
        | kw
    )


def recorded_run(path):
    """A run directory that records a cipher run, as its first stage does, with nothing done:
    preset small, seed 0, samplers swa, task settings train_size=4 and eval_size=4."""
    config = RunConfig(samplers=("swa",), task_settings={"train_size": 4, "eval_size": 4})
    Run(config, path, quiet=True).run_dir.claim()
