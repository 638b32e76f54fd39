"""What a new user sees, exactly: the command line's one-line answers to bad input, its exit
statuses, old spellings, and commands on runs stopped part-way (a failed first stage, a run
stopped after `nfst evaluate`). In-process through ``main(argv)``; no case trains more than a
two-step n-gram."""

import argparse
import json
import re
import shutil
import tomllib
from importlib import metadata

import pytest
import torch

from nfst.bench import BENCHMARKS
from nfst.cli import main
from nfst.errors import NfstError
from nfst.experiment.presets import PRESETS
from nfst.experiment.run import Run
from nfst.models.samplers import SAMPLERS
from nfst.tasks import task_names
from tests.helpers.config_files import BAD_TOML, FILES
from tests.helpers.tiny import recorded_run

TR_TRAIN = "dakshina-ur/ur.translit.sampled.train.tsv"
TR_LINES = ["کتاب\tkitab\t3", "کتاب\tkitaab\t1", "دل\tdil\t2", "پانی\tpani\t2", "گھر\tghar\t1"]
QUICK_NGRAM = [
    "--option",
    "scorer.kind=ngram",
    "--option",
    "scorer.ngram.steps=2",
    "--option",
    "train_pairs=4",
    "--set",
    "train_size=4",
    "--quiet",
    "--processes",
    "1",
]


def _toml_error() -> str:
    try:
        tomllib.loads(BAD_TOML)
    except tomllib.TOMLDecodeError as exc:
        return str(exc)


