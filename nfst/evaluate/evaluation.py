"""The whole evaluation's result, typed (:func:`~nfst.evaluate.whole.evaluate_all`):
:class:`Evaluation`, with a :class:`SamplerEvaluation` per sampler. Its JSON form
(:meth:`Evaluation.to_json`) is what ``nfst run`` writes to ``stages/evaluate.json``; a run's
``results.json`` (``nfst.experiment.schema``) builds on these classes, adding how each sampler
was trained. docs/reading-a-report.md gives every key.

The JSON helpers (:func:`fields_to_json`, :func:`missing_keys`, :func:`fields_from_json`)
serve both files: a dataclass's fields under their names (or its ``JSON_NAMES``), the share of
samples that agree with the task's generating structure (``structure_share`` ±
``structure_share_se``) under the structure's own name (e.g. ``generating_cipher`` ± ``_se``),
and, in the stage file's ``SPARSE`` form, a field with a default left out where it is None.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, fields
from typing import ClassVar, Optional

SHARE = ("structure_share", "structure_share_se")
"""The fields written under the structure's name instead of their own."""


def _json_names(cls) -> dict[str, str]:
    """Field -> its JSON key (``cls.JSON_NAMES``, else its name), for each field not written
    under the structure's name."""
    renamed = getattr(cls, "JSON_NAMES", {})
    return {f.name: renamed.get(f.name, f.name) for f in fields(cls) if f.name not in SHARE}


def _sparse(cls) -> set[str]:
    """Where ``cls.SPARSE``, its fields with a default: left out of its JSON form where None."""
    return {
        f.name
        for f in fields(cls)
        if getattr(cls, "SPARSE", False)
        and (f.default is not MISSING or f.default_factory is not MISSING)
    }


def fields_to_json(obj, structure: Optional[str]) -> dict:
    """A dataclass's fields by their JSON keys, the structure's share under its name; where
    ``SPARSE``, a field with a default left out where it is None."""
    sparse = _sparse(type(obj))
    out = {
        key: getattr(obj, name)
        for name, key in _json_names(type(obj)).items()
        if getattr(obj, name) is not None or name not in sparse
    }
    if structure is not None:
        out[structure], out[f"{structure}_se"] = obj.structure_share, obj.structure_share_se
    return out


def missing_keys(cls, data: dict, structure: Optional[str]) -> list[str]:
    """The JSON keys of ``cls`` that ``data`` lacks, but for those a JSON form may leave out
    (they keep their defaults): fields marked ``added`` in their metadata (absent from files
    written before them) and, where ``SPARSE``, fields with a default."""
    optional = _sparse(cls) | {f.name for f in fields(cls) if f.metadata.get("added")}
    keys = [key for name, key in _json_names(cls).items() if name not in optional]
    keys += [structure, f"{structure}_se"] if structure is not None else []
    return [key for key in keys if key not in data]


def fields_from_json(cls, data: dict, structure: Optional[str]):
    """``cls`` from its JSON form ``data`` (keys it does not know are ignored), which has every
    key of :func:`missing_keys`."""
    values = {name: data[key] for name, key in _json_names(cls).items() if key in data}
    if structure is not None:
        values |= dict(zip(SHARE, (data[structure], data[f"{structure}_se"])))
    return cls(**values)


def _read(cls, data: dict, structure: Optional[str]):
    """``cls`` from ``data``; a KeyError names the keys it lacks (a file of an older nfst)."""
    missing = missing_keys(cls, data, structure)
    if missing:
        raise KeyError(", ".join(missing))
    return fields_from_json(cls, data, structure)


