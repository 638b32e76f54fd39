"""The evaluate stage of a run (``nfst.experiment.run``): ``nfst.evaluate.evaluate_all`` on the
run's trained samplers (each of its ``--seeds`` training runs), its untrained samplers, its
scorer and n-gram, its test and validation pairs, with proposals shown in the task's notation
(``Task.abbreviate``) and the task's generating structure (``Task.structure``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the evaluation layer is imported when a run first evaluates
    from ..evaluate.evaluation import Evaluation


def evaluate_run(run) -> Evaluation:
    """The evaluate stage's result for ``run`` (an ``nfst.experiment.run.Run``); its
    ``to_json()`` is ``stages/evaluate.json``."""
    from ..evaluate import evaluate_all

    scorer = run.scorer()
    seeds = range(run.config.seeds)
    sizes = run.preset.evaluate
    return evaluate_all(
        [{name: run.sampler(name, s) for name in run.config.samplers} for s in seeds],
        scorer,
        run.lattices("test"),
        run.lattices("dev"),
        untrained={name: run.untrained_sampler(name) for name in run.config.samplers},
        ngram=scorer if run.preset.scorer.kind == "ngram" else run.ngram(),
        training_seeds=[run.training_seed(s) for s in seeds],
        k=sizes.k,
        log_z_samples=sizes.log_z_samples,
        log_z_max_samples=sizes.log_z_max_samples,
        structure=run.task.structure("test"),
        device=run.device,
        quiet=run.quiet,
        say=run.say,
        render=lambda lattice, arcs: run.task.abbreviate(
            lattice.marks_of([a for a in arcs if a >= 0])
        ),
    )
