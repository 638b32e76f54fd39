"""The results page's tables come from committed run summaries (tools/summary.py, drawn by
tools/render.py): the committed page must hold what its summaries make; a seeded run's summary
carries means ± SE over seeds, gaps to the validation-chosen reference and the ordering; old
summaries say their gaps are to the best on test; proposals and series render as tables."""

import json
from pathlib import Path

import pytest

from tests.experiment.constructed import SAMPLERS, constructed_results
from tools.render import plot_series, render, render_gaps, render_proposals
from tools.summary import BLOCK, names, page, series, summarize

DOCS = Path(__file__).parents[2] / "docs"


def test_committed_results_page_holds_the_tables_of_its_summaries():
    text = (DOCS / "results.md").read_text(encoding="utf-8")
    shown = {n for m in BLOCK.finditer(text) for n in names(m.group(2))}
    assert shown == {p.stem for p in (DOCS / "results").glob("*.json")}  # each one shown
    assert text == page(text), ("docs/results.md's tables are not what docs/results/*.json "
                                "make; regenerate with: python tools/summary.py page")


def test_a_seeded_summary_gives_gaps_to_the_validation_reference_and_the_ordering():
    results = constructed_results(SAMPLERS, overrides=["sampler.steps=12"])
    summary = summarize(results, "nfst run tr --seeds 2", "abc1234", "a laptop")
    assert (summary["reference"], summary["seeds"]) == ("sws", [0, 1])
    assert summary["ordering"] == "swp ≈ sws < swa"
    swa = summary["samplers"]["swa"]
    assert swa["gap"]["mean"] == pytest.approx(9.5)
    assert swa["partial_kl_by_seed"] == pytest.approx([35.0, 35.5])
    table = render(json.loads(json.dumps(summary)))  # as committed: through JSON
    head = table.splitlines()[0]
    assert "gap to the reference" in head and "validation partial KL" in head
    assert "| best |" not in table
    assert "| sws | 90.0 → 25.8 ± 6.4 | 24.2 | 21.8 | reference | 300 (200; patience) |" in table
    gap = results["samplers"]["swp"]["gap"]
    assert f"| swp | 90.0 → 25.6 ± 6.2 | 25.5 | 38.1 | {gap['mean']:.1f} ± {gap['se']:.1f} |" \
        in table and gap["mean"] < 0  # best on test, yet measured against the reference
    assert "the mean over 2 training seeds and 4 test pairs ± its standard error" in table
    assert "reference sws (the lowest validation partial KL, 4 pairs)" in table
    assert "ordering swp ≈ sws < swa (`<` only where the paired gap exceeds 2" in table
    assert "commit `abc1234`" in table
    assert render_gaps({"a": summary}).splitlines()[0] == "| sampler | gap at a (to sws) |"


def test_old_summaries_say_their_gaps_are_to_the_best_on_test():
    old = json.loads((DOCS / "results" / "small-tr.json").read_text(encoding="utf-8"))
    assert old["reference"] is None
    table = render(old)
    assert "gap to the best on test (old)" in table.splitlines()[0]
    assert "| swp-prefix | 73.3 → 29.4 ± 1.2 | – | best |" in table
    assert "validation partial KL" not in table
    assert "(to the best on test, old)" in render_gaps({"small-tr": old})


def test_a_task_without_a_paper_figure_has_no_paper_column():
    summary = summarize(constructed_results(SAMPLERS, task="toy"), "c", "abc1234", "m")
    assert "003" not in render(summary)


def test_proposals_of_pair_0_side_by_side():
    summary = summarize(constructed_results(SAMPLERS), "c", "abc1234", "m")
    text = render_proposals(summary)
    assert text.startswith("x = `a b`, y = `c d`")
    assert "| swa | -1.50 | -7.25 | `delete b` |" in text


def test_series_fold_standard_errors_and_plot(tmp_path):
    rows = [{"d": d, "sampler": s, "partial_kl": 70.0 + d / 64, "partial_kl_se": 1.25,
             "paper": 73.9 if s == "swp" else None}
            for d in (64, 128) for s in ("swp", "sws")]
    summary = series(rows, "c", "abc1234", "m")
    text = render(summary)
    assert text.splitlines()[0] == "| d | sampler | partial_kl | paper |"
    assert "| 128 | sws | 72.0 ± 1.2 | – |" in text
    with pytest.raises(ValueError, match="same columns"):
        series(rows + [{"d": 1}], "c", "abc1234", "m")
    path = plot_series(summary, "d", "partial_kl", tmp_path / "s.png", group="sampler",
                       paper="paper", logx=True)
    assert path.read_bytes()[:4] == b"\x89PNG"
