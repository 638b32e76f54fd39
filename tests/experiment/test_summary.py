"""The results pages' tables come from committed run summaries (tools/summary.py, drawn by
tools/render.py): the committed pages must hold what their summaries make; a seeded run's
summary carries means ± SE over seeds, gaps to the validation-chosen reference and the
ordering; every table says which SE it uses; old summaries say their gaps are to the best on
test; proposals and series render as tables."""

import json
from pathlib import Path

import pytest

from nfst.evaluate.paired_gaps import gap, mean_over_seeds_and_pairs, ordering
from tests.experiment.constructed import SAMPLERS, constructed_results
from tools.confirm import PROTOCOLS
from tools.render import plot_series, render, render_gaps, render_proposals
from tools.summary import BLOCK, PAGES, names, page, series, summarize

DOCS = Path(__file__).parents[2] / "docs"


def summaries() -> list[Path]:
    """The committed summaries: docs/results/*.json but the confirmation files
    (PROTOCOL-TASK.json, tools/confirm.py), which tests/experiment/test_confirm.py checks."""
    return [
        p
        for p in (DOCS / "results").glob("*.json")
        if not p.name.startswith(tuple(f"{name}-" for name in PROTOCOLS))
    ]


def test_committed_results_pages_hold_the_tables_of_their_summaries():
    shown = set()
    for path in PAGES:
        text = path.read_text(encoding="utf-8")
        shown |= {n for m in BLOCK.finditer(text) for n in names(m.group(2))}
        assert text == page(text), (
            f"{path.name}'s tables are not what docs/results/*.json "
            "make; regenerate with: python tools/summary.py page"
        )
    assert shown == {p.stem for p in summaries()}  # each one shown


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
    assert (
        f"| swp | 90.0 → 25.6 ± 6.2 | 25.5 | 38.1 | {gap['mean']:.1f} ± {gap['se']:.1f} |" in table
        and gap["mean"] < 0
    )  # best on test, yet measured against the reference
    assert "the mean over 2 training seeds and 4 test pairs ± its standard error" in table
    assert "reference sws (the lowest validation partial KL, 4 pairs)" in table
    assert "ordering swp ≈ sws < swa (`<` only where the paired gap exceeds 2" in table
    assert "commit `abc1234`" in table
    assert render_gaps({"a": summary}).splitlines()[0] == "| sampler | gap at a (to sws) |"


def test_a_share_over_seeds_is_said_to_be_and_an_older_one_seed_0s():
    summary = summarize(constructed_results(SAMPLERS), "nfst run", "abc1234", "a laptop")
    summary["structure"] = "generating_cipher"
    for m in summary["samplers"].values():
        m["generating_cipher"] = 0.5
    assert "(untrained and steps: seed 0's)" in render(summary)
    del summary["share_over_seeds"]  # as summaries made before the share was over seeds
    assert "(untrained, steps and generating cipher share: seed 0's)" in render(summary)


def test_a_summary_keeps_the_per_pair_values_its_figures_come_from():
    """Per sampler, the seeds × pairs partial KLs; the gaps, their SEs and the ordering are what
    they give (``nfst.evaluate.paired_gaps``), even where results.json's gap was computed
    otherwise (an older standard error), and the ordering needs 2 SE: b's gap to a is 1.55 SE
    (a ≈ b), c's to b 2.3 SE."""
    a = [[10.0, 20.0, 30.0, 40.0], [11.0, 21.0, 31.0, 41.0]]
    b = [[x + d for x, d in zip(row, (-0.5, 0.5, 1.5, 2.5))] for row in a]
    c = [[x + d for x, d in zip(row, (0.0, 1.0, 2.0, 3.0))] for row in b]
    results = constructed_results(
        {
            "swp": (a, [20.0, 20.0], "p"),
            "sws": (b, [21.0, 21.0], "s"),
            "swa": (c, [22.0, 22.0], "a"),
        }
    )
    results["samplers"]["swa"]["gap"] = {"mean": 0.0, "se": 99.0}  # as an older run said
    summary = json.loads(json.dumps(summarize(results, "c", "abc1234", "m")))
    assert summary["ordering"] == "swp ≈ sws < swa"
    per_pair = {s: m["per_pair_partial_kl_by_seed"] for s, m in summary["samplers"].items()}
    assert per_pair == {"swp": a, "sws": b, "swa": c}
    for name, m in summary["samplers"].items():
        assert m["gap"] == gap(per_pair[name], per_pair[summary["reference"]])
        assert m["partial_kl_se"] == mean_over_seeds_and_pairs(per_pair[name])["se"]
    assert ordering(per_pair) == summary["ordering"]


