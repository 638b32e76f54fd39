"""Settings that make a whole run take seconds: tiny models, a few steps, a few pairs."""

from nfst.experiment.config import RunConfig

TINY = ["scorer.hidden=16", "scorer.bootstrap.d=16", "sampler.sampler.d=16", "scorer.steps=4",
        "scorer.ngram.steps=10",
        "sampler.steps=12", "sampler.eval_every=4", "sampler.eval_k=4",
        "sampler.checkpoint_every=1", "train_pairs=16", "dev_pairs=4", "test_pairs=4"]
TASK = {"train_size": 16, "eval_size": 4}


def tiny_config(**kw):
    return RunConfig(**{"task": "cipher", "samplers": ("swa", "swp"), "task_settings": TASK,
                        "overrides": tuple(TINY), "eval_k": 4, "smc_particles": (4, 8),
                        "smc_pairs": 2, "log_z_samples": 8} | kw)
