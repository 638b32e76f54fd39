"""Several runs in one report, and `nfst compare`: a column per run, named by its directory and
the settings in which it differs from the task's other runs, plot files per run; between runs
on one scorer (the same scorer file), paired gaps ± SE with `<` only beyond 2 SE; between runs
on other scorers, only each run's own gaps, said so."""

import json

import pytest

from nfst.cli import main
from nfst.evaluate.paired_gaps import gap
from nfst.experiment.report import training as training_part
from nfst.experiment.report import write_report
from nfst.experiment.report.labels import named
from tests.experiment.constructed import SAMPLERS, constructed_results

# B: swa lower than A's by 5 nats on every pair (give or take 0.3), far beyond 2 SE; swp
# within a few tenths of A's either way: no order claimed.
JITTER = [0.1, -0.2, 0.3, 0.0]
B_SAMPLERS = {
    "swp": (
        [[v + 0.4 * (-1) ** i for i, v in enumerate(row)] for row in SAMPLERS["swp"][0]],
        *SAMPLERS["swp"][1:],
    ),
    "sws": SAMPLERS["sws"],
    "swa": (
        [[v - 5.0 + j for v, j in zip(row, JITTER)] for row in SAMPLERS["swa"][0]],
        *SAMPLERS["swa"][1:],
    ),
}


def write_run(path, samplers=SAMPLERS, scorer=b"one scorer", **kw):
    """A run directory with a constructed results.json and a scorer file of these bytes."""
    path.mkdir(parents=True)
    (path / "results.json").write_text(json.dumps(constructed_results(samplers, **kw)))
    (path / "scorer.pt").write_bytes(scorer)
    return path


@pytest.fixture
def two_runs(tmp_path):
    return (write_run(tmp_path / "A"), write_run(tmp_path / "B", B_SAMPLERS, lr=0.01))


def test_two_runs_of_a_task_get_a_column_each_named_by_directory_and_setting(two_runs, tmp_path):
    """The runs' list names each by its directory and the setting in which it differs; the
    tables' columns by its directory alone; the scorer the two share is drawn once."""
    text = write_report(two_runs, tmp_path / "out").read_text()
    assert "- **A (sampler.lr=0.003)**: `" in text and "- **B (sampler.lr=0.01)**: `" in text
    assert (
        "| sampler | A: test (2 training seeds) | A: validation (k = 16) | "
        "B: test (2 training seeds) | B: validation (k = 16) | tr: 003 |"
    ) in text
    assert "| swa | 35.2 ± 6.5 | 35.5 | 30.3 ± 6.5 | 35.5 | 23.3 |" in text  # both runs'
    assert "| sampler | A (reference sws) | B (reference sws) |" in text
    assert "| sampler | A | B | tr: 003 |" in text
    assert "| A | LSTM" in text and "| B | LSTM" in text
    assert "### A (sampler.lr=0.003): what training changed" in text
    assert "### B (sampler.lr=0.01): what training changed" in text
    for plot in ("curves-tr-A.png", "curves-tr-B.png", "scorer-tr-A.png"):
        assert f"]({plot})" in text and (tmp_path / "out" / plot).exists(), plot
    assert "scorer-tr-B" not in text and not (tmp_path / "out" / "scorer-tr-B.png").exists()


def test_what_every_run_shares_is_said_once(tmp_path):
    """Settings every run has are listed once above the runs, each run then giving its own;
    the caption of what training changed, the same for both, follows the first table only."""
    runs = []
    for name, extra in (("A", ()), ("B", ("sampler.lr=0.01",))):
        results = constructed_results(SAMPLERS, overrides=("train_pairs=16", *extra))
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.json").write_text(
            json.dumps(results | {"log_z": {"method": "importance sampling"}})
        )
        runs.append(tmp_path / name)
    text = write_report(runs, tmp_path / "out").read_text()
    assert "Every run: tr, preset small, `--option train_pairs=16`, training seeds 0, 1." in text
    assert f"`{tmp_path / 'A'}`: reference sampler sws" in text
    assert f"`{tmp_path / 'B'}`: `--option sampler.lr=0.01`; reference sampler sws" in text
    assert text.count("train_pairs=16") == 1
    assert text.count("Exclusive KL lower bound: partial KL + log Ẑ per pair") == 1


def test_runs_on_other_scorers_get_a_scorer_plot_each(tmp_path):
    runs = (
        write_run(tmp_path / "A"),
        write_run(tmp_path / "B", B_SAMPLERS, lr=0.01, scorer=b"another scorer"),
    )
    text = write_report(runs, tmp_path / "out").read_text()
    assert text.count("![scorer training](scorer-tr-") == 2


def test_the_report_compares_runs_on_one_scorer(two_runs, tmp_path):
    text = write_report(two_runs, tmp_path / "out").read_text()
    between = text.split("### Between runs on one scorer")[1].split("\n### ")[0]
    assert "| sampler | B − A | order |" in between
    assert "| swa | -5.0 ± 0.1 | B < A |" in between and "| swp | 0.0 ± 0.2 | A ≈ B |" in between