CASES = {
    # case: (argv, exit status, the error line exactly, a phrase of the hint). In argv, the line
    # and the hint, {t} is the test's folder (the working directory), which holds an empty
    # EMPTY/, the TOML files of FILES, a run directory RUN that records a cipher run with
    # nothing trained yet (preset small, seed 0, samplers swa, --set train_size=4 eval_size=4)
    # BAD, the same run with garbage for its scorer and its trained swa sampler, and LINK, a
    # symbolic link to RUN.
    "unknown task": (
        ["run", "nope", "--run-dir", "{t}/r"],
        2,
        "no task named 'nope'; known tasks: {tasks}",
        "NFST_TASKS",
    ),
    "misspelt task": (
        ["stats", "ciphr"],
        2,
        "no task named 'ciphr'; the nearest: cipher",
        "NFST_TASKS",
    ),
    "no data directory": (
        ["stats", "tr"],
        2,
        f"task 'tr' reads {TR_TRAIN} from a data directory, and none is set",
        "Dakshina dataset v1.0",
    ),
    "empty data directory": (
        ["run", "tr", "--data-dir", "{t}/EMPTY", "--run-dir", "{t}/r"],
        2,
        f"task 'tr': {{t}}/EMPTY/{TR_TRAIN} does not exist",
        "dakshina_dataset_v1.0.tar",
    ),
    "misspelt --option key": (
        ["run", "cipher", "--option", "sampler.stpes=1"],
        2,
        "--option 'sampler.stpes=1': the preset has no setting "
        "'sampler.stpes'; the nearest: sampler.steps, scorer.steps, "
        "scorer.ngram.steps",
        "`nfst options` lists every setting",
    ),
    "no samplers": (
        ["run", "cipher", "--run-dir", "{t}/r", "--samplers", " , "],
        2,
        "run: argument --samplers: expected at least one sampler, e.g. swa,swp-prefix",
        "see `nfst run --help`",
    ),
    "unknown --option key": (
        ["evaluate", "cipher", "--option", "zzz=1"],
        2,
        "--option 'zzz=1': the preset has no setting 'zzz'",
        "`nfst options`",
    ),
    "--option without =": (
        ["smc", "cipher", "--option", "sampler.steps", "--run-dir", "{t}/r"],
        2,
        "--option 'sampler.steps': expected KEY=VALUE",
        "e.g. --option sampler.steps=100",
    ),
    "--option of the wrong type": (
        ["train-scorer", "cipher", "--option", "scorer.hidden=big", "--run-dir", "{t}/r", "--new"],
        2,
        "--option 'scorer.hidden=big': expected a positive int, got 'big'",
        "sampler.steps=100",
    ),
    "--option size of 0": (
        ["run", "cipher", "--option", "sampler.k=0"],
        2,
        "--option 'sampler.k=0': expected a positive int, got 0",
        "sampler.steps=100",
    ),
    "--option negative sleep": (
        ["run", "cipher", "--option", "sampler.sleep_steps=-1"],
        2,
        "--option 'sampler.sleep_steps=-1': expected an int of at least 0 or one of 'auto', got -1",
        "sampler.steps=100",
    ),
    "--option a sleep that is no number": (
        ["run", "cipher", "--option", "sampler.sleep_steps=soon"],
        2,
        "--option 'sampler.sleep_steps=soon': expected an int "
        "of at least 0 or one of 'auto', got 'soon'",
        "sampler.steps=100",
    ),
    "a sleep share below one pair": (
        ["run", "cipher", "--option", "sampler.sleep_share=0.03"],
        2,
        "sampler.sleep_share=0.03 puts no fresh triple in a minibatch of 16",
        "use sleep_share=0, or at least 0.0625 (one pair of 16)",
    ),
    "--option None for a number": (
        ["run", "cipher", "--option", "sampler.k=None"],
        2,
        "--option 'sampler.k=None': expected a positive int, got None",
        "sampler.steps=100",
    ),
    "unknown sampler": (
        ["run", "cipher", "--samplers", "swa,nope"],
        2,
        "unknown samplers ['nope']; the samplers are nolookahead, swa, sws, "
        "sws-mlp, swp, swp-prefix, swp-sws",
        "--samplers swa,swp-prefix",
    ),
    "unknown --sampler": (
        ["train-sampler", "cipher", "--sampler", "nope"],
        2,
        "train-sampler: argument --sampler: invalid choice: {samplers}",
        "nfst train-sampler --help",
    ),
    "unknown bootstrap sampler": (
        ["run", "cipher", "--option", "scorer.bootstrap_sampler=nope", "--run-dir", "{t}/r"],
        2,
        "unknown samplers ['nope']; the samplers are nolookahead, swa, "
        "sws, sws-mlp, swp, swp-prefix, swp-sws",
        "--samplers swa,swp-prefix",
    ),
    "unknown sampler to sleep to the cap": (
        ["run", "cipher", "--option", 'sampler.sleep_to_cap=["swaa"]', "--run-dir", "{t}/r"],
        2,
        "unknown samplers ['swaa']; the samplers are nolookahead, swa, "
        "sws, sws-mlp, swp, swp-prefix, swp-sws",
        "--samplers swa,swp-prefix",
    ),
    "unknown scorer proposal": (
        ["run", "cipher", "--option", "scorer.proposal=gold"],
        2,
        "--option 'scorer.proposal=gold': expected one of 'ngram', "
        "'bootstrap', 'mixture', got 'gold'",
        "`nfst options`",
    ),
    # a preset setting outside what its field takes: refused before any stage runs
    "unknown sampler objective": (
        ["run", "cipher", "--option", "sampler.objective=typo", "--run-dir", "{t}/r"],
        2,
        "--option 'sampler.objective=typo': "
        "expected one of 'is', 'nasmc', 'mixture', 'posterior', got "
        "'typo'",
        "`nfst options` lists every setting",
    ),
    "negative learning rate": (
        ["run", "cipher", "--option", "sampler.lr=-1", "--run-dir", "{t}/r"],
        2,
        "--option 'sampler.lr=-1': expected a positive float, got -1",
        "sampler.lr=0.001",
    ),
    "dropout above 1": (
        ["run", "cipher", "--option", "sampler.sampler.dropout=1.5", "--run-dir", "{t}/r"],
        2,
        "--option 'sampler.sampler.dropout=1.5': expected a float in [0, 1), got 1.5",
        "sampler.sampler.dropout=0.1",
    ),
    "negative gradient clip": (
        ["run", "cipher", "--option", "sampler.grad_clip=-5", "--run-dir", "{t}/r"],
        2,
        "--option 'sampler.grad_clip=-5': expected None or a positive float, got -5",
        "`nfst options`",
    ),
    "a bool for a float": (
        ["train-scorer", "cipher", "--option", "scorer.lr=true", "--run-dir", "{t}/r", "--new"],
        2,
        "--option 'scorer.lr=true': expected a positive float, got True",
        "`nfst options`",
    ),
    "label smoothing of 1": (
        ["run", "cipher", "--option", "scorer.label_smoothing=1", "--run-dir", "{t}/r"],
        2,
        "--option 'scorer.label_smoothing=1': expected a float in [0, 1), got 1",
        "`nfst options`",
    ),
    "an SMC size of 0": (
        [
            "train-scorer",
            "cipher",
            "--option",
            "evaluate.smc_particles=[0, 8]",
            "--run-dir",
            "{t}/r",
            "--new",
        ],
        2,
        "--option 'evaluate.smc_particles=[0, 8]': expected a list of positive ints, got [0, 8]",
        "`nfst options`",
    ),
    "posterior without an exact scorer": (
        ["run", "cipher", "--option", "sampler.objective=posterior", "--run-dir", "{t}/r"],
        2,
        "the objective 'posterior' needs a scorer with an exact posterior",
        "--option scorer.kind=ngram",
    ),
    "nasmc in a run": (
        ["run", "cipher", "--option", "sampler.objective=nasmc", "--run-dir", "{t}/r"],
        2,
        "the objective 'nasmc' needs a lookahead, which a run does not fit",
        "train_sampler(..., lookahead=...)",
    ),
    "a bad --option in the config": (
        ["run", "cipher", "--config", "{t}/option.toml"],
        2,
        "--option 'sampler.sampler.dropout=1.5': expected a float in [0, 1), got 1.5",
        "`nfst options`",
    ),
    "--set without =": (
        ["compile", "cipher", "--set", "train_size"],
        2,
        "--set 'train_size': expected KEY=VALUE",
        "e.g. --set train_size=500",
    ),
    "unknown task setting": (
        ["stats", "cipher", "--set", "bogus=1"],
        2,
        "task 'cipher' has no setting 'bogus'; its settings are: "
        "train_size, eval_size, seed, strict, alphabet_size, num_ciphers, "
        "p_delete, p_insert, min_len, mean_len, test_min_len, test_mean_len",
        "--set KEY=VALUE",
    ),
    "a bad task setting's value": (
        ["stats", "cipher", "--set", "p_delete=2"],
        2,
        "task 'cipher', setting p_delete: expected a float in [0, 1], got 2",
        "the settings of cipher and their values: train_size=2000, eval_size=100, seed=0",
    ),
    "misspelt task setting": (
        ["stats", "cipher", "--set", "trian_size=5"],
        2,
        "task 'cipher' has no setting 'trian_size'; the nearest: train_size",
        "--set KEY=VALUE",
    ),
    "task setting of the wrong type": (
        ["stats", "cipher", "--set", "train_size=abc", "--limit", "5"],
        2,
        "task 'cipher', setting train_size: expected None or a positive int, got 'abc'",
        "(--set KEY=VALUE)",
    ),
    "negative task size": (
        ["stats", "cipher", "--set", "train_size=-5"],
        2,
        "task 'cipher', setting train_size: expected None or a positive int, got -5",
        "the settings of cipher and their values: train_size=2000",
    ),
    "negative task seed": (
        ["compile", "scan", "--set", "seed=-1"],
        2,
        "task 'scan', setting seed: expected an int of at least 0, got -1",
        "the settings of scan and their values: train_size=2000",
    ),
    "unknown split": (
        ["compile", "cipher", "--split", "nope", "--limit", "1"],
        2,
        "task 'cipher' has no split 'nope'; it has train, dev, test",
        "--split NAME",
    ),
    "negative --limit": (
        ["stats", "cipher", "--limit", "-3"],
        2,
        "stats: argument --limit: expected an integer of at least 1, got '-3'",
        "nfst stats --help",
    ),
    "--limit 0": (
        ["compile", "cipher", "--limit", "0"],
        2,
        "compile: argument --limit: expected an integer of at least 1, got '0'",
        "nfst compile --help",
    ),
    "--limit 0 in the config": (
        ["stats", "cipher", "--config", "{t}/limit.toml"],
        2,
        "stats: argument --limit: expected an integer of at least 1, got '0'",
        "nfst stats --help",
    ),
    "a float --limit in the config": (
        ["stats", "cipher", "--config", "{t}/float.toml"],
        2,
        "stats: argument --limit: expected an integer of at least 1, got '1.5'",
        "nfst stats --help",
    ),
    "an unknown preset in the config": (
        ["run", "cipher", "--config", "{t}/preset.toml"],
        2,
        "run: argument --preset: invalid choice: {presets}",
        "nfst run --help",
    ),
    "a switch given a string in the config": (
        ["stats", "cipher", "--config", "{t}/quiet.toml"],
        2,
        "{t}/quiet.toml: quiet = 'yes': expected true or false",
        "nfst stats --help",
    ),
    "a list for one value in the config": (
        ["run", "cipher", "--config", "{t}/list.toml"],
        2,
        "{t}/list.toml: seed = [1, 2]: expected a string or a number",
        "nfst run --help",
    ),
    "--threads 0": (
        ["stats", "cipher", "--limit", "5", "--threads", "0"],
        2,
        "stats: argument --threads: expected an integer from 1 to 1,024, got '0'",
        "nfst stats --help",
    ),
    "--processes 0": (
        ["compile", "cipher", "--processes", "0"],
        2,
        "compile: argument --processes: expected an integer from 1 to 1,024, got '0'",
        "nfst compile --help",
    ),
    "negative --seed": (
        ["run", "cipher", "--seed", "-1"],
        2,
        "run: argument --seed: expected an integer from 0 to 4,294,967,295, got '-1'",
        "nfst run --help",
    ),
    "-k 0": (
        ["sample", "cipher", "-k", "0", "--x", "a", "--y", "b"],
        2,
        "sample: argument -k: expected an integer of at least 1, got '0'",
        "nfst sample --help",
    ),
    "--lattices 0": (
        ["bench", "backward", "--lattices", "0"],
        2,
        "bench: argument --lattices: expected an integer of at least 1, got '0'",
        "nfst bench --help",
    ),
    "unknown benchmark": (
        ["bench", "nope"],
        2,
        "bench: argument name: invalid choice: {benchmarks}",
        "nfst bench --help",
    ),
    "unknown flag": (["tasks", "--bogus"], 2, "unrecognized arguments: --bogus", "nfst --help"),
    "unknown device": (
        ["stats", "cipher", "--device", "tpu", "--limit", "1"],
        2,
        "--device tpu: not a device name",
        "cpu, cuda, cuda:N or auto",
    ),
    "absent GPU": (
        ["compile", "cipher", "--device", "cuda:7", "--limit", "1"],
        2,
        "{gpu}",
        "--device",
    ),
    "missing run directory": (
        ["report", "{t}/missing"],
        2,
        "{t}/missing: no such directory",
        "`nfst evaluate`",
    ),
    "run directory without evaluate": (
        ["report", "{t}/EMPTY"],
        2,
        "{t}/EMPTY: no finished evaluate stage to report (no {t}/EMPTY/stages/evaluate.json)",
        "nfst evaluate TASK --run-dir {t}/EMPTY",
    ),
    "malformed TOML": (
        ["stats", "cipher", "--config", "{t}/bad.toml"],
        2,
        f"cannot read config {{t}}/bad.toml: {_toml_error()}",
        "TOML syntax",
    ),
    "malformed TOML for a stage": (
        ["evaluate", "cipher", "--config", "{t}/bad.toml"],
        2,
        f"cannot read config {{t}}/bad.toml: {_toml_error()}",
        "TOML syntax",
    ),
    "unknown config key": (
        ["stats", "--config", "{t}/unknown.toml"],
        2,
        "{t}/unknown.toml: unknown settings for `nfst stats`: bogus",
        "nfst stats --help",
    ),
    "no task": (
        ["smc"],
        2,
        "smc: the following arguments are required: TASK or --run-dir",
        "nfst smc --help",
    ),
    "task twice": (
        ["stats", "cipher", "--task", "scan"],
        2,
        "stats: the task is given twice (cipher and --task scan)",
        "give it once",
    ),
    "missing --x": (
        ["sample", "cipher", "--y", "a"],
        2,
        "--x is missing",
        "or a whole split with --split SPLIT --out FILE.jsonl",
    ),
    "--split without --out": (
        ["sample", "cipher", "--split", "test"],
        2,
        "--split and --out go together",
        "--out samples.jsonl",
    ),
    "empty --x": (
        ["sample", "cipher", "--run-dir", "{t}/RUN", "--x", "", "--y", "a b"],
        2,
        "--x is empty",
        "--x 'a b c'",
    ),
    "blank --y": (
        ["sample", "cipher", "--run-dir", "{t}/RUN", "--x", "a b", "--y", " "],
        2,
        "--y is empty",
        "--y 'a b c'",
    ),
    "--run-dir that is a file": (
        ["run", "cipher", "--run-dir", "{t}/limit.toml"],
        2,
        "{t}/limit.toml: a file, not a folder, so no run directory can go there",
        "give --run-dir a folder",
    ),
    "--run-dir inside a file": (
        ["train-scorer", "cipher", "--run-dir", "{t}/limit.toml/r", "--new"],
        2,
        "{t}/limit.toml/r: {t}/limit.toml is a file, not "
        "a folder, so no run directory can go there",
        "--run-dir",
    ),
    "every pair skipped": (
        ["stats", "tr", "--split", "dev", "--data-dir", "{t}/DATA", "--quiet"],
        2,
        "tr/dev: no pair compiled, all 2 skipped: 2 with input symbols ['m', "
        "'q', 'z'] not in the MFST's input alphabet",
        "add arcs for the symbol to the MFST",
    ),
    "a split with symbols the MFST lacks": (
        ["run", "tr", "--data-dir", "{t}/DATA", "--run-dir", "{t}/r", *QUICK_NGRAM],
        2,
        "tr/dev: no pair compiled, all 2 skipped: 2 with "
        "input symbols ['m', 'q', 'z'] not in the MFST's "
        "input alphabet",
        "or clean the data",
    ),
    "--dot in a missing folder": (
        [
            "sample",
            "cipher",
            "--run-dir",
            "{t}/RUN",
            "--x",
            "a b",
            "--y",
            "c d",
            "--dot",
            "{t}/missing/x.dot",
        ],
        2,
        "[Errno 2] No such file or directory: '{t}/missing/x.dot'",
        "check the paths given",
    ),
    # a stage command on a directory that records no run
    "evaluate a mistyped run directory": (
        ["evaluate", "cipher", "--run-dir", "{t}/RUNN"],
        2,
        "{t}/RUNN: no run recorded there (no config.json)",
        "start one with `nfst run cipher --run-dir {t}/RUNN` "
        "(stage by stage: `nfst train-scorer cipher --run-dir "
        "{t}/RUNN --new`)",
    ),
    "smc in the default run directory": (
        ["smc", "cipher"],
        2,
        "runs/cipher-small-0: no run recorded there (no config.json)",
        "stage by stage",
    ),
    "train a sampler of no run, with no task": (
        ["train-sampler", "--sampler", "swa", "--run-dir", "{t}/EMPTY", "--new"],
        2,
        "{t}/EMPTY: no run recorded there (no config.json) to take the task from",
        "`nfst train-sampler TASK --run-dir {t}/EMPTY --new`",
    ),
    "evaluate with no task in a directory with no run": (
        ["evaluate", "--run-dir", "{t}/EMPTY"],
        2,
        "{t}/EMPTY: no run recorded there (no config.json)",
        "start one with `nfst run TASK --run-dir {t}/EMPTY`",
    ),
    "sample a directory with no run": (
        [
            "sample",
            "cipher",
            "--run-dir",
            "{t}/EMPTY",
            "--sampler",
            "swa",
            "--x",
            "a b",
            "--y",
            "c d",
        ],
        2,
        "{t}/EMPTY: no run recorded there (no config.json)",
        "start one with `nfst run cipher --run-dir {t}/EMPTY`",
    ),
    # a stage command given settings that differ from the run it continues
    "another preset": (
        ["evaluate", "cipher", "--run-dir", "{t}/RUN", "--preset", "large"],
        2,
        "{t}/RUN records a run with --preset small, not --preset large",
        "drop the flag to continue that run, or give another --run-dir",
    ),
    "another --option": (
        ["train-scorer", "cipher", "--run-dir", "{t}/RUN", "--option", "scorer.steps=7"],
        2,
        "{t}/RUN records a run with scorer.steps=600, not --option scorer.steps=7",
        "drop the flag",
    ),
    "another seed and task setting": (
        [
            "train-sampler",
            "cipher",
            "--run-dir",
            "{t}/RUN",
            "--sampler",
            "swa",
            "--seed",
            "1",
            "--set",
            "eval_size=5",
        ],
        2,
        "{t}/RUN records a run with --seed 0, eval_size=4, not --seed 1, --set eval_size=5",
        "drop the flag",
    ),
    "a training seed the run lacks": (
        ["train-sampler", "--run-dir", "{t}/RUN", "--sampler", "swa", "--training-seed", "1"],
        2,
        "--training-seed 1: the run trains seeds 0 to 0 (--seeds 1)",
        "give --seeds 2 (or more) with it",
    ),
    "another --option, of the samplers": (
        [
            "train-sampler",
            "--run-dir",
            "{t}/RUN",
            "--sampler",
            "swa",
            "--option",
            "sampler.lr=0.01",
        ],
        2,
        "{t}/RUN records a run with sampler.lr=0.003, not --option sampler.lr=0.01",
        "on this run's scorer: `nfst run --from {t}/RUN --run-dir NEW --option sampler.lr=0.01`",
    ),
    "continue with no run": (
        ["run", "--run-dir", "{t}/r", "--continue", "--option", "sampler.steps=9"],
        2,
        "{t}/r: no run recorded there to continue",
        "start one: `nfst run TASK --run-dir {t}/r`",
    ),
    "compare a run with itself": (
        ["compare", "{t}/RUN", "{t}/RUN"],
        2,
        "compare: {t}/RUN is given twice",
        "`nfst report {t}/RUN`",
    ),
    "compare a run with itself, spelt otherwise": (
        ["compare", "{t}/RUN", "{t}/EMPTY/../RUN/"],
        2,
        "compare: {t}/RUN and {t}/EMPTY/../RUN/ are the same run",
        "another run",
    ),
    "compare a run with a link to it": (
        ["compare", "{t}/LINK", "{t}/RUN"],
        2,
        "compare: {t}/LINK and {t}/RUN are the same run",
        "another run",
    ),
    "from and continue": (
        ["run", "--from", "{t}/RUN", "--continue"],
        2,
        "run: argument --continue: not allowed with argument --from",
        "see `nfst run --help`",
    ),
    "another task": (
        ["evaluate", "scan", "--run-dir", "{t}/RUN"],
        2,
        "{t}/RUN records a run of the task cipher, not scan",
        "give the task cipher",
    ),
    # a stage after the sampler stage never trains a sampler: it names those to train
    "evaluate a run with nothing trained": (
        ["evaluate", "--run-dir", "{t}/RUN"],
        2,
        "{t}/RUN: not trained yet: swa",
        "`nfst train-sampler --run-dir {t}/RUN --sampler NAME` (NAME: swa)",
    ),
    "evaluate other samplers, untrained": (
        ["evaluate", "--run-dir", "{t}/RUN", "--samplers", "swp,swa"],
        2,
        "{t}/RUN: not trained yet: swp, swa",
        "`nfst run --run-dir {t}/RUN --samplers swp,swa`",
    ),
    "smc with nothing trained": (
        ["smc", "cipher", "--run-dir", "{t}/RUN"],
        2,
        "{t}/RUN: not trained yet: swa",
        "--sampler NAME` (NAME: swa)",
    ),
    "a bad --option on a recorded run": (
        ["smc", "cipher", "--run-dir", "{t}/RUN", "--option", "sampler.k=0"],
        2,
        "--option 'sampler.k=0': expected a positive int, got 0",
        "sampler.steps=100",
    ),
    # on a recorded run, what it holds
    "no trained sampler": (
        [
            "sample",
            "cipher",
            "--run-dir",
            "{t}/RUN",
            "--sampler",
            "swa",
            "--x",
            "a b",
            "--y",
            "c d",
        ],
        2,
        "{t}/RUN has no trained swa sampler",
        "nfst train-sampler --run-dir {t}/RUN --sampler swa",
    ),
    "symbols outside the alphabet": (
        ["sample", "cipher", "--run-dir", "{t}/RUN", "--x", "a 7", "--y", "b c"],
        2,
        "cipher on x='a 7', y='b c': input symbols ['7'] are not in the MFST's input alphabet",
        "cipher reads x over a b c",
    ),
    "a word for x, not symbols": (
        ["sample", "cipher", "--run-dir", "{t}/RUN", "--x", "ab", "--y", "b c"],
        2,
        "cipher on x='ab', y='b c': input symbols ['ab'] are not in the MFST's input alphabet",
        "symbols are separated by spaces: 'a b', not 'ab'",
    ),
    "corrupt sampler": (
        [
            "sample",
            "cipher",
            "--run-dir",
            "{t}/BAD",
            "--sampler",
            "swa",
            "--x",
            "a b",
            "--y",
            "c d",
            "--quiet",
        ],
        2,
        "{t}/BAD/samplers/swa.pt: not a file nfst wrote (no NFST header: written "
        "by something else, torch.save say, or overwritten)",
        "delete the file",
    ),
    "corrupt scorer": (
        ["train-scorer", "cipher", "--run-dir", "{t}/BAD", "--quiet"],
        2,
        "{t}/BAD/scorer.pt: not a file nfst wrote (no NFST header: written by "
        "something else, torch.save say, or overwritten)",
        "delete the file",
    ),
}
TR_DEV = ["قلم\tqalam\t1", "زم\tzam\t1"]  # q, m and z: not in the training words


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # default caches and run folders land here
    monkeypatch.delenv("NFST_DATA_DIR", raising=False)
    (tmp_path / "EMPTY").mkdir()
    for name, text in FILES.items():
        (tmp_path / name).write_text(text)
    for split, lines in (("train", TR_LINES), ("dev", TR_DEV)):
        path = tmp_path / "DATA" / TR_TRAIN.replace("train", split)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n")
    recorded_run(tmp_path / "RUN")
    (tmp_path / "LINK").symlink_to(tmp_path / "RUN")
    shutil.copytree(tmp_path / "RUN", tmp_path / "BAD")
    for name in ("scorer.pt", "samplers/swa.pt", "stages/sampler-swa.json"):  # swa: trained
        (tmp_path / "BAD" / name).parent.mkdir(exist_ok=True)
        (tmp_path / "BAD" / name).write_bytes(
            b"{}" if name.endswith(".json") else b"not a checkpoint"
        )
    return tmp_path