def test_committed_summaries_with_per_pair_values_agree_with_them():
    """Where a committed summary holds per-pair values, its gaps and ordering are theirs."""
    checked = 0
    for path in summaries():
        summary = json.loads(path.read_text(encoding="utf-8"))
        for run in summary if isinstance(summary, list) else [summary]:
            if not isinstance(run, dict) or "samplers" not in run:
                continue
            per_pair = {s: m.get("per_pair_partial_kl_by_seed") for s, m in run["samplers"].items()}
            if None in per_pair.values():
                continue
            assert ordering(per_pair) == run["ordering"], path.name
            checked += 1
            for name, m in run["samplers"].items():
                now = gap(per_pair[name], per_pair[run["reference"]])
                # summaries written before the gap carried its degrees of freedom lack "df"
                assert m["gap"] == pytest.approx({k: now[k] for k in m["gap"]})
    assert checked >= 1  # the newer summaries hold per-pair values


def test_every_table_says_which_standard_error_it_uses():
    """A summary holding per-pair values has the two-way SE; one of several seeds without them
    (made before it) the older SE that counts the interaction twice; one seed the SE over
    pairs; a gaps table says each run's; a series says the one its ``se`` key names."""
    two = summarize(constructed_results(SAMPLERS), "c", "abc1234", "m")
    one = summarize(
        constructed_results({s: ([v[0][0]], v[1][:1], v[2]) for s, v in SAMPLERS.items()}),
        "c",
        "abc1234",
        "m",
    )
    old = json.loads(json.dumps(two))
    for m in old["samplers"].values():
        del m["per_pair_partial_kl_by_seed"]  # as the summaries made before the two-way SE
    once, twice = "each variance component counted once", "counts the seed × pair interaction"
    assert once in render(two) and twice not in render(two)
    assert twice in render(old) and once not in render(old)
    assert "± its standard error over test pairs (" in render(one)
    gaps = render_gaps({"new": two, "old": old}).splitlines()
    assert gaps[-2].startswith("At new: ± its standard error over seeds and pairs, each")
    assert gaps[-1].startswith("At old: ± its standard error by the older formula")
    rows = series([{"d": 64, "kl": 1.0, "kl_se": 0.5}], "c", "abc1234", "m")
    assert "± is" not in render(rows)
    assert "\n± is the SE over pairs.\nCommand `c`" in render(rows | {"se": "the SE over pairs"})


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
    rows = [
        {
            "d": d,
            "sampler": s,
            "partial_kl": 70.0 + d / 64,
            "partial_kl_se": 1.25,
            "paper": 73.9 if s == "swp" else None,
        }
        for d in (64, 128)
        for s in ("swp", "sws")
    ]
    summary = series(rows, "c", "abc1234", "m")
    text = render(summary)
    assert text.splitlines()[0] == "| d | sampler | partial_kl | paper |"
    assert "| 128 | sws | 72.0 ± 1.2 | – |" in text
    with pytest.raises(ValueError, match="same columns"):
        series(rows + [{"d": 1}], "c", "abc1234", "m")
    path = plot_series(
        summary, "d", "partial_kl", tmp_path / "s.png", group="sampler", paper="paper", logx=True
    )
    assert path.read_bytes()[:4] == b"\x89PNG"
