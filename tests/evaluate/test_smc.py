import json
import math

import pytest

import nfst.evaluate.smc as smc_module
from nfst.dp.passes import log_partition
from nfst.evaluate.pareto import pareto_k
from nfst.evaluate.smc import evaluate_smc, format_table, methods
from nfst.experiment.report import plot_offset_kl
from nfst.smc.lookahead import BetaLookahead
from tests.helpers.brute import lattice_paths
from tests.helpers.lattices import small_batch
from tests.helpers.samplers import exact_sampler
from tests.helpers.scorers import random_scorer


@pytest.fixture(scope="module")
def evaluated_and_drawn():
    """Every method at M = 4 and 32 on the small lattices (5 to 32 paths each), with the exact
    posterior as the trained sampler and the exact lookahead; and the particles each method's
    draws returned, {name: {M: [Particles of each run]}} (recorded by wrapping the draws)."""
    batch = small_batch()
    scorer = random_scorer(len(batch.mark_vocab), seed=0, scale=0.5, normalised=True)
    log_z = log_partition(batch, scorer.arc_weights(batch), scorer.final_weights(batch)).detach()
    drawn: dict = {}

    def recording_methods(*args, **kwargs):
        def record(name, draw):
            def recorded(batch, M, generator):
                particles = draw(batch, M, generator)
                drawn.setdefault(name, {}).setdefault(M, []).append(particles)
                return particles

            return recorded

        return {name: record(name, draw) for name, draw in methods(*args, **kwargs).items()}

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(smc_module, "methods", recording_methods)
        result = evaluate_smc(
            exact_sampler(batch, scorer),
            scorer,
            batch.lattices,
            particles=(4, 32),
            runs=2,
            lookahead=BetaLookahead.exact(scorer),
            seed=0,
        )
    return result, log_z, drawn


@pytest.fixture(scope="module")
def evaluated(evaluated_and_drawn):
    return evaluated_and_drawn[:2]


def test_result_is_json_with_every_method_and_M(evaluated):
    result, _ = evaluated
    assert json.loads(json.dumps(result)) == result
    assert result["M"] == [4, 32] and result["pairs"] == 4
    assert set(result["methods"]) == {
        "PF",
        "PF:R",
        "PS",
        "PS:R",
        "BEAM",
        "IS[free-weights]",
        "PS:R[free-weights]",
        "IS-WOR[free-weights]",
        "ABSTRACT",
    }
    for res in result["methods"].values():
        assert all(len(v) == 2 for v in res.values())
    assert "PF" in format_table(result)


def test_offset_kl_is_a_kl_to_p_restricted_to_the_paths_drawn(evaluated):
    """z sums p̃ over every path drawn, so the offset KL is KL(p̂ ‖ p restricted to 𝒴) ≥ 0; a
    beam as wide as the largest lattice (32 paths) finds every path: its p̂ is p itself
    (offset KL 0) and its mass is Z."""
    result, log_z = evaluated
    for res in result["methods"].values():
        assert min(res["offset_kl"]) >= -1e-9
    beam = result["methods"]["BEAM"]
    assert beam["offset_kl"][1] == pytest.approx(0.0, abs=1e-9)
    assert beam["log_z"][1] == pytest.approx(log_z.mean().item(), abs=1e-9)
    assert beam["partial_kl"][1] == pytest.approx(-log_z.mean().item(), abs=1e-9)


def test_exact_proposal_and_lookahead_have_equal_weights_and_exact_log_z(evaluated):
    result, log_z = evaluated
    exact = result["methods"]["PS:R[free-weights]"]
    assert exact["ess"] == pytest.approx([4.0, 32.0])
    assert exact["log_z"] == pytest.approx([log_z.mean().item()] * 2, abs=1e-9)
    assert exact["log_z_var"] == pytest.approx([0.0, 0.0], abs=1e-12)
    # the smoother of 000 with the exact C proposes from the posterior too (000:26)
    assert result["methods"]["PS"]["log_z_var"] == pytest.approx([0.0, 0.0], abs=1e-12)


