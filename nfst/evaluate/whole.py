"""The whole evaluation of trained samplers against a frozen scorer, as ``nfst run`` writes it
(``stages/evaluate.json``), from samplers, a scorer and lattices alone (:func:`evaluate_all`):
every sampler's partial KL, ESS and expected length on the test pairs, trained and untrained;
with several training runs (seeds), the partial KL of each on the same test pairs; every
sampler's validation partial KL and the reference sampler chosen by it, with each sampler's
gap to the reference (``paired_gaps``); the scorer's test log Ẑ (a lower bound, by importance
sampling from the n-gram's posterior and every sampler, ``log_z``) and the exclusive-KL lower
bounds on it; the n-gram's exact test log-likelihood; with a WFST scorer, exact log Z and KLs
(``exact``). Training run 0's most probable proposal for test pair 0 is each sampler's
``most_probable`` (003 Tables 4–6).

Random streams: the validation, test and log Ẑ draws each have a stream of their own
(``nfst.runtime.distributed.stream_seed``) of the training run's seed, apart from training's
(its initialisation, its steps, its validation for early stopping), so no two of them share
random numbers.
"""

from __future__ import annotations

from typing import Callable, Mapping, Optional, Sequence

import torch

from ..fst.lattice import Lattice
from ..fst.structure import Structure
from ..models.ngram import NgramScorer
from ..models.samplers.base import Sampler
from ..models.scorer import Scorer
from ..runtime.distributed import stream_seed
from .evaluation import Evaluation
from .exact import add_exact, exact_log_z, is_exact
from .log_z import add_exclusive_kl, estimate_log_z
from .paired_gaps import choose_reference, gap, mean_over_seeds_and_pairs
from .samplers import evaluate, render_marks


def evaluate_all(
    trained: Sequence[Mapping[str, Sampler]],
    scorer: Scorer,
    test: Sequence[Lattice],
    validation: Sequence[Lattice],
    *,
    untrained: Mapping[str, Sampler],
    ngram: Optional[NgramScorer] = None,
    training_seeds: Sequence[int] = (0,),
    k: int = 16,
    log_z_samples: int = 256,
    log_z_max_samples: Optional[int] = None,
    structure: Optional[Structure] = None,
    render: Callable[[Lattice, Sequence[int]], str] = render_marks,
    device: torch.device | str = "cpu",
    quiet: bool = False,
    say: Callable[[str], None] = lambda text: None,
) -> Evaluation:
    """The whole evaluation (module docstring) of ``trained[s]``, training run s's samplers
    by name (every run the same names), trained from ``training_seeds[s]``; ``untrained``:
    the same samplers as their training starts. ``ngram``: the mark n-gram whose posterior
    proposes for log Ẑ and whose exact test log-likelihood is reported (the scorer itself if
    it is one); ``k`` samples per pair; ``log_z_samples`` (up to ``log_z_max_samples``) per
    pair for log Ẑ; ``structure``: the task's generating structure, whose share of samples
    is reported under its name; ``render``: a path (its lattice and arcs) as proposals show
    it; ``say``: where progress lines go.

    Returns an :class:`~nfst.evaluate.evaluation.Evaluation`: training run 0's metrics on
    ``test`` (:func:`~nfst.evaluate.samplers.evaluate`), with per sampler also the partial KL
    ± its SE over runs and pairs, per run, the validation partial KL, the ``gap`` to the
    reference, the untrained sampler's, the KL bounds and the ``structure``'s share (over
    runs and pairs); and the runs' indices, the ``reference``, the scorer's ``log_z``, the
    n-gram's exact test log-likelihood and, with a WFST scorer, the exact values
    (``nfst.evaluate.exact.add_exact``). Its ``to_json()`` is ``stages/evaluate.json``."""
    ngram = _ngram(trained, training_seeds, scorer, ngram)
    common = dict(k=k, device=device, quiet=quiet, render=render)
    result = _sampler_metrics(
        trained, untrained, scorer, test, validation, training_seeds, structure, common
    )
    ngram_log_z = _log_z(
        result,
        trained[0],
        scorer,
        ngram,
        test,
        log_z_samples,
        log_z_max_samples,
        stream_seed(training_seeds[0], "log_z"),
        device,
        structure,
        say,
    )
    add_exclusive_kl(result)
    if is_exact(scorer):
        say("exact log Z and KL: the scorer is a WFST")
        add_exact(
            result,
            scorer,
            trained[0],
            test,
            k=k,
            seed=result["seed"],
            device=device,
            log_z=ngram_log_z if scorer is ngram else None,
        )
    return Evaluation.from_json(result)  # the dict built above is its JSON form


def _ngram(
    trained: Sequence[Mapping[str, Sampler]],
    training_seeds: Sequence[int],
    scorer: Scorer,
    ngram: Optional[NgramScorer],
) -> NgramScorer:
    """The n-gram of :func:`evaluate_all`: ``ngram``, else the scorer if it is one; raises
    ValueError without one, or when the training runs and their seeds differ in number."""
    if len(trained) != len(training_seeds):
        raise ValueError(f"{len(trained)} training runs but {len(training_seeds)} seeds")
    if ngram is None:
        if not isinstance(scorer, NgramScorer):
            raise ValueError(
                "evaluate_all needs the n-gram (ngram=) beside a scorer that is not one"
            )
        ngram = scorer
    return ngram


