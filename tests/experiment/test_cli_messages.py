"""What a new user sees, exactly: the command line's one-line answers to bad input, its exit
statuses, old spellings, and commands on runs stopped part-way (a failed first stage, a run
stopped after `nfst evaluate`). In-process through ``main(argv)``; no case trains more than a
two-step n-gram."""

import json
import shutil
import tomllib
from importlib import metadata

import pytest

from nfst.cli import main
from nfst.tasks import task_names

BAD_TOML = "[stats\ntask = 'cipher'\n"
TR_TRAIN = "dakshina-ur/ur.translit.sampled.train.tsv"
TR_LINES = ["کتاب\tkitab\t3", "کتاب\tkitaab\t1", "دل\tdil\t2", "پانی\tpani\t2", "گھر\tghar\t1"]
QUICK_NGRAM = ["--option", "scorer.kind=ngram", "--option", "scorer.ngram.steps=2", "--option",
               "train_pairs=4", "--set", "train_size=4", "--quiet", "--processes", "1"]


def _toml_error() -> str:
    try:
        tomllib.loads(BAD_TOML)
    except tomllib.TOMLDecodeError as exc:
        return str(exc)


CASES = {
    # case: (argv, exit status, the error line exactly, a phrase of the hint); in argv and the
    # line, {t} is the test's folder (the working directory), which holds an empty EMPTY/.
    "unknown task": (["run", "nope", "--run-dir", "{t}/r"], 2,
                     "no task named 'nope'; known tasks: {tasks}", "NFST_TASKS"),
    "no data directory": (["stats", "tr"], 2, f"task 'tr' reads {TR_TRAIN} from a data "
                          "directory, and none is set", "Dakshina dataset v1.0"),
    "empty data directory": (["run", "tr", "--data-dir", "{t}/EMPTY", "--run-dir", "{t}/r"], 2,
                             f"task 'tr': {{t}}/EMPTY/{TR_TRAIN} does not exist",
                             "dakshina_dataset_v1.0.tar"),
    "misspelt --option key": (["run", "cipher", "--option", "sampler.stpes=1"], 2,
                              "--option 'sampler.stpes=1': the preset has no setting "
                              "'sampler.stpes'; the nearest: sampler.steps, scorer.steps, "
                              "scorer.ngram.steps", "`nfst options` lists every setting"),
    "unknown --option key": (["evaluate", "cipher", "--option", "zzz=1"], 2,
                             "--option 'zzz=1': the preset has no setting 'zzz'",
                             "`nfst options`"),
    "unknown sampler": (["run", "cipher", "--samplers", "swa,nope"], 2,
                        "unknown samplers ['nope']; the samplers are nolookahead, swa, sws, swp, "
                        "swp-prefix, swp-sws", "--samplers swa,swp-prefix"),
    "missing run directory": (["report", "{t}/missing"], 2, "{t}/missing: no such directory",
                              "`nfst evaluate`"),
    "run directory without evaluate": (["report", "{t}/EMPTY"], 2,
                                       "{t}/EMPTY: no finished evaluate stage to report (no "
                                       "{t}/EMPTY/stages/evaluate.json)",
                                       "nfst evaluate TASK --run-dir {t}/EMPTY"),
    "malformed TOML": (["stats", "cipher", "--config", "{t}/bad.toml"], 2,
                       f"cannot read config {{t}}/bad.toml: {_toml_error()}", "TOML syntax"),
    "no task": (["smc"], 2, "smc: the following arguments are required: TASK",
                "nfst smc --help"),
    "task twice": (["stats", "cipher", "--task", "scan"], 2,
                   "stats: the task is given twice (cipher and --task scan)", "give it once"),
}


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # default caches and run folders land here
    monkeypatch.delenv("NFST_DATA_DIR", raising=False)
    (tmp_path / "EMPTY").mkdir()
    (tmp_path / "bad.toml").write_text(BAD_TOML)
    return tmp_path