def _invalid_choice(value: str, choices) -> str:
    """How this Python's argparse says that ``value`` is none of ``choices`` (its quoting
    changes between versions)."""
    parser = argparse.ArgumentParser(exit_on_error=False)
    parser.add_argument("x", choices=choices)
    try:
        parser.parse_args([value])
    except argparse.ArgumentError as exc:
        return str(exc).partition("invalid choice: ")[2]


def _no_gpu(name: str) -> str:
    """What ``--device NAME`` says where there is no such GPU, on this machine."""
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    return f"--device {name}: " + (
        f"there are {count} CUDA devices" if count else "no CUDA device is available"
    )


def _main(argv, capsys):
    status = main(argv)
    out, err = capsys.readouterr()
    return status, out, err.rstrip("\n").split("\n") if err else []


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_says_exactly_what_is_wrong(case, folder, capsys):
    argv, status, line, hint = CASES[case]
    fill = {
        "t": folder,
        "tasks": ", ".join(task_names()),
        "gpu": _no_gpu("cuda:7"),
        "samplers": _invalid_choice("nope", SAMPLERS),
        "presets": _invalid_choice("huge", PRESETS),
        "benchmarks": _invalid_choice("nope", sorted(BENCHMARKS)),
    }
    got, _, err = _main([a.format(**fill) for a in argv], capsys)
    assert (got, err[0]) == (status, "nfst: error: " + line.format(**fill)), err
    assert len(err) == 2 and err[1].startswith("  hint: ") and hint.format(**fill) in err[1]
    assert not (folder / "r").exists()  # a failed command claims no run directory


