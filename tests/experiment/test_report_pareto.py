"""How the report states Pareto k̂: shares over all the pairs, each k̂ against the threshold at
its own number of paths, pairs without a k̂ named (too few weights, or a tail of one repeated
path), and a mean over a subset of pairs said to be one."""

from nfst.evaluate.pareto import pareto_summary
from nfst.experiment.report.format import reliability
from nfst.experiment.report.labels import named
from nfst.experiment.report.scorer import scorer_section
from nfst.experiment.report.smc import _run_tables
from tests.experiment.constructed import SAMPLERS, constructed_results

NAN = float("nan")


def scorer_run(ks: list[float]) -> dict:
    """A run as the report's sections read it: its results, with its name (``labels``)."""
    results = constructed_results(SAMPLERS, task="cipher")
    results["scorer"] |= {
        "proposal": "bootstrap",
        "test_log_z": -90.0,
        "curve": None,
        "test_log_z_pareto_k": pareto_summary(ks, [256] * len(ks)),
    }
    return named([results | {"run_dir": "run"}])[0]


def test_warning_counts_the_unreliable_pairs_among_all_of_them():
    # 5 of 100 pairs above the threshold, 4 without a k̂ (fewer than 21 weights), 2 whose tail
    # is fewer than 5 distinct paths: the share is of the 100, and the 6 are named, each with
    # its reason.
    ks = [0.9] * 5 + [NAN] * 6 + [0.1] * 89
    text = " ".join(
        reliability("cipher's test log Ẑ", pareto_summary(ks, [256] * 5 + [20] * 4 + [256] * 91))
    )
    assert "unreliable on 5 of 100 pairs (5%)" in text
    assert "not fitted on 4 of the 100 pairs" in text and "fewer than 21" in text
    assert (
        "not diagnosable on 2 of the 100 pairs, whose tail is fewer than 5 distinct paths, repeated"
    ) in text


def test_the_threshold_is_that_of_each_pairs_number_of_paths():
    """0.6 is above the threshold at 256 paths (0.585), not at 2,048 (0.698)."""
    text = " ".join(reliability("x", pareto_summary([0.6, 0.6, 0.1], [256, 2048, 2048])))
    assert "unreliable on 1 of 3 pairs" in text
    assert "above its threshold, 0.585 at 256 paths, 0.698 at 2048 paths" in text
    assert reliability("x", pareto_summary([0.6, 0.1], [2048, 256])) == []


def test_unfitted_pairs_are_said_even_when_none_is_unreliable():
    assert reliability("x", pareto_summary([0.1] * 98 + [NAN] * 2, [256] * 98 + [20] * 2)) == [
        "x: k̂ is not fitted on 2 of the 100 pairs, which have fewer than 21 nonzero importance "
        "weights.",
        "",
    ]
    assert reliability("x", pareto_summary([0.1] * 100, [256] * 100)) == []


def test_table_says_how_many_pairs_its_mean_is_over(tmp_path):
    assert "| 0.20 (on 3 of 4) |" in "\n".join(
        scorer_section([scorer_run([0.2] * 3 + [NAN])], tmp_path)
    )
    assert "| 0.20 (on 4 of 4) |" in "\n".join(scorer_section([scorer_run([0.2] * 4)], tmp_path))


def test_smc_warning_uses_the_threshold_at_each_m():
    """k̂ 0.5 is above the threshold at M = 32 (0.336), 0.65 not at M = 4,096 (0.7)."""
    smc = {"M": [32, 4096], "methods": {"PF": {"offset_kl": [1.0, 0.5], "pareto_k": [0.5, 0.65]}}}
    text = "\n".join(_run_tables(smc))
    assert "for PF at M=32**" in text and "M=4096**" not in text
