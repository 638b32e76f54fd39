"""A run's ``results.json`` (its schema: ``nfst.experiment.schema``), what the report reads,
built from the run's stage files (``stages/*.json``) and its settings (``config.json``).

``nfst run`` writes it at the end; ``nfst report`` builds the same from the stage files of a
run that has finished its evaluate stage but not the rest.
"""

from __future__ import annotations

from ..evaluate.evaluation import Evaluation
from ..evaluate.metrics import mean_and_se
from .rundir import RunDir, sampler_key
from .schema import Results, SamplerResults, ScorerResults


def training_summary(history: list[dict]) -> dict:
    """Means over a sampler's training steps of the ESS of its training weights and of its
    gradient norm (before clipping); None where the history does not record them."""

    def mean(key):
        values = [h[key] for h in history if h.get(key) is not None]
        return sum(values) / len(values) if values else None

    return {
        "steps": max((h["step"] for h in history), default=0),
        "mean_ess": mean("ess"),
        "mean_grad_norm": mean("grad_norm"),
    }


def _samplers(run_dir: RunDir, evaluation: Evaluation) -> dict[str, SamplerResults]:
    """Per sampler: its evaluation (``stages/evaluate.json``), its validation curve and a
    summary of its training (``stages/sampler-NAME.json``), both of training seed 0, and
    every training seed's record (:func:`training_record`)."""
    samplers = {}
    for name, evaluated in evaluation.samplers.items():
        trained = run_dir.done(f"sampler-{name}") or {}
        history = [h for h in trained.get("history", []) if "dev_partial_kl" in h]
        samplers[name] = SamplerResults(
            **vars(evaluated),
            **training_record(trained),
            curve={
                "step": [h["step"] for h in history],
                "val_partial_kl": [h["dev_partial_kl"] for h in history],
            },
            training=training_summary(trained.get("history", [])),
            training_by_seed=[
                training_record(run_dir.done(f"sampler-{sampler_key(name, s)}") or {})
                for s in evaluation.seeds
            ],
        )
    return samplers


def training_record(trained: dict) -> dict:
    """One training run's record from its stage file (``stages/sampler-KEY.json``, {} where
    there is none): ``train_seconds``, what ended training, and its sleep phase (``sleep``,
    None without one)."""
    return {
        "train_seconds": trained.get("seconds"),
        **_stopping(trained),
        "sleep": trained.get("sleep"),
    }


def _stopping(trained: dict) -> dict:
    """What ended a sampler's training (``"patience"`` or ``"steps"``), after how many steps,
    and the step whose parameters were kept; stage files written before ``stopped_by`` was
    recorded give ``stopped_early`` instead."""
    if not trained:
        return {"stopped_by": None, "steps": None, "best_step": None}
    stopped_by = trained.get("stopped_by") or (
        "patience" if trained.get("stopped_early") else "steps"
    )
    steps = trained.get("steps", max((h["step"] for h in trained.get("history", [])), default=0))
    return {"stopped_by": stopped_by, "steps": steps, "best_step": trained.get("best_step")}


def wall_seconds(run_dir: RunDir) -> dict:
    """Each stage's wall time in seconds, None for a stage without a record: ``scorer`` is the
    n-gram's fit and the LSTM's training together (its training seconds, kept across
    resumptions by its checkpoints); ``samplers`` the whole sampler stage (its samplers
    trained in parallel with ``--jobs``), summed over the commands that worked on it when
    interrupted ones were resumed (one killed outright loses its last half minute); the
    others, which start again when interrupted, as the command that finished them measured
    them."""

    def seconds(*stages):
        found = [run_dir.done(s) for s in stages]
        found = [f["seconds"] for f in found if f and f.get("seconds") is not None]
        return sum(found) if found else None

    return {
        "compile": seconds("compile"),
        "scorer": seconds("ngram", "scorer"),
        "samplers": seconds("samplers"),
        "evaluate": seconds("evaluate"),
        "smc": seconds("smc"),
    }


def _scorer(run_dir: RunDir, evaluation: Evaluation, kind: str) -> ScorerResults:
    """How the scorer was trained (``stages/scorer.json``: its IWAE bound, and ``curve``, the
    bound at each logged step; None for the n-gram, fitted exactly) and its test log Z: the IS
    lower bound, and the exact value under a WFST scorer."""
    log_z, structure = evaluation.log_z, evaluation.structure
    trained = run_dir.done("scorer") or {}  # none for the n-gram
    exact = evaluation.exact_log_z
    return ScorerResults(
        kind=kind,
        # scorer stage files written before the proposal was recorded used the bootstrap
        proposal=trained.get("proposal", "bootstrap") if kind == "lstm" else None,
        train_iwae=trained.get("train_iwae"),
        curve=trained.get("curve"),
        test_log_z=sum(log_z["per_pair"]) / len(log_z["per_pair"]),
        test_log_z_se=mean_and_se(log_z["per_pair"])[1],
        test_log_z_estimator=log_z["method"],
        test_log_z_is_lower_bound=True,
        test_log_z_pareto_k=log_z["pareto_k"],
        test_log_z_spread=log_z["spread"],
        test_log_z_exact=None if exact is None else exact["mean"],
        ngram_order=evaluation.ngram["order"],
        ngram_test_log_likelihood=evaluation.ngram["test_log_likelihood"],
        structure=structure,
        **(
            {}
            if structure is None
            else {
                "structure_share": log_z[structure],
                "structure_share_se": log_z[f"{structure}_se"],
            }
        ),
    )


def build_results(run_dir: RunDir) -> Results:
    """``results.json`` of a run that has finished its evaluate stage: from the stage files
    and ``run_dir.settings`` (``smc`` and ``lattices`` are None until those stages ran). A
    KeyError names what an evaluate stage file of an older nfst lacks."""
    settings = run_dir.settings
    evaluation = Evaluation.from_json(run_dir.done("evaluate"))
    run = settings["run"]
    return Results(
        task=run["task"],
        preset=run["preset"],
        seed=run["seed"],
        seeds=evaluation.seeds,
        reference=evaluation.reference,
        pairs=evaluation.pairs,
        validation_pairs=evaluation.validation_pairs,
        lattices=run_dir.done("compile"),
        scorer=_scorer(run_dir, evaluation, settings["preset"]["scorer"]["kind"]),
        samplers=_samplers(run_dir, evaluation),
        log_z={k: v for k, v in evaluation.log_z.items() if not k.startswith("per_pair")},
        smc=run_dir.done("smc"),
        wall_seconds=wall_seconds(run_dir),
        config=settings,
    )