def test_version_comes_from_the_package_metadata(capsys):
    assert _main(["--version"], capsys) == (0, f"nfst {metadata.version('nfst')}\n", [])


def test_help_gives_defaults_examples_and_the_sampler_names(capsys):
    status, out, _ = _main(["run", "--help"], capsys)
    assert status == 0
    assert "(default: small)" in out and "(default: 0)" in out
    unwrapped = re.sub(r"-\n\s+", "-", out)  # argparse may break a name at its hyphen
    assert all(name in unwrapped for name in SAMPLERS)
    assert "examples:\n  nfst run cipher --preset small" in out


def test_options_lists_every_key_with_its_value_and_meaning(capsys):
    status, out, _ = _main(["options", "--preset", "paper"], capsys)
    rows = {line.split()[0]: line.split(None, 2)[1:] for line in out.splitlines()[1:]}
    assert status == 0 and rows["sampler.lr"][0] == "1e-05"
    assert rows["sampler.k"] == ["16", "Proposals per pair."]


def test_old_spellings_work_with_a_warning(folder, capsys):
    """`--task` (compile, stats) and `--out` (the run commands but `sample`, whose --out is
    its file) until the next release."""
    status, _, err = _main(["stats", "--task", "nope"], capsys)
    assert status == 2 and err[0] == (
        "nfst: warning: --task is deprecated (until the next "
        "release); use the task as the first argument"
    )
    assert err[1].startswith("nfst: error: no task named 'nope'")
    status, _, err = _main(
        ["evaluate", "cipher", "--out", str(folder / "RUN"), "--preset", "large", "--quiet"], capsys
    )
    assert status == 2 and err[:2] == [
        "nfst: warning: --out is deprecated (until the next release); use --run-dir",
        f"nfst: error: {folder / 'RUN'} records a run with --preset small, not --preset large",
    ]