@dataclass
class SamplerEvaluation:
    """One sampler's evaluation on the test pairs (``samplers.NAME``): training run 0's
    metrics (``nfst.evaluate.samplers.summarize``), the partial KL over every run and pair,
    the validation partial KL, the gap to the reference, the untrained sampler's, and the KL
    bounds (``nfst.evaluate.log_z``) and, with a WFST scorer, exact KLs
    (``nfst.evaluate.exact``)."""

    JSON_NAMES: ClassVar[dict[str, str]] = {"proposals": "examples"}
    SPARSE: ClassVar[bool] = True
    """``stages/evaluate.json``'s form: the proposals under ``examples``, and a field with a
    default left out where it does not apply (None: exact KLs without a WFST scorer, ...);
    ``results.json`` writes every field, under its own name."""

    partial_kl: float
    """Mean over training runs and test pairs (003:7), ± ``partial_kl_se``
    (``nfst.evaluate.paired_gaps``)."""
    partial_kl_se: float
    partial_kl_by_seed: list
    per_pair_partial_kl: list
    """Training run 0's, per test pair, as the metrics below."""
    per_pair_partial_kl_by_seed: list
    """S × P: per training run, per test pair."""
    validation_partial_kl: float
    validation_partial_kl_by_seed: list
    gap: dict
    """To the reference sampler, paired over runs and pairs
    (``nfst.evaluate.paired_gaps.mean_over_seeds_and_pairs``: ``mean``, ``se``, ...)."""
    untrained_partial_kl: float
    untrained_partial_kl_se: float
    untrained_per_pair_partial_kl: list
    exclusive_kl_lower_bound: float
    exclusive_kl_lower_bound_se: float
    untrained_exclusive_kl_lower_bound: float
    untrained_exclusive_kl_lower_bound_se: float
    ess: float
    ess_se: float
    expected_length: float
    expected_length_se: float
    pareto_k: Optional[float]
    pareto_k_over_threshold: float
    pareto_k_summary: dict
    proposals: list
    """The highest-weight sample of each of the first test pairs: ``x``, ``y``, ``proposal``,
    ``log_q``, ``log_p``."""
    most_probable: Optional[dict] = None
    """The sample of highest log q among the first test pair's (003 Tables 4–6)."""
    ess_wor: Optional[float] = None
    ess_wor_se: Optional[float] = None
    partial_kl_wor: Optional[float] = None
    partial_kl_wor_se: Optional[float] = None
    exclusive_kl: Optional[float] = None
    exclusive_kl_se: Optional[float] = None
    untrained_exclusive_kl: Optional[float] = None
    untrained_exclusive_kl_se: Optional[float] = None
    inclusive_kl: Optional[float] = None
    inclusive_kl_se: Optional[float] = None
    per_pair_inclusive_kl: Optional[list] = None
    structure_share: Optional[float] = None
    """The share of samples that agree with the structure, over runs and pairs."""
    structure_share_se: Optional[float] = None

    def to_json(self, structure: Optional[str]) -> dict:
        return fields_to_json(self, structure)

    @classmethod
    def from_json(cls, data: dict, structure: Optional[str]) -> SamplerEvaluation:
        """A KeyError names the keys ``data`` lacks (a file of an older nfst)."""
        return _read(cls, data, structure)


@dataclass
class Evaluation:
    """The whole evaluation: every sampler's (:class:`SamplerEvaluation`) and the scorer's
    test log Ẑ, the n-gram's test log-likelihood and, with a WFST scorer, exact log Z."""

    pairs: int
    """Test pairs."""
    k: int
    """Samples per pair."""
    seed: int
    """Training run 0's test draws' seed (``stream_seed(seed, "test")``)."""
    samplers: dict[str, SamplerEvaluation]
    seeds: list[int]
    """The training runs' indices."""
    reference: str
    """The sampler of lowest validation partial KL (``nfst.evaluate.paired_gaps``)."""
    validation_pairs: int
    structure: Optional[str]
    """The generating structure's name, None without one."""
    log_z: dict
    """``nfst.evaluate.log_z.estimate_log_z``'s result, with ``error`` under a WFST scorer."""
    ngram: dict
    """``order`` and ``test_log_likelihood`` (exact, mean over test pairs)."""
    exact_log_z: Optional[dict] = None
    """With a WFST scorer, ``mean`` and ``per_pair`` (``nfst.evaluate.exact``); else None,
    and not written."""

    SPARSE: ClassVar[bool] = True

    def to_json(self) -> dict:
        return fields_to_json(self, None) | {
            "samplers": {n: s.to_json(self.structure) for n, s in self.samplers.items()}
        }

    @classmethod
    def from_json(cls, data: dict) -> Evaluation:
        """From ``stages/evaluate.json`` (keys it does not know, e.g. ``seconds``, ignored); a
        KeyError names the keys it lacks (a file of an older nfst)."""
        evaluation = _read(cls, data, None)
        evaluation.samplers = {
            n: SamplerEvaluation.from_json(s, data["structure"])
            for n, s in data["samplers"].items()
        }
        return evaluation
