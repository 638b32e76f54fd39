"""The evaluate stage of a run (``nfst.experiment.run``): every sampler's partial KL, ESS and
expected length on the test pairs, trained and untrained; the scorer's test log Ẑ (a lower
bound, by importance sampling from the n-gram's posterior and every sampler); the n-gram's
exact test log-likelihood; with a WFST scorer, exact log Z and KLs."""

from __future__ import annotations

import torch


def evaluate_run(run) -> dict:
    """The evaluate stage's result for ``run`` (an ``nfst.experiment.run.Run``)."""
    from ..evaluate import (add_exact, add_exclusive_kl, estimate_log_z, evaluate,
                            exact_log_z, is_exact)
    scorer, test = run.scorer(), run.lattices("test")
    samplers = {name: run.sampler(name) for name in run.config.samplers}
    structure = run.task.structure("test")
    sizes = run.preset.evaluate
    common = dict(k=sizes.k, seed=run.config.seed, device=run.device,
                  quiet=run.quiet)
    result = evaluate(samplers, scorer, test, structure=structure, **common)
    untrained = evaluate({name: run.untrained_sampler(name) for name in samplers}, scorer,
                         test, examples=0, **common)
    for name, metrics in untrained["samplers"].items():
        result["samplers"][name].update({
            "untrained_partial_kl": metrics["partial_kl"],
            "untrained_partial_kl_se": metrics["partial_kl_se"],
            "untrained_per_pair_partial_kl": metrics["per_pair_partial_kl"]})
    ngram = scorer if run.preset.scorer.kind == "ngram" else run.ngram()
    order = run.preset.scorer.ngram.order
    proposals = {f"the {order}-gram's posterior": ngram.posterior(),
                 **{f"the {name} sampler": sampler for name, sampler in samplers.items()}}
    run.say(f"estimating log Z with {sizes.log_z_samples} samples per pair "
             f"from {', '.join(proposals)}")
    result["log_z"] = estimate_log_z(proposals, scorer, test, sizes.log_z_samples,
                                     max_samples=sizes.log_z_max_samples,
                                     seed=run.config.seed, device=run.device,
                                     structure=structure)
    ngram_log_z = exact_log_z(ngram, test, device=run.device)
    result["ngram"] = {"order": order, "test_log_likelihood": float(
        torch.tensor(ngram_log_z, dtype=torch.float64).mean())}
    add_exclusive_kl(result)
    if is_exact(scorer):
        run.say("exact log Z and KL: the scorer is a WFST")
        add_exact(result, scorer, samplers, test, k=sizes.k,
                  seed=run.config.seed, device=run.device,
                  log_z=ngram_log_z if scorer is ngram else None)
    return result
