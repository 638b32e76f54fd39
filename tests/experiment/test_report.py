"""What report.md says, from constructed results: gaps to the reference chosen on validation
(not to the best on test), orderings with `<` only beyond 2 SE, the run's settings in its
header, the paper's figures only for tasks the paper has, captions that promise only what the
tables print, the scorer's training curve and the proposals of test pair 0."""

import json

import pytest

from nfst.errors import ReportError
from nfst.experiment.report import write_report
from tests.experiment.constructed import SAMPLERS, constructed_results


def report(tmp_path, **kw) -> str:
    run = tmp_path / "run"
    run.mkdir(parents=True)
    (run / "results.json").write_text(json.dumps(constructed_results(SAMPLERS, **kw)))
    return write_report([run], tmp_path / "out").read_text()


def section(text: str, title: str) -> str:
    return text.split(title, 1)[1].split("\n### ", 1)[0]


def test_gaps_are_to_the_validation_reference_and_orderings_need_2_se(tmp_path):
    """swp has the lowest test partial KL, sws the lowest validation partial KL: sws is the
    reference, swp's gap to it is negative, and swp ≈ sws since their gap is within 2 SE."""
    text = report(tmp_path)
    assert "reference sampler sws (the lowest validation partial KL)" in text
    gaps = section(text, "### Gap to the reference sampler")
    assert "| sampler | tr (reference sws) |" in gaps
    assert "| sws | reference |" in gaps and "| swp | -0.1 ± 0.8 |" in gaps
    assert "| swa | 9.5 ± 0.5 |" in gaps
    assert "`<` only where the paired gap between neighbours exceeds 2 standard errors" in gaps
    assert "- tr (2 training seeds): swp ≈ sws < swa" in gaps
    assert "best" not in gaps


def test_partial_kl_is_over_seeds_and_pairs_beside_validation(tmp_path):
    table = section(report(tmp_path), "### Partial KL, lower is better")
    assert (
        "| sampler | tr: test (2 training seeds) | tr: validation (k = 16) | tr: 003 |" in table
    )  # evaluate.k: training validated with sampler.eval_k
    assert "| sws | 25.8 ± 6.4 | 24.2 | 21.8 |" in table
    assert "over seeds and pairs" in table and "ratios" not in table


def test_the_header_shows_the_runs_options_settings_and_seeds(tmp_path):
    text = report(
        tmp_path,
        overrides=["sampler.steps=12", "sampler.lr=0.001"],
        task_settings={"train_size": 16},
        seed=3,
    )
    runs = text.split("## The scorer")[0]
    assert (
        "tr, preset small, `--option sampler.steps=12`, `--option sampler.lr=0.001`, "
        "`--set train_size=16`, training seeds 3, 4"
    ) in runs


def test_a_task_the_paper_does_not_have_gets_no_paper_figure(tmp_path):
    text = report(tmp_path, task="toy")
    assert "003" not in text and "the paper's figure" not in text
    tr = report(tmp_path / "tr")
    assert "(003 Fig. 4a)" in tr and "| sampler | tr | tr: 003 |" in tr
    assert "(003 Table 4)" in tr


def test_captions_promise_only_what_the_tables_print(tmp_path):
    text = report(tmp_path)
    ess = section(text, "### Deduplicated ESS (003 Table 7)")
    assert "±" not in ess
    assert "| swa | 1.5 | 1.0 |" in ess
    assert "compare orderings and ratios" not in text
    length = section(text, "### Expected mark-string length")
    assert "| swa | 12.0 ± 0.5 | 24.3 |" in length and "standard error" in length


def test_scorer_curve_and_proposals_of_pair_0(tmp_path):
    text = report(tmp_path)
    assert "![scorer training](scorer-tr.png)" in text
    assert (tmp_path / "out" / "scorer-tr.png").read_bytes()[:4] == b"\x89PNG"
    side = section(text, "### tr: test pair 0 (003 Table 4)")
    assert "| sampler | log q | log p̃ | most probable proposal |" in side
    assert "| swa | -1.50 | -7.25 | `delete b` |" in side


def test_results_of_an_older_nfst_are_refused_with_a_hint(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    old = constructed_results(SAMPLERS)
    del old["validation_pairs"], old["reference"], old["schema_version"]
    (run / "results.json").write_text(json.dumps(old))
    with pytest.raises(ReportError, match="schema version 1; this nfst reads") as info:
        write_report([run], tmp_path / "out")
    assert "stages/evaluate.json" in info.value.hint


def test_a_structure_of_any_name_reaches_the_report(tmp_path):
    """The structure's share is found by the name the results carry, not by a prefix."""
    results = constructed_results(SAMPLERS)
    results["scorer"] |= {
        "structure": "source_script",
        "source_script": 0.75,
        "source_script_se": 0.05,
    }
    for i, entry in enumerate(results["samplers"].values()):
        entry |= {"source_script": 0.25 * i, "source_script_se": 0.01}
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.json").write_text(json.dumps(results))
    text = write_report([run], tmp_path / "out").read_text()
    assert "| posterior source_script |" in text and "| 0.75 ± 0.05 |" in text
    assert (
        "Share of each sampler's test samples with the source script (tr): "
        "swa 0.50, sws 0.25, swp 0.00"
    ) in text


def test_the_sleep_phase_table_gives_each_samplers_switch_and_acceptance(tmp_path):
    """A sampler with sleep training gets a row: its sleep steps, the setting and what ended
    them, its best validation partial KL, seconds and triples kept of drawn; one without gets
    none, and a run without sleep training no table."""
    assert "the sleep phase" not in report(tmp_path / "none")
    results = constructed_results(SAMPLERS)
    results["samplers"]["swa"]["sleep"] = {
        "setting": "auto",
        "steps": 350,
        "stopped_by": "patience",
        "share": 0.0,
        "best_dev_partial_kl": 12.25,
        "sleep_seconds": 61.4,
        "skipped": 0,
        "triples": 64000,
        "drawn": 80000,
        "acceptance": 0.8,
    }
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.json").write_text(json.dumps(results))
    table = section(write_report([run], tmp_path / "out").read_text(), ": the sleep phase")
    assert "| swa | 350 (auto; patience) | 12.2 | 61 | 64,000 | 0.800 (of 80,000) |" in table
    assert "| sws |" not in table


def test_the_sleep_phase_table_gives_every_training_seeds_sleep_steps(tmp_path):
    """With more than one training seed, the row for seed 0 ends with each seed's sleep
    steps, in seed order."""
    results = constructed_results(SAMPLERS)
    assert results["seeds"] == [0, 1]
    sleep = {
        "setting": "auto",
        "steps": 350,
        "stopped_by": "patience",
        "triples": 10,
        "drawn": 20,
        "acceptance": 0.5,
    }
    results["samplers"]["swa"]["sleep"] = sleep
    results["samplers"]["swa"]["training_by_seed"] = [
        {"sleep": sleep},
        {"sleep": sleep | {"steps": 900}},
    ]
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.json").write_text(json.dumps(results))
    table = section(write_report([run], tmp_path / "out").read_text(), ": the sleep phase")
    assert "| 0.500 (of 20) | 350, 900 |" in table