def _main(argv, capsys):
    status = main(argv)
    out, err = capsys.readouterr()
    return status, out, err.rstrip("\n").split("\n") if err else []


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_says_exactly_what_is_wrong(case, folder, capsys):
    argv, status, line, hint = CASES[case]
    fill = {"t": folder, "tasks": ", ".join(task_names())}
    got, _, err = _main([a.format(**fill) for a in argv], capsys)
    assert (got, err[0]) == (status, "nfst: error: " + line.format(**fill)), err
    assert len(err) == 2 and err[1].startswith("  hint: ") and hint.format(**fill) in err[1]
    assert not (folder / "r").exists()  # a failed command claims no run directory


def test_version_comes_from_the_package_metadata(capsys):
    assert _main(["--version"], capsys) == (0, f"nfst {metadata.version('nfst')}\n", [])


def test_help_gives_defaults_examples_and_the_sampler_names(capsys):
    status, out, _ = _main(["run", "--help"], capsys)
    assert status == 0
    assert "(default: small)" in out and "(default: 0)" in out and "swp-sws" in out
    assert "examples:\n  nfst run cipher --preset small" in out


def test_options_lists_every_key_with_its_value_and_meaning(capsys):
    status, out, _ = _main(["options", "--preset", "paper"], capsys)
    rows = {line.split()[0]: line.split(None, 2)[1:] for line in out.splitlines()[1:]}
    assert status == 0 and rows["sampler.lr"][0] == "1e-05"
    assert rows["sampler.k"] == ["16", "Proposals per pair."]


def test_old_spellings_work_with_a_warning(folder, capsys):
    """`--task` (compile, stats) and `--out` (the run commands) until the next release."""
    status, _, err = _main(["stats", "--task", "nope"], capsys)
    assert status == 2 and err[0] == ("nfst: warning: --task is deprecated (until the next "
                                      "release); use the task as the first argument")
    assert err[1].startswith("nfst: error: no task named 'nope'")
    status, _, err = _main(["sample", "cipher", "--out", str(folder / "old"), "--sampler", "swa",
                            "--x", "a b", "--y", "c d", "--quiet"], capsys)
    assert status == 2 and err[:2] == [
        "nfst: warning: --out is deprecated (until the next release); use --run-dir",
        f"nfst: error: {folder / 'old'} has no trained swa sampler"]


def test_a_failed_first_stage_leaves_the_directory_free(folder, capsys):
    """`nfst run tr` on an empty data folder fails; the same directory then takes a run with
    other settings (it used to hold the failed run's config.json and refuse)."""
    run_dir, data = str(folder / "R"), folder / "data"
    status, _, err = _main(["run", "tr", "--data-dir", str(folder / "EMPTY"), "--run-dir",
                            run_dir], capsys)
    assert (status, err[0]) == (2, f"nfst: error: task 'tr': {folder}/EMPTY/{TR_TRAIN} does "
                                   "not exist")
    assert not (folder / "R" / "config.json").exists()
    (data / TR_TRAIN).parent.mkdir(parents=True)
    (data / TR_TRAIN).write_text("\n".join(TR_LINES) + "\n")
    status, out, err = _main(["train-scorer", "tr", "--preset", "large", "--data-dir", str(data),
                              "--run-dir", run_dir, *QUICK_NGRAM], capsys)
    assert status == 0, err
    recorded = json.loads((folder / "R" / "config.json").read_text())["run"]
    assert (recorded["task"], recorded["preset"]) == ("tr", "large")


def test_report_on_a_run_stopped_after_evaluate(finished_run, folder, capsys):
    """Without results.json, `nfst report` builds the same results from the stage files: the
    report of a finished run is the one `nfst run` wrote, and a run stopped after `nfst
    evaluate` (no SMC yet) gets a report without the SMC section."""
    run, report = finished_run
    copy = folder / "copy"
    shutil.copytree(run.dir, copy)
    (copy / "results.json").unlink()
    status, out, _ = _main(["report", str(copy), "--out", str(folder / "a")], capsys)
    assert (status, out) == (0, f"report: {folder / 'a' / 'report.md'}\n")
    assert (folder / "a" / "report.md").read_text() == \
        report.read_text().replace(f"`{run.dir}`", f"`{copy}`")
    (copy / "stages" / "smc.json").unlink()
    assert _main(["report", str(copy), "--out", str(folder / "b")], capsys)[0] == 0
    text = (folder / "b" / "report.md").read_text()
    assert "Partial KL" in text and "Particle smoothing" not in text
