"""Proposal samplers q_φ(ω | T_{x,y}) (003 §3), by name:

- ``nolookahead``: the mark prefix only (003:16)
- ``swa``: prefix GRU attending over a BiGRU encoding of x # y^R (003:2–3)
- ``sws``: prefix GRU plus right-to-left GRUs over the unaligned suffixes of x and y (003:4)
- ``sws-mlp``: SWS plus an MLP over [h; enc_x; enc_y], so x and y interact (ours)
- ``swp``: a WFST on the lattice, weights from Algorithm 1 (003:5)
- ``swp-prefix``: SWP's transition probabilities re-weighted by the mark prefix (003 §3.3)
- ``swp-sws``: SWP's transition probabilities times SWS's local evidence (ours)

``make_sampler(name, Vocabulary.of(T), config)`` builds one for the lattices of an MFST T: the
vocabulary (``symbols``) holds T's marks and the symbols of x and y, which the samplers that
read x and y (``reads_symbols``) embed; ``nfst.models.files`` saves a sampler with its name,
vocabulary and config, and loads it back. A new sampler subclasses :class:`Sampler` (its
interface is in ``base``) and registers with :func:`register_sampler`; the names exported here
are what one needs.
"""

from __future__ import annotations

from typing import Optional

from .base import Sampler
from .choices import choosing, forced_log_probs, legal_log_softmax, with_forced
from .config import SamplerConfig
from .dropout import WalkDropout
from .hybrids import SWPSWS, SWPPrefix
from .nolookahead import NoLookahead
from .prefix import PrefixGRU
from .record import WalkRecord
from .route import Route, Rows, route_of_arcs
from .swa import SWA
from .swp import SWP
from .sws import SWS
from .sws_mlp import SWSMLP
from .symbols import Vocabulary
from .walk import Paths, Walk

SAMPLERS: dict[str, type[Sampler]] = {}


def register_sampler(cls: type[Sampler]) -> type[Sampler]:
    """Class decorator: make ``cls`` available to :func:`make_sampler` under ``cls.name``."""
    if not cls.name:
        raise ValueError(f"{cls.__qualname__} needs a non-empty class attribute `name`")
    SAMPLERS[cls.name] = cls
    return cls


def make_sampler(
    name: str, vocabulary: Vocabulary, config: Optional[SamplerConfig] = None
) -> Sampler:
    """A new sampler ``name`` over ``vocabulary`` (``Vocabulary.of(T)``: T's marks, and the
    symbols of x and y that ``swa``, ``sws`` and ``swp-sws`` read; building one of those from
    a vocabulary without symbols raises ValueError)."""
    if name not in SAMPLERS:
        raise KeyError(f"no sampler named {name!r}; known samplers: {', '.join(SAMPLERS)}")
    if not isinstance(vocabulary, Vocabulary):
        raise TypeError(
            f"make_sampler takes a Vocabulary (Vocabulary.of(T) for the MFST T), "
            f"not {type(vocabulary).__name__}"
        )
    return SAMPLERS[name](vocabulary, config)


for _cls in (NoLookahead, SWA, SWS, SWSMLP, SWP, SWPPrefix, SWPSWS):
    register_sampler(_cls)

__all__ = [
    "NoLookahead",
    "Paths",
    "PrefixGRU",
    "Route",
    "Rows",
    "SAMPLERS",
    "SWA",
    "SWP",
    "SWPPrefix",
    "SWPSWS",
    "SWS",
    "SWSMLP",
    "Sampler",
    "SamplerConfig",
    "Vocabulary",
    "Walk",
    "WalkDropout",
    "WalkRecord",
    "choosing",
    "forced_log_probs",
    "legal_log_softmax",
    "make_sampler",
    "register_sampler",
    "route_of_arcs",
    "with_forced",
]