def test_names_tell_apart_folders_of_one_name_and_tasks_with_one_run(tmp_path):
    runs = [
        constructed_results(SAMPLERS) | {"run_dir": str(tmp_path / d / "run")} for d in ("x", "y")
    ]
    runs.append(constructed_results(SAMPLERS, task="cipher") | {"run_dir": "c"})
    labels = [(r["label"], r["name"]) for r in named(runs)]
    stem = "tr-" + str(tmp_path).strip("/").replace("/", "_")
    assert labels == [
        (f"tr {tmp_path}/x/run", f"{stem}_x_run"),
        (f"tr {tmp_path}/y/run", f"{stem}_y_run"),
        ("cipher", "cipher"),
    ]


def test_the_report_says_which_test_pairs_were_skipped(tmp_path):
    lattices = {
        "test": {
            "pairs": 4,
            "skipped": 2,
            "skipped_why": "2 NoPathError (e.g. 'a' -> 'b')",
            "mean_states": 9.0,
            "mean_arcs": 12.0,
        },
        "seconds": 1.0,
    }
    text = write_report(
        [write_run(tmp_path / "run", lattices=lattices)], tmp_path / "out"
    ).read_text()
    assert (
        "**2 of 6 test pairs skipped**, not compiled: 2 NoPathError (e.g. 'a' -> 'b'); the "
        "test figures are over the other 4"
    ) in text.split("## The scorer")[0]


def test_the_curves_have_a_panel_from_the_first_validation_after_step_0(tmp_path, monkeypatch):
    """Step 0 (90 nats) sets the scale of the first panel only: the second one's is the
    trained samplers' (24-35 nats), where a difference of a nat shows."""
    figures = []
    monkeypatch.setattr(
        training_part, "save_figure", lambda fig, ax, out, name: figures.append(fig) or name
    )
    write_report([write_run(tmp_path / "run")], tmp_path / "out")
    whole, trained = figures[0].axes
    assert whole.get_ylim()[1] > 90 > 40 > trained.get_ylim()[1] > 35
    assert whole.get_ylabel() == "validation partial KL (nats; k = 8)"  # sampler.eval_k


def _compare(capsys, *argv):
    status = main(["compare", *map(str, argv)])
    out, err = capsys.readouterr()
    return status, out, err


def test_compare_gives_paired_gaps_between_runs_on_one_scorer(two_runs, capsys):
    status, out, _ = _compare(capsys, *two_runs)
    assert status == 0
    assert "A, B: one scorer" in out and "2 training seeds" in out
    swa = out.split("\nswa\n")[1].split("\n\n")[0]
    assert "B    30.30 ± 6.48  -4.95 ± 0.10" in swa and "order: B < A" in swa
    assert "order: A ≈ B" in out.split("\nswp\n")[1]
    status, out, _ = _compare(capsys, *two_runs, "--json")
    result = json.loads(out)
    assert result["groups"][0]["samplers"]["swa"]["gap"]["B"] == gap(
        B_SAMPLERS["swa"][0], SAMPLERS["swa"][0]
    )
    assert "within_run" not in result


def test_compare_sets_every_run_and_sampler_against_one_reference_chosen_on_validation(
    two_runs, tmp_path, capsys
):
    """C's sws has the lowest validation partial KL of the three runs' samplers, so it is the
    group's reference although A's swp is 1 nat lower on every test pair (ahead: SE 0) and
    C's swa 10 higher (behind); A's sws, 0.5–2 away either way, is level."""
    c = {
        "swp": SAMPLERS["swp"],
        "sws": ([[v + 1 for v in row] for row in SAMPLERS["swp"][0]], [20.0, 21.0], "x"),
        "swa": ([[v + 11 for v in row] for row in SAMPLERS["swp"][0]], [30.0, 30.0], "y"),
    }
    runs = (*two_runs, write_run(tmp_path / "C", c, lr=0.02))
    group = json.loads(_compare(capsys, *runs, "--json")[1])["groups"][0]
    assert group["reference"] == "C:sws"
    gaps = group["configurations"]
    assert gaps["A:swp"] == gap(SAMPLERS["swp"][0], c["sws"][0])
    assert gaps["A:swp"]["mean"] == -1 and gaps["C:swa"]["mean"] == 10
    assert list(gaps)[-1] == "C:swa" and len(gaps) == 9  # worst last; 3 runs × 3 samplers
    out = _compare(capsys, *runs)[1].split("against C:sws")[1]
    lines = {line.split()[0]: line.split()[1:] for line in out.splitlines()[3:]}
    assert lines["C:sws"] == ["reference"] and lines["A:swp"][-1] == "ahead"
    assert lines["C:swa"][-1] == "behind" and lines["A:sws"][-1] == "level"


def test_compare_gives_runs_on_other_scorers_only_their_own_gaps(tmp_path, capsys):
    runs = (
        write_run(tmp_path / "A"),
        write_run(tmp_path / "B", B_SAMPLERS, lr=0.01, scorer=b"another scorer"),
    )
    status, out, _ = _compare(capsys, *runs)
    assert status == 0 and "A, B: one scorer" not in out
    said = " ".join(out.split())  # unwrapped
    assert "are not compared (scorers: A " in said and "offset by −log Z" in said
    assert "swa       9.50 ± 0.49   4.55 ± 0.49" in out  # each to its reference, sws
    result = json.loads(_compare(capsys, *runs, "--json")[1])
    assert result["groups"] == [] and result["within_run"]["B"]["sws"] is None


def test_compare_needs_two_runs(two_runs, capsys):
    status, _, err = _compare(capsys, two_runs[0])
    assert status == 2 and "compare needs two run directories or more" in err