def _sampler_metrics(
    trained: Sequence[Mapping[str, Sampler]],
    untrained: Mapping[str, Sampler],
    scorer: Scorer,
    test: Sequence[Lattice],
    validation: Sequence[Lattice],
    training_seeds: Sequence[int],
    structure: Optional[Structure],
    common: dict,
) -> dict:
    """Training run 0's metrics on ``test`` with the other runs', every run's validation and
    the untrained samplers' folded in (:func:`_over_runs`), and the runs' indices, the
    reference, the number of validation pairs and the structure's name; ``common``: the
    arguments every :func:`~nfst.evaluate.samplers.evaluate` call shares."""

    def on(lattices: Sequence[Lattice], s: int, stream: str, **kw) -> dict:
        return evaluate(
            trained[s], scorer, lattices, seed=stream_seed(training_seeds[s], stream), **common | kw
        )

    structure_name = None if structure is None else structure.name
    result = on(test, 0, "test", structure=structure)
    runs = range(len(trained))
    untrained_result = evaluate(untrained, scorer, test, examples=0, seed=result["seed"], **common)
    later = [
        on(test, s, "test", examples=0, without_replacement=False, structure=structure)
        for s in runs[1:]
    ]
    on_validation = [
        on(validation, s, "validation", examples=0, without_replacement=False) for s in runs
    ]
    reference = _over_runs(result, later, on_validation, untrained_result, structure_name)
    return result | {
        "seeds": list(runs),
        "reference": reference,
        "validation_pairs": len(validation),
        "structure": structure_name,
    }


def _log_z(
    result: dict,
    samplers: Mapping[str, Sampler],
    scorer: Scorer,
    ngram: NgramScorer,
    test: Sequence[Lattice],
    samples: int,
    max_samples: Optional[int],
    seed: int,
    device: torch.device | str,
    structure: Optional[Structure],
    say: Callable[[str], None],
) -> list[float]:
    """Add to ``result`` the scorer's test log Ẑ (``log_z``: importance sampling from the
    n-gram's posterior and from ``samplers``, training run 0's) and the n-gram's exact test
    log-likelihood (``ngram``); returns the n-gram's exact log Z of each test pair."""
    proposals = {
        f"the {ngram.order}-gram's posterior": ngram.posterior(),
        **{f"the {name} sampler": sampler for name, sampler in samplers.items()},
    }
    say(f"estimating log Z with {samples} samples per pair from {', '.join(proposals)}")
    result["log_z"] = estimate_log_z(
        proposals,
        scorer,
        test,
        samples,
        max_samples=max_samples,
        seed=seed,
        device=device,
        structure=structure,
    )
    ngram_log_z = exact_log_z(ngram, test, device=device)
    result["ngram"] = {
        "order": ngram.order,
        "test_log_likelihood": float(torch.tensor(ngram_log_z, dtype=torch.float64).mean()),
    }
    return ngram_log_z


def _over_runs(
    result: dict,
    later: list[dict],
    validation: list[dict],
    untrained: dict,
    structure: Optional[str],
) -> str:
    """Fold the other training runs' test results (``later``), every run's ``validation``
    result and the ``untrained`` samplers' into training run 0's ``result``, per sampler
    (:func:`evaluate_all`), the ``structure``'s share too (mean ± SE over runs and pairs);
    returns the reference: the sampler of lowest mean validation partial KL."""
    names = list(result["samplers"])
    per_pair = {
        name: [r["samplers"][name]["per_pair_partial_kl"] for r in [result, *later]]
        for name in names
    }
    on_validation = {
        name: [v["samplers"][name]["partial_kl"] for v in validation] for name in names
    }
    reference = choose_reference({name: sum(v) / len(v) for name, v in on_validation.items()})
    for name, metrics in result["samplers"].items():
        over_seeds = mean_over_seeds_and_pairs(per_pair[name])
        metrics.update(
            {
                "partial_kl": over_seeds["mean"],
                "partial_kl_se": over_seeds["se"],
                "partial_kl_by_seed": [sum(p) / len(p) for p in per_pair[name]],
                "per_pair_partial_kl_by_seed": per_pair[name],
                "validation_partial_kl": sum(on_validation[name]) / len(on_validation[name]),
                "validation_partial_kl_by_seed": on_validation[name],
                "gap": gap(per_pair[name], per_pair[reference]),
                "untrained_partial_kl": untrained["samplers"][name]["partial_kl"],
                "untrained_partial_kl_se": untrained["samplers"][name]["partial_kl_se"],
                "untrained_per_pair_partial_kl": untrained["samplers"][name]["per_pair_partial_kl"],
            }
        )
        if structure is not None:
            share = mean_over_seeds_and_pairs(
                [r["samplers"][name].pop("per_pair_share") for r in [result, *later]]
            )
            metrics[structure], metrics[f"{structure}_se"] = share["mean"], share["se"]
    return reference
