"""The results page's tables come from committed run summaries (nfst.experiment.report.summary):
the committed page must hold what its summaries make, and a summary's gaps are paired."""

from pathlib import Path

import pytest

from nfst.experiment.report.samplers import gaps_to_best
from nfst.experiment.report.summary import BLOCK, page, render, summarize

DOCS = Path(__file__).parents[2] / "docs"


def test_committed_results_page_holds_the_tables_of_its_summaries():
    text = (DOCS / "results.md").read_text(encoding="utf-8")
    names = {n for m in BLOCK.finditer(text) for n in m.group(2).removeprefix("gaps:").split(",")}
    assert names == {p.stem for p in (DOCS / "results").glob("*.json")}  # each one shown
    assert text == page(text), ("docs/results.md's tables are not what docs/results/*.json "
                                "make; regenerate with: python -m "
                                "nfst.experiment.report.summary page")


def _results(per_pair: dict[str, list[float]]) -> dict:
    return {"task": "tr", "preset": "small", "scorer": {"kind": "lstm", "test_log_z": -20.0},
            "samplers": {s: {"partial_kl": sum(v) / len(v), "per_pair_partial_kl": v,
                             "partial_kl_se": 0.0, "untrained_partial_kl": 50.0,
                             "stopped_by": "patience", "steps": 300, "best_step": 100}
                         for s, v in per_pair.items()}}


def test_gaps_are_paired_differences_to_the_best_sampler():
    """swa is worse than sws by exactly 2 on every pair: its gap is 2 with no spread, though
    each sampler's partial KL varies over pairs by far more."""
    results = _results({"sws": [10.0, 30.0, 50.0], "swa": [12.0, 32.0, 52.0]})
    gaps = gaps_to_best(results["samplers"])
    assert gaps["sws"] == (0.0, 0.0)
    assert gaps["swa"][0] == pytest.approx(2.0) and gaps["swa"][1] == pytest.approx(0.0)
    summary = summarize(results, "nfst run tr", "abc1234", "a laptop")
    assert summary["samplers"]["swa"]["gap"] == pytest.approx(2.0)
    table = render(summary)
    assert "| swa | 50.0 → 32.0 ± 0.0 | 23.3 | 2.0 ± 0.0 | 300 (100; patience) |" in table
    assert "commit `abc1234`" in table
