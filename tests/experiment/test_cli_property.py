"""No command line makes ``nfst`` report an internal error: every command and flag of the
parser, given values of every kind (ints negative, zero and huge, floats, names known, misspelt
and unknown, paths that are runs, files or nothing, KEY=VALUE pairs with good and bad keys and
values), either runs, or prints one ``nfst: error:`` line and a hint and exits 2.

In-process through ``main(argv)``. Nothing expensive runs: a task's data is two tiny pairs, and
the points where a command would start real work (compiling lattices, a benchmark, drawing a
PNG) raise :class:`Reached`, which means that the command line passed every check before."""

import argparse

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import nfst.bench
import nfst.experiment.data_stage
import nfst.experiment.picture
import nfst.experiment.stats
import nfst.fst.dataset
from nfst.cli import build_parser, main
from nfst.experiment.options import describe_options
from nfst.models.samplers import SAMPLERS
from nfst.runtime.threads import set_threads
from nfst.tasks import get_task, task_names
from tests.helpers.config_files import FILES
from tests.helpers.tiny import recorded_run

PARSERS = build_parser()[1]
CONFIGS = FILES | {
    "shared.toml": "quiet = true\nseed = 1\nthreads = 2\n",
    "types.toml": '[run]\nsamplers = 5\nlimit = "x"\n',
    "stage.toml": '[evaluate]\npreset = "large"\noverrides = ["sampler.k=0"]\n',
    "kinds.toml": '[run]\nseed = 1.5\npreset = "huge"\noption = "evaluate.k=0"\n'
    '[sample]\nk = [2]\nquiet = "yes"\n',
}
SETTING_KEYS = sorted({f for name in task_names() for f in vars(get_task(name).settings)})
OPTION_KEYS = [key for key, _, _ in describe_options()]


class Reached(BaseException):
    """Raised where a command would start real work (not an Exception: main lets it through)."""


def _reach(*args, **kwargs):
    raise Reached


INTS = st.one_of(
    st.integers(1, 8),
    st.integers(1, 8),  # mostly fine, to let other flags count
    st.sampled_from([-3, -1, 0, 2**31, 2**32, 2**63, 10**30]),
).map(str)
FLOATS = st.one_of(st.sampled_from(["0.5", "-1.5", "1e400", "nan", "inf"]), st.floats().map(str))
NAMES = st.one_of(
    st.sampled_from(
        [
            "",
            " ",
            "nope",
            "ciphr",
            "small",
            "large",
            "paper",
            "huge",
            "swp-prefix",
            "auto",
            "cpu",
            "cuda",
            "cuda:7",
            "cpu:1",
            "meta",
            "tpu",
            "None",
            "true",
            "a b",
            "a 7",
            "q b",
            "-x",
            *task_names(),
        ]
    ),
    st.text("abcxyz .,=-_:/7", max_size=10),
)
PATHS = st.sampled_from(
    [
        "{t}/RUN",
        "{t}/BAD",
        "{t}/EMPTY",
        "{t}/missing",
        "{t}/missing/more",
        "{t}/out.dot",
        "/proc/nope",
        *(f"{{t}}/{name}" for name in CONFIGS),
    ]
)
VALUES = st.one_of(INTS, FLOATS, NAMES, st.sampled_from(["None", "[1, 2]", "'q'", "{a = 1}"]))
BAD_KEYS = ["bogus", "", "sampler", "sampler.nope", "trian_size"]


def _pairs(keys: list[str]) -> st.SearchStrategy[str]:
    """KEY=VALUE, with a key from ``keys`` or a bad one, and a value of any kind; or no =."""
    return st.one_of(st.builds("{}={}".format, st.sampled_from(keys + BAD_KEYS), VALUES), NAMES)


PAIRS = _pairs(SETTING_KEYS + OPTION_KEYS)
LISTS = st.lists(st.sampled_from([*SAMPLERS, *task_names(), "nope", ""]), max_size=3).map(",".join)
ANY = st.one_of(INTS, FLOATS, NAMES, PATHS, PAIRS, LISTS)
LIKELY = {
    "task": st.sampled_from([*task_names(), "cipher", "cipher", "nope", "ciphr"]),
    "task_settings": _pairs(SETTING_KEYS),
    "overrides": _pairs(OPTION_KEYS),
    "samplers": LISTS,
    "tasks": LISTS,
    "runs": PATHS,
    "run_dir": PATHS,
    "data_dir": PATHS,
    "cache_dir": PATHS,
    "out": PATHS,
    "dot": PATHS,
    "png": PATHS,
    "runs_dir": PATHS,
    "config": st.sampled_from([f"{{t}}/{name}" for name in CONFIGS]),
    "device": st.sampled_from(["auto", "cpu", "cuda", "cuda:7", "cpu:1", "meta", "tpu"]),
    "split": st.sampled_from(["train", "dev", "test", "nope"]),
    "x": st.sampled_from(["a b", "c d", "a", "a 7", "", "b c a"]),
    "y": st.sampled_from(["c d", "a b", "q", "b 7", " ", "a b c d"]),
}


