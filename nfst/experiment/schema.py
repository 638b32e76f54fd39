"""The schema of a run's ``results.json``, typed and versioned: :class:`Results`, with a
:class:`ScorerResults` and a :class:`SamplerResults` per sampler, which is the sampler's
evaluation (``nfst.evaluate.evaluation.SamplerEvaluation``) and its training
(docs/reading-a-report.md gives every key). ``nfst.experiment.results`` builds it from the
stage files; the report and the results page's summaries read it through
:meth:`Results.from_json`, which refuses a file of another :data:`SCHEMA_VERSION` with a hint,
so readers need no defaults for older files.

Every key is written, null where it does not apply (e.g. ``exclusive_kl`` unless the scorer
is a WFST). The share of samples that agree with the task's generating structure is written
under the structure's own name (``scorer.structure``, e.g. ``generating_cipher``), ± ``_se``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import ClassVar, Optional

from ..errors import ReportError
from ..evaluate.evaluation import SamplerEvaluation, fields_from_json, fields_to_json, missing_keys

SCHEMA_VERSION = 2
"""2: typed and versioned, every key written, the structure named (``scorer.structure``);
1: results.json before its version was recorded."""


def _from_json(cls, data: dict, structure: Optional[str], where: str):
    """``cls`` from its JSON form ``data``; a :class:`SchemaError` naming what is missing."""
    missing = missing_keys(cls, data, structure)
    if missing:
        raise SchemaError(f"results.json: {where} lacks {', '.join(missing)}")
    return fields_from_json(cls, data, structure)


class SchemaError(ReportError):
    """A results.json this nfst does not read: another schema version, or keys missing."""

    hint = (
        "rebuild it: delete RUN/results.json and run `nfst report RUN` (it builds "
        "results.json's content from the stage files); if that says the evaluate stage is "
        "older, delete RUN/stages/evaluate.json and RUN/stages/smc.json and finish the run "
        "with `nfst run --run-dir RUN`: its trained models are reused"
    )


@dataclass
class ScorerResults:
    """How the scorer was trained and how well it explains the test pairs."""

    kind: str
    """``lstm`` or ``ngram``."""
    proposal: Optional[str]
    """What proposed the LSTM's training paths; None for the n-gram."""
    train_iwae: Optional[float]
    """The IWAE bound on the last training minibatches; None for the n-gram."""
    curve: Optional[dict]
    """``step`` and ``iwae``: the training curve; None for the n-gram."""
    test_log_z: float
    test_log_z_se: float
    test_log_z_estimator: str
    test_log_z_is_lower_bound: bool
    test_log_z_pareto_k: dict
    test_log_z_spread: Optional[float]
    test_log_z_exact: Optional[float]
    """Exact mean log Z over the test pairs with a WFST scorer, else None."""
    ngram_order: int
    ngram_test_log_likelihood: float
    structure: Optional[str]
    """The name of the task's generating structure (``Task.structure``), None without one."""
    structure_share: Optional[float] = None
    """The posterior's share on paths that agree with it (written under its name)."""
    structure_share_se: Optional[float] = None

    def to_json(self) -> dict:
        return fields_to_json(self, self.structure)

    @classmethod
    def from_json(cls, data: dict) -> "ScorerResults":
        if "structure" not in data:
            raise SchemaError("results.json: scorer lacks structure")
        return _from_json(cls, data, data["structure"], "scorer")


@dataclass(kw_only=True)
class SamplerResults(SamplerEvaluation):
    """One sampler's results (docs/reading-a-report.md: ``samplers.NAME``): its evaluation
    (:class:`~nfst.evaluate.evaluation.SamplerEvaluation`) and how it was trained."""

    JSON_NAMES: ClassVar[dict[str, str]] = {}
    SPARSE: ClassVar[bool] = False
    """Every field written, under its own name (the evaluation's stage file is sparse)."""

    train_seconds: Optional[float]
    stopped_by: Optional[str]
    steps: Optional[int]
    best_step: Optional[int]
    curve: dict
    training: dict
    sleep: Optional[dict] = field(default=None, metadata={"added": True})
    """Sleep training (``sampler.sleep_steps``, ``sampler.sleep_share``): its ``setting``
    (a number or ``auto``), the ``steps`` of its sleep phase and what ended it
    (``stopped_by``: steps, patience or cap), the best validation partial KL in it, its
    share, the sleep phase's seconds, the triples' draw (``triples`` kept of ``drawn``,
    ``acceptance``, x, y and ω lengths beside the training pairs') and the triples whose
    lattice failed; None without."""
    training_by_seed: Optional[list] = field(default=None, metadata={"added": True})
    """One record per training seed (``seeds``), seed 0's first: ``train_seconds``,
    ``stopped_by``, ``steps``, ``best_step`` and ``sleep``, the fields above that are seed
    0's alone."""

    @classmethod
    def from_json(cls, data: dict, structure: Optional[str], name: str = "") -> "SamplerResults":
        return _from_json(cls, data, structure, f"sampler {name}")


@dataclass
class Results:
    """A run's ``results.json`` (docs/reading-a-report.md: top level)."""

    task: str
    preset: str
    seed: int
    seeds: list
    reference: str
    pairs: int
    validation_pairs: int
    lattices: Optional[dict]
    scorer: ScorerResults
    samplers: dict
    """Name -> :class:`SamplerResults`."""
    log_z: dict
    smc: Optional[dict]
    wall_seconds: dict
    config: dict
    schema_version: int = field(default=SCHEMA_VERSION)

    def to_json(self) -> dict:
        structure = self.scorer.structure
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        return {
            "schema_version": self.schema_version,
            **out,
            "scorer": self.scorer.to_json(),
            "samplers": {n: s.to_json(structure) for n, s in self.samplers.items()},
        }

    @classmethod
    def from_json(cls, data: dict) -> "Results":
        version = data.get("schema_version", 1)  # 1: written before versions were recorded
        if version != SCHEMA_VERSION:
            raise SchemaError(
                f"results.json: schema version {version}; this nfst reads version {SCHEMA_VERSION}"
            )
        top = _from_json(cls, {**data, "scorer": None, "samplers": None}, None, "the top level")
        top.scorer = ScorerResults.from_json(data["scorer"])
        top.samplers = {
            n: SamplerResults.from_json(s, top.scorer.structure, n)
            for n, s in data["samplers"].items()
        }
        return top