def test_plot_writes_a_png(evaluated, tmp_path):
    pytest.importorskip("matplotlib")
    result, _ = evaluated
    path = plot_offset_kl(result, tmp_path / "smc.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_distinct_methods_find_every_path_when_m_exceeds_their_number(evaluated):
    """M = 32 ≥ every lattice's number of paths: IS-WOR and ABSTRACT draw each path once with
    inclusion probability 1, so p̂ = p (offset KL 0) and Ẑ = Z; scoring them costs one
    scorer call per distinct mark prefix of each lattice's paths."""
    result, log_z = evaluated
    lattices = small_batch().lattices
    calls = sum(
        len(
            {
                tuple(lat.arc_mark[p[:t]].tolist())
                for p in lattice_paths(lat)
                for t in range(len(p) + 1)
            }
        )
        for lat in lattices
    ) / len(lattices)
    for name in ("IS-WOR[free-weights]", "ABSTRACT"):
        res = result["methods"][name]
        assert res["offset_kl"][1] == pytest.approx(0.0, abs=1e-9)
        assert res["log_z"][1] == pytest.approx(log_z.mean().item(), abs=1e-9)
        assert res["scorer_calls"][1] == pytest.approx(calls, abs=0.051)  # rounded to 0.1
    for res in result["methods"].values():
        assert all(c > 0 for c in res["scorer_calls"])


def dedup_ess_of(particles, b: int) -> float:
    """(Σ p̂)² / Σ p̂² of lattice b's particles, p̂(ω) the normalised weights of the particles
    on path ω added up (computed here, apart from ``merge_duplicates``)."""
    merged: dict[tuple, float] = {}
    for row, n, w in zip(
        particles.arcs[b].tolist(),
        particles.lengths[b].tolist(),
        particles.weights[b].double().tolist(),
    ):
        merged[tuple(row[:n])] = merged.get(tuple(row[:n]), 0.0) + w
    return sum(merged.values()) ** 2 / sum(w * w for w in merged.values())


def test_reported_dedup_ess_is_that_of_the_merged_particles(evaluated_and_drawn):
    """Each method's reported dedup ESS at each M is the mean over runs and pairs of the ESS of
    its own particles with identical paths merged. The exact-posterior proposal (IS) draws
    equal weights, so its plain ESS is M, but at M = 32 it draws the few likely paths of each
    lattice (5 to 32 of them) many times: its dedup ESS is far below M, and at most the mean
    number of paths; the distinct methods never repeat a path (dedup ESS = ESS)."""
    result, _, drawn = evaluated_and_drawn
    n_paths = sum(len(lattice_paths(lat)) for lat in small_batch().lattices) / 4
    for name, res in result["methods"].items():
        for i, M in enumerate(result["M"]):
            runs = drawn[name][M]
            assert len(runs) == (1 if name == "BEAM" else 2)
            expected = [dedup_ess_of(p, b) for p in runs for b in range(p.arcs.shape[0])]
            assert res["dedup_ess"][i] == pytest.approx(sum(expected) / len(expected), rel=1e-9)
            assert res["dedup_ess"][i] <= res["ess"][i] + 1e-9
    plain = result["methods"]["IS[free-weights]"]
    assert plain["ess"] == pytest.approx([4.0, 32.0])
    assert plain["dedup_ess"][1] < min(n_paths, 32.0 / 2)
    for name in ("IS-WOR[free-weights]", "ABSTRACT"):
        res = result["methods"][name]
        assert res["dedup_ess"] == pytest.approx(res["ess"], rel=1e-9)


def test_reported_pareto_k_is_that_of_the_final_weights(evaluated_and_drawn):
    """Each method's reported k̂ at each M is the mean over runs and pairs of the k̂ of its
    final weights, pairs where it cannot be fitted left out; None for the beam (not importance
    weights) and at M = 4 (too few weights to fit a tail); some method has one at M = 32."""
    result, _, drawn = evaluated_and_drawn
    fitted = 0
    for name, res in result["methods"].items():
        assert res["pareto_k"][0] is None
        ks = [pareto_k(p.log_weights[b]) for p in drawn[name][32] for b in range(p.arcs.shape[0])]
        ks = [k for k in ks if not math.isnan(k)]
        if name == "BEAM" or not ks:
            assert res["pareto_k"][1] is None, name
        else:
            assert res["pareto_k"][1] == pytest.approx(sum(ks) / len(ks), rel=1e-9), name
            fitted += 1
    assert fitted >= 1  # with 5 to 32 paths per pair, few tails have 5 distinct weights
