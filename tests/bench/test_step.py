"""``nfst bench step``: the operator counter sees the forward and backward passes and the host
waits, and the bench reports counts and the paper preset's time beside its step times."""

import pytest
import torch

from nfst.bench.common import OpCounter
from nfst.bench.step import SAMPLER_NAMES, bench_step
from nfst.experiment.config import DEFAULT_SAMPLERS


def test_op_counter_counts_forward_backward_and_host_waits():
    x = torch.randn(5, requires_grad=True)
    with OpCounter() as forward:
        y = (x * 2).exp().sum()  # mul, exp, sum
    assert (forward.ops, forward.syncs) == (3, 0)
    with OpCounter() as both:
        (x * 2).exp().sum().backward()
    assert both.ops >= 2 * forward.ops and both.syncs == 0
    with OpCounter() as views:
        x.view(5, 1).t().detach()
    assert views.ops == 0  # views move no data
    with OpCounter() as waits:
        y.item(), x[torch.tensor([0, 1])], x[x > 0]  # the integer index does not wait
    assert waits.syncs == 2


def test_bench_step_reports_operators_and_the_paper_preset(capsys):
    result = bench_step(lattices=2, k=2, dims=(256,), scorer_hidden=8, repeat=1)
    at_d = result["d256"]
    for key in (
        "ms_per_step",
        "ms_sampler_only",
        "over_swp",
        "ops_per_step",
        "syncs_per_step",
        "ms_per_sleep_step",
    ):
        assert set(at_d[key]) == set(SAMPLER_NAMES)
    assert all(n > 1000 for n in at_d["ops_per_step"].values())  # a walk of dozens of steps
    assert all(ms > 0 for ms in at_d["ms_per_sleep_step"].values())
    assert result["triples"]["ms_per_string_drawn"] > 0
    assert result["triples"]["ms_per_lattice_compiled"] > 0
    paper = result["paper_preset"]
    assert set(paper["hours_per_sampler"]) == set(DEFAULT_SAMPLERS)
    for name, hours in paper["hours_per_sampler"].items():
        assert hours == pytest.approx(20_000 * at_d["ms_per_step"][name] / 3.6e6, abs=0.01)
    assert paper["scorer_steps"] == 2_000 and paper["ms_per_scorer_step"] > 0
    assert paper["hours_per_task"] == pytest.approx(
        sum(paper["hours_per_sampler"].values()) + paper["scorer_hours"], abs=0.02
    )
    assert "up to 20,000 steps per sampler" in capsys.readouterr().out
