"""Comparing samplers over training seeds and held-out pairs (``nfst run --seeds N``).

A sampler trained from seeds s = 1..S and evaluated on the same P test pairs gives values
v[s, i] (e.g. its partial KL on pair i, or its difference from a reference sampler's). Their
mean m = (1/SP) Σ_{s,i} v[s, i] varies with the test pairs drawn and with the training seeds;
its standard error adds the two sources:

    SE² = SE_pairs² + SE_seeds²,
    SE_pairs = sd_i(v̄[·, i]) / √P   (v̄[·, i]: pair i's mean over seeds),
    SE_seeds = sd_s(v̄[s, ·]) / √S   (v̄[s, ·]: seed s's mean over pairs; 0 when S = 1).

The seed-by-pair noise enters both terms, so the SE is slightly conservative; with one seed it
is the usual paired SE over pairs. A gap is such a mean of paired differences, so what the
pairs share (hard pairs are hard for every sampler) cancels.

The reference a comparison measures gaps against is chosen on validation pairs (the lowest
validation partial KL), never on the test pairs the gaps are measured on: picking the best of
several equally good samplers on the test pairs would give every other sampler a positive gap.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import torch


def mean_over_seeds_and_pairs(values: Sequence[Sequence[float]]) -> dict:
    """``{"mean", "se", "se_pairs", "se_seeds"}`` of v[s, i] (S lists of P values; module
    docstring)."""
    v = torch.tensor(values, dtype=torch.float64)
    if v.dim() != 2 or v.numel() == 0:
        raise ValueError("expected S ≥ 1 lists of the same P ≥ 1 values")
    S, P = v.shape
    se_pairs = float(v.mean(0).std() / math.sqrt(P)) if P > 1 else 0.0
    se_seeds = float(v.mean(1).std() / math.sqrt(S)) if S > 1 else 0.0
    return {"mean": float(v.mean()), "se": math.hypot(se_pairs, se_seeds),
            "se_pairs": se_pairs, "se_seeds": se_seeds}


def gap(values: Sequence[Sequence[float]], reference: Sequence[Sequence[float]]) -> dict:
    """The mean paired difference values − reference (each S × P, the same seeds and pairs)
    with its SE (:func:`mean_over_seeds_and_pairs`): 0 ± 0 for the reference itself."""
    return mean_over_seeds_and_pairs(
        [[a - b for a, b in zip(row, ref)] for row, ref in zip(values, reference)])


def choose_reference(validation: Mapping[str, float]) -> str:
    """The sampler with the lowest validation partial KL (ties: the first listed)."""
    return min(validation, key=lambda name: validation[name])


def ordering(values: Mapping[str, Sequence[Sequence[float]]], z: float = 2.0) -> str:
    """The samplers from best (lowest mean) to worst, e.g. ``"swp ≈ swp-prefix < sws"``:
    ``<`` where the paired gap (:func:`gap`) between neighbours exceeds ``z`` standard
    errors, else ``≈`` (no ordering is claimed). ``values``: name -> S × P values."""
    names = sorted(values, key=lambda n: mean_over_seeds_and_pairs(values[n])["mean"])
    text = names[0]
    for better, worse in zip(names, names[1:]):
        g = gap(values[worse], values[better])
        text += f" {'<' if g['mean'] > z * g['se'] else '≈'} {worse}"
    return text
