"""A results.json built by hand (``nfst.experiment.schema``), for the report's tests: the
samplers' per-pair partial KLs are given, every figure derived from them is computed the way
the evaluation computes it (``nfst.evaluate.paired_gaps``)."""

from nfst.evaluate.paired_gaps import choose_reference, gap, mean_over_seeds_and_pairs
from nfst.evaluate.pareto import pareto_summary
from nfst.experiment.schema import Results, SamplerResults, ScorerResults

# swp is best on the test pairs, sws on validation: sws is the reference; swp and sws differ
# by less than 2 SE (≈), swa is worse than both by far more (<).
SAMPLERS = {
    "swp": ([[10.0, 22.0, 30.0, 41.0], [12.0, 20.0, 31.0, 39.0]], [25.0, 26.0], "delete a"),
    "sws": ([[11.0, 20.0, 32.0, 40.0], [11.0, 21.0, 30.0, 41.0]], [24.0, 24.5], "insert c"),
    "swa": ([[20.0, 30.0, 40.0, 50.0], [21.0, 29.5, 41.0, 50.5]], [35.0, 36.0], "delete b"),
}


def sampler_entry(test: list[list[float]], validation: list[float], proposal: str) -> dict:
    """One sampler's results: ``test`` S × P partial KLs, ``validation`` one per seed."""
    over = mean_over_seeds_and_pairs(test)
    shown = {"x": "a b", "y": "c d", "proposal": proposal, "log_q": -1.5, "log_p": -7.25}
    return {
        "partial_kl": over["mean"],
        "partial_kl_se": over["se"],
        "untrained_per_pair_partial_kl": [90.0] * len(test[0]),
        "exclusive_kl_lower_bound": over["mean"] - 25.0,
        "exclusive_kl_lower_bound_se": 1.0,
        "untrained_exclusive_kl_lower_bound": 65.0,
        "untrained_exclusive_kl_lower_bound_se": 1.0,
        "pareto_k_summary": pareto_summary([], []),
        "train_seconds": 10.0,
        "partial_kl_by_seed": [sum(r) / len(r) for r in test],
        "per_pair_partial_kl_by_seed": test,
        "per_pair_partial_kl": test[0],
        "validation_partial_kl": sum(validation) / len(validation),
        "validation_partial_kl_by_seed": validation,
        "untrained_partial_kl": 90.0,
        "untrained_partial_kl_se": 1.0,
        "ess": 1.5,
        "ess_se": 0.1,
        "expected_length": 12.0,
        "expected_length_se": 0.5,
        "pareto_k": None,
        "pareto_k_over_threshold": 0.0,
        "ess_wor": 2.0,
        "ess_wor_se": 0.2,
        "stopped_by": "patience",
        "steps": 300,
        "best_step": 200,
        "curve": {"step": [0, 100], "val_partial_kl": [90.0, validation[0]]},
        "training": {"steps": 300, "mean_ess": 1.2, "mean_grad_norm": 3.0},
        "proposals": [shown],
        "most_probable": shown,
    }


def constructed_results(
    samplers: dict,
    task: str = "tr",
    overrides=(),
    task_settings=None,
    seed: int = 0,
    lr: float = 0.003,
    lattices=None,
) -> dict:
    """A run's results.json: ``samplers`` maps a name to (test S × P, validation per seed,
    proposal); the reference is chosen on validation, gaps are paired over seeds and pairs.
    Its preset (``config.preset``) holds the few settings the report reads, and ``lr``."""
    entries = {name: sampler_entry(*spec) for name, spec in samplers.items()}
    reference = choose_reference({n: e["validation_partial_kl"] for n, e in entries.items()})
    for e in entries.values():
        e["gap"] = gap(
            e["per_pair_partial_kl_by_seed"], entries[reference]["per_pair_partial_kl_by_seed"]
        )
    seeds = len(next(iter(samplers.values()))[0])
    pairs = len(next(iter(samplers.values()))[0][0])
    scorer = ScorerResults(
        kind="lstm",
        proposal="ngram",
        train_iwae=-30.0,
        curve={"step": [1, 2, 3], "iwae": [-60.0, -40.0, -30.0]},
        test_log_z=-25.0,
        test_log_z_se=1.0,
        test_log_z_estimator="importance sampling",
        test_log_z_is_lower_bound=True,
        test_log_z_pareto_k=pareto_summary([], []),
        test_log_z_spread=0.5,
        test_log_z_exact=None,
        ngram_order=3,
        ngram_test_log_likelihood=-28.0,
        structure=None,
    )
    return Results(
        task=task,
        preset="small",
        seed=seed,
        seeds=list(range(seeds)),
        reference=reference,
        pairs=pairs,
        validation_pairs=4,
        lattices=lattices,
        scorer=scorer,
        samplers={name: SamplerResults(**e) for name, e in entries.items()},
        log_z={},
        smc=None,
        wall_seconds={},
        config={
            "run": {
                "task": task,
                "preset": "small",
                "seed": seed,
                "seeds": seeds,
                "overrides": list(overrides),
                "task_settings": task_settings or {},
            },
            "task_settings": task_settings or {},
            "preset": {
                "scorer": {"kind": "lstm"},
                "sampler": {"lr": lr, "eval_k": 8},
                "evaluate": {"k": 16},
                "test_pairs": pairs,
                "dev_pairs": 4,
            },
        },
    ).to_json()
