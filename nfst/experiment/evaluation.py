"""The evaluate stage of a run (``nfst.experiment.run``): every sampler's partial KL, ESS and
expected length on the test pairs, trained and untrained; with ``--seeds N``, the partial KL
of each of its N training runs on the same test pairs; every sampler's validation partial KL
and the reference sampler chosen by it, with each sampler's gap to the reference
(``nfst.evaluate.comparison``); the scorer's test log Ẑ (a lower bound, by importance
sampling from the n-gram's posterior and every sampler); the n-gram's exact test
log-likelihood; with a WFST scorer, exact log Z and KLs. Proposals are shown in the task's
notation (``Task.abbreviate``); training seed 0's most probable proposal for test pair 0 is
each sampler's ``most_probable`` (003 Tables 4–6).

Random streams: training validates on ``item_seed(seed, i)``; the evaluation's validation,
test and log Ẑ draws each have a stream of their own (``nfst.runtime.distributed.stream_seed``),
so no two of them share random numbers.
"""

from __future__ import annotations

import torch


def evaluate_run(run) -> dict:
    """The evaluate stage's result for ``run`` (an ``nfst.experiment.run.Run``)."""
    from ..evaluate import (add_exact, add_exclusive_kl, estimate_log_z, evaluate,
                            exact_log_z, is_exact)
    from ..evaluate.comparison import choose_reference, gap, mean_over_seeds_and_pairs
    from ..runtime.distributed import stream_seed
    scorer, test, dev = run.scorer(), run.lattices("test"), run.lattices("dev")
    seeds = range(run.config.seeds)
    trained = [{name: run.sampler(name, s) for name in run.config.samplers} for s in seeds]
    structure = run.task.structure("test")
    common = dict(k=run.config.eval_k, device=run.device, quiet=run.quiet,
                  render=lambda lattice, arcs: run.task.abbreviate(
                      lattice.marks_of([a for a in arcs if a >= 0])))

    def on(lattices, s: int, stream: str, **kw) -> dict:
        return evaluate(trained[s], scorer, lattices,
                        seed=stream_seed(run.training_seed(s), stream), **common | kw)

    result = on(test, 0, "test", structure=structure)
    untrained = evaluate({name: run.untrained_sampler(name) for name in trained[0]}, scorer,
                         test, examples=0, seed=result["seed"], **common)
    later = [on(test, s, "test", examples=0, without_replacement=False) for s in seeds[1:]]
    validation = [on(dev, s, "validation", examples=0, without_replacement=False)
                  for s in seeds]
    per_pair = {name: [r["samplers"][name]["per_pair_partial_kl"] for r in [result, *later]]
                for name in trained[0]}
    on_validation = {name: [v["samplers"][name]["partial_kl"] for v in validation]
                     for name in trained[0]}
    reference = choose_reference({name: sum(v) / len(v) for name, v in on_validation.items()})
    for name, metrics in result["samplers"].items():
        over_seeds = mean_over_seeds_and_pairs(per_pair[name])
        metrics.update({
            "partial_kl": over_seeds["mean"], "partial_kl_se": over_seeds["se"],
            "partial_kl_by_seed": [sum(p) / len(p) for p in per_pair[name]],
            "per_pair_partial_kl_by_seed": per_pair[name],
            "validation_partial_kl": sum(on_validation[name]) / len(on_validation[name]),
            "validation_partial_kl_by_seed": on_validation[name],
            "gap": gap(per_pair[name], per_pair[reference]),
            "untrained_partial_kl": untrained["samplers"][name]["partial_kl"],
            "untrained_partial_kl_se": untrained["samplers"][name]["partial_kl_se"],
            "untrained_per_pair_partial_kl":
                untrained["samplers"][name]["per_pair_partial_kl"]})
    result |= {"seeds": list(seeds), "reference": reference, "validation_pairs": len(dev),
               "structure": None if structure is None else structure.name}
    ngram = scorer if run.preset.scorer.kind == "ngram" else run.ngram()
    order = run.preset.scorer.ngram.order
    proposals = {f"the {order}-gram's posterior": ngram.posterior(),
                 **{f"the {name} sampler": sampler for name, sampler in trained[0].items()}}
    run.say(f"estimating log Z with {run.config.log_z_samples} samples per pair "
            f"from {', '.join(proposals)}")
    result["log_z"] = estimate_log_z(proposals, scorer, test, run.config.log_z_samples,
                                     max_samples=run.config.log_z_max_samples,
                                     seed=stream_seed(run.config.seed, "log_z"),
                                     device=run.device, structure=structure)
    ngram_log_z = exact_log_z(ngram, test, device=run.device)
    result["ngram"] = {"order": order, "test_log_likelihood": float(
        torch.tensor(ngram_log_z, dtype=torch.float64).mean())}
    add_exclusive_kl(result)
    if is_exact(scorer):
        run.say("exact log Z and KL: the scorer is a WFST")
        add_exact(result, scorer, trained[0], test, k=run.config.eval_k, seed=result["seed"],
                  device=run.device, log_z=ngram_log_z if scorer is ngram else None)
    return result
