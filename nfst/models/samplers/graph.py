"""The walk with static shapes, replayed as a CUDA graph on a GPU (``Sampler.sample``'s walk
for the samplers that score in one pass).

A walk of N walkers takes up to cap + 1 steps (cap: the batch's longest path, 86 marks on 16
cipher lattices), each some 40–100 operators on small tensors. On a GPU each of their kernels
runs for a few microseconds and takes longer to launch, so a walk launched step by step is
launch-bound. This walk keeps every shape fixed from step to step and never waits for the
device inside a step:

- every walker computes its row at every step (``Walk.static``: no selection of the walkers
  with a choice), and a walker that has stopped chooses STOP again, at no cost;
- the Exp(1) noise of every step's draw (``choices.choose``) is drawn before the walk,
  (cap + 1, N, D + 1) in one call; on a CPU these are the numbers that one draw per step
  gives, so the walk draws the eager walk's samples (on a GPU, other numbers);
- step t writes its states, choices, arcs and log q into column t of (N, cap + 1) buffers, t a
  counter on the device, and overwrites the walk's tensors in place.

Step 0 runs as it is: it draws the record's dropout masks and forms its per-walk constants,
which later steps only read. On a GPU the step is then captured once as a CUDA graph
(``torch.cuda.CUDAGraph``, on a side stream that step 0 warmed up) and replayed for steps
1, 2, ...; one host sync every ``CHUNK`` steps asks whether a walker is still alive. If the
capture fails, a warning says so once and the walk goes on launching the same steps itself.
A graph lives for one walk (the batch, the context and the record are the walk's); the
graphs of successive walks share one memory pool.
"""

from __future__ import annotations

import warnings
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, Callable, Optional

import torch
from torch import Tensor

from ...dp.batch import LatticeBatch
from ...errors import PathTooLongError
from .choices import choose
from .record import WalkRecord
from .route import Route
from .walk import Walk

CHUNK = 16
"""Steps between two checks whether a walker is still alive, on a GPU (each check waits
for the device)."""

_GRAPHS: dict[torch.device, torch.cuda.CUDAGraph] = {}
"""The last graph captured on each device, kept so that the next capture shares its pool."""
_STREAMS: dict[torch.device, torch.cuda.Stream] = {}
"""The side stream of each device that walks are captured on (one, so that the pool's memory
freed by one walk serves the next: the allocator reuses a block on its own stream only)."""
_FAILED: set[torch.device] = set()
"""Devices where a capture failed: their walks launch each step themselves."""


@dataclass
class Tape:
    """Column t of each buffer: what step t of the walk saw and did, for N walkers."""

    states: Tensor
    """(N, T) long: the state before the step."""
    choices: Tensor
    """(N, T) long: the column chosen (STOP = D)."""
    arcs: Tensor
    """(N, T) long: the arc taken, -1 for STOP."""
    log_q: Tensor
    """(N, T): log q of the choice, 0 once the walker has stopped."""
    t: Tensor
    """(1,) long: the next step's column (on the device, so that a replayed step advances it)."""

    @staticmethod
    def empty(walkers: int, steps: int, noise: Tensor) -> "Tape":
        longs = torch.zeros(walkers, steps, dtype=torch.long, device=noise.device)
        return Tape(
            longs,
            longs.clone(),
            longs.clone(),
            noise.new_zeros(walkers, steps),
            torch.zeros(1, dtype=torch.long, device=noise.device),
        )


