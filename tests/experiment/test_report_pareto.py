"""How the report states Pareto k̂: shares over all the pairs, pairs without a k̂ named, and a
mean over a subset of pairs said to be one."""

from nfst.evaluate.pareto import pareto_summary
from nfst.experiment.report.format import reliability
from nfst.experiment.report.scorer import scorer_section

NAN = float("nan")


def scorer_run(ks: list[float]) -> dict:
    return {"task": "cipher", "scorer": {
        "kind": "lstm", "proposal": "bootstrap", "test_log_z": -90.0, "test_log_z_se": 1.0,
        "test_log_z_estimator": "importance sampling", "test_log_z_pareto_k": pareto_summary(ks),
        "curve": None}}


def test_warning_counts_the_unreliable_pairs_among_all_of_them():
    # 5 of 100 pairs above 0.7, 4 without a k̂: the share is of the 100, and the 4 are named.
    ks = [0.9] * 5 + [NAN] * 4 + [0.1] * 91
    text = " ".join(reliability("cipher's test log Ẑ", pareto_summary(ks)))
    assert "unreliable on 5 of 100 pairs (5%)" in text
    assert "not fitted on 4 of the 100 pairs" in text and "fewer than 21" in text


def test_unfitted_pairs_are_said_even_when_none_is_unreliable():
    assert reliability("x", pareto_summary([0.1] * 98 + [NAN] * 2)) == [
        "x: k̂ is not fitted on 2 of the 100 pairs, which have fewer than 21 nonzero importance "
        "weights.", ""]
    assert reliability("x", pareto_summary([0.1] * 100)) == []


def test_table_says_how_many_pairs_its_mean_is_over(tmp_path):
    assert "| 0.20 (on 3 of 4) |" in "\n".join(
        scorer_section([scorer_run([0.2] * 3 + [NAN])], tmp_path))
    assert "| 0.20 (on 4 of 4) |" in "\n".join(scorer_section([scorer_run([0.2] * 4)], tmp_path))