def test_a_stage_takes_the_recorded_settings_given_again(folder, capsys, monkeypatch):
    """Settings given to a stage command that agree with the run's (a preset's own value
    included) are accepted; one in --config that differs is refused like a flag."""

    def evaluation(run):
        raise NfstError("past the check")

    monkeypatch.setattr(Run, "evaluation", evaluation)
    agree = [
        "--preset",
        "small",
        "--seed",
        "0",
        "--samplers",
        "swa",
        "--option",
        "scorer.steps=600",
        "--set",
        "train_size=4",
        "--quiet",
    ]
    status, _, err = _main(["evaluate", "cipher", "--run-dir", str(folder / "RUN"), *agree], capsys)
    assert (status, err) == (2, ["nfst: error: past the check"])
    (folder / "seed.toml").write_text("[evaluate]\nseed = 1\n")
    status, _, err = _main(
        [
            "evaluate",
            "cipher",
            "--run-dir",
            str(folder / "RUN"),
            "--config",
            str(folder / "seed.toml"),
        ],
        capsys,
    )
    assert (status, err[0]) == (
        2,
        f"nfst: error: {folder / 'RUN'} records a run with --seed 0, not --seed 1",
    )


def test_a_failed_first_stage_leaves_the_directory_free(folder, capsys):
    """`nfst run tr` on an empty data folder fails; the same directory then takes a run with
    other settings (it used to hold the failed run's config.json and refuse)."""
    run_dir, data = str(folder / "R"), folder / "data"
    status, _, err = _main(
        ["run", "tr", "--data-dir", str(folder / "EMPTY"), "--run-dir", run_dir], capsys
    )
    assert (status, err[0]) == (
        2,
        f"nfst: error: task 'tr': {folder}/EMPTY/{TR_TRAIN} does not exist",
    )
    assert not (folder / "R" / "config.json").exists()
    (data / TR_TRAIN).parent.mkdir(parents=True)
    (data / TR_TRAIN).write_text("\n".join(TR_LINES) + "\n")
    status, out, err = _main(
        [
            "train-scorer",
            "tr",
            "--preset",
            "large",
            "--data-dir",
            str(data),
            "--run-dir",
            run_dir,
            "--new",
            *QUICK_NGRAM,
        ],
        capsys,
    )
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
    assert (folder / "a" / "report.md").read_text() == report.read_text().replace(
        f"`{run.dir}`", f"`{copy}`"
    )
    (copy / "stages" / "smc.json").unlink()
    assert _main(["report", str(copy), "--out", str(folder / "b")], capsys)[0] == 0
    text = (folder / "b" / "report.md").read_text()
    assert "Partial KL" in text and "Particle smoothing" not in text
