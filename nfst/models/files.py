"""Samplers and scorers as files: :func:`save_sampler` / :func:`load_sampler` and
:func:`save_scorer` / :func:`load_scorer` (also ``nfst.save_sampler`` and so on).

A file holds everything needed to rebuild the model without the task or the run that trained
it: a sampler's registered name, its :class:`~nfst.models.samplers.Vocabulary` (marks and the
symbols of x and y), its ``SamplerConfig`` and its parameters; a scorer's kind (``lstm``,
``ngram``, ``arc-factored``), its sizes and its parameters. Parameters are stored on the CPU,
in their dtype. ``nfst run`` writes its ``samplers/NAME.pt``, ``scorer.pt`` and ``ngram.pt``
this way.

The format is ``nfst.runtime.storage``'s: an 8-byte header ``NFST\\0v1\\n``, the SHA-256 of the
payload, then the payload, a pickle (not a ``torch.save`` file: ``torch.load`` cannot read it).
A truncated or overwritten file fails its check and raises CorruptCacheError; a file of
another kind raises NfstError. Like any pickle, open only files you trust.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import torch

from ..errors import CorruptCacheError, NfstError
from ..runtime import storage
from .ngram import NgramScorer
from .samplers import SAMPLERS, Sampler, SamplerConfig, Vocabulary
from .scorer import ArcFactoredScorer, LSTMScorer, Scorer

VERSION = 1
"""The layout of the payload, recorded in it."""


def _state(model: torch.nn.Module) -> dict:
    return {key: value.detach().cpu() for key, value in model.state_dict().items()}


def _dtype(model: torch.nn.Module) -> str:
    floats = [p.dtype for p in model.parameters() if p.is_floating_point()]
    return str(floats[0] if floats else torch.get_default_dtype()).removeprefix("torch.")


def _read(path: str | os.PathLike, model: str) -> dict:
    """The payload of a ``model`` file ("sampler" or "scorer"), or a clear error."""
    try:
        payload = storage.load(path)
    except CorruptCacheError as exc:
        raise CorruptCacheError(
            exc.args[0],
            f"give a {model} file that nfst.save_{model} or "
            f"`nfst run` wrote; retrain the model if it was damaged",
        ) from None
    if not isinstance(payload, dict) or "model" not in payload:
        if isinstance(payload, dict) and "state" in payload:  # nfst run's files before 0.1
            raise NfstError(
                f"{path}: a {model} file of an older nfst, without its vocabulary and settings",
                "open it through its run, "
                "nfst.experiment.Run.open(RUN_DIR), or train the model again",
            )
        raise NfstError(
            f"{path}: not an nfst model file",
            f"give a file that nfst.save_{model} or `nfst run` wrote",
        )
    if payload["model"] != model:
        raise NfstError(
            f"{path}: a {payload['model']} file, not a {model} file",
            f"read it with nfst.load_{payload['model']}",
        )
    if payload["version"] > VERSION:
        raise NfstError(
            f"{path}: written by a newer nfst (layout {payload['version']})",
            "upgrade nfst to read it",
        )
    return payload


def save_sampler(sampler: Sampler, path: str | os.PathLike) -> None:
    """Write ``sampler`` (one that :func:`~nfst.models.samplers.make_sampler` builds, so that
    it has a registered name and a vocabulary) to ``path``, atomically."""
    if SAMPLERS.get(sampler.name) is not type(sampler) or sampler.vocabulary is None:
        raise ValueError(
            f"only a sampler built by make_sampler can be saved, not "
            f"{type(sampler).__name__} (name {sampler.name!r})"
        )
    vocabulary = sampler.vocabulary
    storage.save(
        path,
        {
            "model": "sampler",
            "version": VERSION,
            "name": sampler.name,
            "marks": vocabulary.marks,
            "symbols": vocabulary.symbols,
            "config": dataclasses.asdict(sampler.config),
            "dtype": _dtype(sampler),
            "state": _state(sampler),
        },
        durable=True,
    )


def load_sampler(path: str | os.PathLike, device: torch.device | str = "cpu") -> Sampler:
    """The sampler saved in ``path`` by :func:`save_sampler` (or ``nfst run``), on
    ``device``, in eval mode."""
    payload = _read(path, "sampler")
    if payload["name"] not in SAMPLERS:
        raise NfstError(
            f"{path}: a {payload['name']} sampler, which this nfst does not know",
            f"known samplers: {', '.join(SAMPLERS)}",
        )
    vocabulary = Vocabulary(payload["marks"], payload["symbols"])
    sampler = SAMPLERS[payload["name"]](vocabulary, SamplerConfig(**payload["config"]))
    return _filled(sampler, payload, device, path)


def _filled(model, payload: dict, device, path) -> Any:
    model = model.to(getattr(torch, payload["dtype"]))
    load_state(model, payload["state"], path)
    return model.to(device).eval()


def load_state(model: torch.nn.Module, state: dict, path: str | os.PathLike) -> None:
    """``model.load_state_dict(state)``, the parameters read from ``path``; an error that says
    so, rather than torch's, where their sizes do not fit the model: a vocabulary of another
    size, i.e. a model trained on another topology (its marks or symbols changed since)."""
    mine = model.state_dict()
    misfits = [
        f"{key} {tuple(value.shape)} in the file, {tuple(mine[key].shape)} here"
        for key, value in state.items()
        if key in mine and tuple(value.shape) != tuple(mine[key].shape)
    ]
    if misfits:
        raise NfstError(
            f"{path}: its parameters do not fit this model ({misfits[0]}"
            f"{f', and {len(misfits) - 1} more' if len(misfits) > 1 else ''}): "
            "it was trained on another vocabulary",
            "the topology's marks or "
            "symbols changed since the model was trained: train it again, in a "
            "new run directory",
        )
    model.load_state_dict(state)


def save_scorer(scorer: Scorer, path: str | os.PathLike) -> None:
    """Write an :class:`~nfst.models.scorer.LSTMScorer`, an
    :class:`~nfst.models.ngram.NgramScorer` or an
    :class:`~nfst.models.scorer.ArcFactoredScorer` to ``path``, atomically."""
    if isinstance(scorer, LSTMScorer):
        kind, sizes = (
            "lstm",
            {
                "vocab_size": scorer.vocab_size,
                "hidden": scorer.lstm.hidden_size,
                "layers": scorer.lstm.num_layers,
                "dropout": scorer.drop.p,
            },
        )
    elif isinstance(scorer, NgramScorer):
        kind, sizes = "ngram", {"vocab_size": scorer.vocab_size, "order": scorer.order}
    elif isinstance(scorer, ArcFactoredScorer):
        kind, sizes = "arc-factored", {"vocab_size": scorer.vocab_size}
    else:
        raise ValueError(
            f"cannot save a {type(scorer).__name__}: only the LSTM, n-gram and arc-factored scorers"
        )
    storage.save(
        path,
        {
            "model": "scorer",
            "version": VERSION,
            "kind": kind,
            "sizes": sizes,
            "dtype": _dtype(scorer),
            "state": _state(scorer),
        },
        durable=True,
    )


def load_scorer(path: str | os.PathLike, device: torch.device | str = "cpu") -> Scorer:
    """The scorer saved in ``path`` by :func:`save_scorer` (or ``nfst run``), on
    ``device``, frozen (no gradients, eval mode)."""
    payload = _read(path, "scorer")
    kind, sizes, state = payload["kind"], payload["sizes"], payload["state"]
    if kind == "lstm":
        scorer = LSTMScorer(**sizes)
    elif kind == "ngram":
        scorer = NgramScorer(**sizes, histories=state.get("histories"))
    elif kind == "arc-factored":
        scorer = ArcFactoredScorer(torch.zeros(sizes["vocab_size"] + 1))
    else:
        raise NfstError(
            f"{path}: a scorer of kind {kind!r}, which this nfst does not know",
            "the kinds are lstm, ngram and arc-factored",
        )
    return _filled(scorer, payload, device, path).freeze()