@st.composite
def _value(draw, action: argparse.Action) -> str:
    """A value for the argument: mostly one it could take, at times one of any kind."""
    likely = LIKELY.get(action.dest, INTS if action.type else NAMES)
    if action.choices:
        likely = st.sampled_from([*action.choices, "nope"])
    return draw(likely if draw(st.integers(0, 5)) else ANY)


@st.composite
def command_lines(draw) -> list[str]:
    """A command, its positional arguments (or not) and a few of its flags, with values."""
    name = draw(st.sampled_from(sorted(PARSERS)))
    arguments = [
        a
        for a in PARSERS[name]._actions  # not --help, which prints the help only
        if not {"--debug", "--help"} & set(a.option_strings)
    ]
    positional = []
    for action in (a for a in arguments if not a.option_strings):
        count = {"?": min(draw(st.integers(0, 5)), 1), "+": draw(st.integers(0, 3))}.get(
            action.nargs, 1
        )
        positional += [draw(_value(action)) for _ in range(count)]
    options = [a for a in arguments if a.option_strings]
    weighted = options + 3 * [a for a in options if a.dest in ("task_settings", "overrides")]
    flags = []
    for action in [a for a in options if a.required and draw(st.integers(0, 5))] + draw(
        st.lists(st.sampled_from(weighted), min_size=1, max_size=4)
    ):
        flags.append(draw(st.sampled_from(action.option_strings)))
        flags += [draw(_value(action))] * (action.nargs != 0)
    return [name, *(flags + positional if draw(st.booleans()) else positional + flags)]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """The runs and files the paths refer to: two recorded runs (RUN; BAD, with garbage for
    models), an empty folder and TOML files."""
    folder = tmp_path_factory.mktemp("cli")
    (folder / "EMPTY").mkdir()
    for name, text in CONFIGS.items():
        (folder / name).write_text(text)
    for run in ("RUN", "BAD"):
        recorded_run(folder / run)
    for name in ("scorer.pt", "ngram.pt", "samplers/swa.pt"):
        (folder / "BAD" / name).parent.mkdir(exist_ok=True)
        (folder / "BAD" / name).write_bytes(b"not a checkpoint")
    return folder


@pytest.fixture
def no_work(folder, monkeypatch):
    """Work cut short (see the module docstring), in ``folder``, with no data directory."""
    monkeypatch.chdir(folder)
    for variable in ("NFST_DATA_DIR", "NFST_TASKS", "NFST_CACHE_DIR"):
        monkeypatch.delenv(variable, raising=False)
    for name in task_names():
        monkeypatch.setattr(
            type(get_task(name)), "load", lambda *args: [(("a",), ("b",)), (("b", "a"), ("a",))]
        )
    for module in (nfst.fst.dataset, nfst.experiment.stats, nfst.experiment.data_stage):
        monkeypatch.setattr(module, "compile_dataset", _reach)
    monkeypatch.setattr(nfst.bench, "run_benchmark", _reach)
    monkeypatch.setattr(nfst.experiment.picture, "draw_lattice", _reach)
    return folder


@settings(
    max_examples=500,
    deadline=None,  # the profile decides derandomize (tests/conftest.py)
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(argv=command_lines())
def test_no_command_line_is_an_internal_error(argv, no_work, capsys):
    argv = [a.replace("{t}", str(no_work)) for a in argv]
    try:
        status = main(argv)
    except Reached:
        status = "reached"
    finally:
        set_threads(1)  # --threads N set torch's thread count in this process
    err = capsys.readouterr().err
    assert "internal error" not in err and "Traceback" not in err, err
    lines = [line for line in err.splitlines() if not line.startswith(("nfst: warning", "\r"))]
    assert status in ("reached", 0, 2), err
    if status == 2:
        assert lines[-2].startswith("nfst: error: ") and lines[-1].startswith("  hint: "), err