def static_walk(
    sampler: Any,
    batch: LatticeBatch,
    context: Any,
    lattice: Tensor,
    k: int,
    generator: Optional[torch.Generator],
    cap: int,
    record: WalkRecord,
    capture: Optional[bool] = None,
) -> tuple[Route, Tensor, Tensor]:
    """``Sampler._walk`` with static shapes (see the module docstring): the paths' route,
    their arcs (N, L) and the log q of each choice (N, L + 1) as the walk computed it.
    ``record`` must be static (``WalkRecord(N, static=True)``); call under ``no_grad``.
    ``capture``: whether to try capturing the step as a CUDA graph (None: on a GPU)."""
    device = lattice.device
    cuda = device.type == "cuda"
    capture = (cuda if capture is None else capture) and device not in _FAILED
    stream = None
    if capture and cuda:  # the capture's stream, warmed up by step 0
        if device not in _STREAMS:
            _STREAMS[device] = torch.cuda.Stream(device)
        stream = _STREAMS[device]
        stream.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(stream) if stream is not None else nullcontext():
        walk = sampler.start(batch, context, lattice, record)
        log_probs = sampler.log_probs(batch, context, walk)
        noise = torch.empty(
            (cap + 1,) + log_probs.shape, dtype=log_probs.dtype, device=device
        ).exponential_(generator=generator)
        tape = Tape.empty(len(lattice), cap + 1, noise)

        def step(log_probs: Optional[Tensor] = None) -> None:
            _step(sampler, batch, context, walk, noise, tape, log_probs)

        step(log_probs)
        _run(step, walk, cap + 1, capture)
    if stream is not None:
        torch.cuda.current_stream(device).wait_stream(stream)
    if bool(walk.alive.any()):
        raise PathTooLongError(f"{sampler.name}: a sampled path exceeded max_length={cap} marks")
    L = int(walk.length.max())
    arcs = tape.arcs[:, :L]
    route = Route(
        lattice,
        tape.states[:, : L + 1],
        tape.choices[:, : L + 1],
        batch.marks_of(arcs),
        walk.length,
        per_lattice=k,
    )
    return route, arcs, tape.log_q[:, : L + 1]


def _run(step: Callable[[], None], walk: Walk, steps: int, capture: bool) -> None:
    """Steps 1, 2, ... of a walk whose step 0 is done, until no walker is alive or ``steps``
    are done: with ``capture``, replays of a graph of ``step`` captured on the current stream
    if capturing succeeds. Whether a walker is alive is asked every step on a CPU, every
    CHUNK steps on a GPU (a question waits for the device)."""
    every = 1 if walk.state.device.type == "cpu" else CHUNK
    graph, done = None, 1
    while done < steps and bool(walk.alive.any()):
        if capture and graph is None:
            graph = _capture(step, walk.state.device)
            capture = graph is not None
        for _ in range(min(every, steps - done)):
            graph.replay() if graph is not None else step()
        done += every


def _capture(step: Callable[[], None], device: torch.device) -> Optional[torch.cuda.CUDAGraph]:
    """A CUDA graph of one ``step``, captured on the current stream (which ran step 0, so that
    every library handle and workspace the step uses exists), or None if capturing fails."""
    previous = _GRAPHS.get(device)
    try:
        graph = torch.cuda.CUDAGraph()
        graph.capture_begin(pool=previous.pool() if previous is not None else None)
        try:
            step()
        finally:
            graph.capture_end()
    except Exception as error:  # noqa: BLE001 — whatever failed, the walk can go on
        _FAILED.add(device)
        warnings.warn(
            f"capturing the walk as a CUDA graph failed on {device} ({error}); "
            "walks there launch each step instead",
            RuntimeWarning,
            stacklevel=2,
        )
        return None
    _GRAPHS[device] = graph
    return graph


def _step(
    sampler: Any,
    batch: LatticeBatch,
    context: Any,
    walk: Walk,
    noise: Tensor,
    tape: Tape,
    log_probs: Optional[Tensor] = None,
) -> None:
    """One step of every walker, in place: column ``tape.t`` of the tape, the walk's tensors
    overwritten with the walk after it. ``log_probs``: this step's, if already computed."""
    if log_probs is None:
        log_probs = sampler.log_probs(batch, context, walk)
    t = tape.t
    choice, arc = choose(batch, walk, log_probs, noise=noise.index_select(0, t)[0])
    log_q = log_probs.gather(1, choice[:, None])[:, 0]
    log_q = torch.where(walk.alive, log_q, torch.zeros_like(log_q))
    for columns, column in (
        (tape.states, walk.state),
        (tape.choices, choice),
        (tape.arcs, arc),
        (tape.log_q, log_q),
    ):
        columns.index_copy_(1, t, column[:, None])
    moved = sampler.advance(batch, context, walk, choice)
    for name in ("state", "alive", "length", "last_mark", "hidden"):
        _overwrite(getattr(walk, name), getattr(moved, name))
    t.add_(1)


def _overwrite(into: Any, value: Any) -> None:
    """Copy ``value`` into ``into``, tensor by tensor through tuples and lists (the walk's
    recurrent state); a tensor that is the same object (a per-walk constant) stays."""
    if isinstance(into, Tensor):
        if into is not value:
            into.copy_(value)
    elif isinstance(into, (tuple, list)):
        for i, v in zip(into, value):
            _overwrite(i, v)
    elif into is not None or value is not None:
        raise TypeError(f"cannot overwrite a walk's {type(into).__name__} in place")
