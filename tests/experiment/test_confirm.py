"""The confirmation of a default (tools/confirm.py): the candidate's pick and the best
configuration are chosen on validation, and the bound is paired_gaps.upper_bound's; the
committed confirmation files follow the protocol (docs/results/confirm-protocol.md)."""

import json
import random

import pytest

from nfst.evaluate.paired_gaps import gap, upper_bound
from nfst.experiment.config import training_seed
from tools.confirm import FOLDER, check, collect, own_changes, table

PROTOCOL_SEEDS = [training_seed(100, j, "hashed") for j in range(5)]
"""``--seed 100 --seeds 5``: none of them a seed a committed summary used (0, 1, 2)."""
SWA_CAP_SEEDS = [training_seed(200, j, "hashed") for j in range(5)]
"""The second protocol's ``--seed 200 --seeds 5``: none of them the first's either."""


def test_committed_confirmation_files_follow_the_protocol():
    """Each confirm-TASK.json (none until a task's runs are done): the three labels, the
    protocol's five seeds, and per-pair values for each of them; each seed's sleep record
    where the label sleeps (the candidate's ended by patience or its cap)."""
    for path in sorted(FOLDER.glob("confirm-*.json")):
        runs = json.loads(path.read_text(encoding="utf-8"))
        assert sorted(run["label"] for run in runs) == ["default", "recommended", "usual"]
        assert check(runs, delta=1.0)["seeds"] == PROTOCOL_SEEDS, path.name
        for run in runs:
            for name, m in run["samplers"].items():
                by_seed = m["per_pair_partial_kl_by_seed"]
                assert len(by_seed) == 5 and len({len(v) for v in by_seed}) == 1, (path, name)
                sleeps = m.get("sleep_by_seed", [])
                assert len(sleeps) == (0 if run["label"] == "usual" else 5), (path, name)
                if run["label"] == "default":
                    assert {s["stopped_by"] for s in sleeps} <= {"patience", "cap"}, (path, name)


def test_the_protocol_pages_tables_are_the_committed_files():
    """Each confirmation file's table (``tools/confirm.py table``) stands on the protocol
    page row for row, so the page shows what the committed values give."""
    page = (FOLDER / "confirm-protocol.md").read_text(encoding="utf-8")
    for path in sorted(FOLDER.glob("confirm-*.json")):
        rows = table(json.loads(path.read_text(encoding="utf-8")))
        assert len(rows) == 2 + sum(len(r["samplers"]) for r in json.loads(path.read_text()))
        missing = [row for row in rows if row not in page]
        assert not missing, (path.name, missing)


def test_a_table_ranks_by_validation_and_gaps_to_the_best_and_changes_are_paired():
    rng = random.Random(5)
    best, other = _values(0.0, rng), _values(2.0, rng)
    runs = [
        _run("default", {"swa": (20.0, other)}),
        _run("usual", {"swa": (19.0, best)}),
    ]
    runs[0]["samplers"]["swa"]["sleep_by_seed"] = [
        {"steps": 300, "stopped_by": "patience"},
        {"steps": 500, "stopped_by": "cap"},
    ]
    rows = table(runs)
    assert rows[2].startswith("| usual | swa | 19.00 |") and rows[2].endswith("| best | – |")
    g = gap(other, best)
    assert rows[3].endswith(f"| {g['mean']:+.2f} ± {g['se']:.2f} | 300, 500 (cap, patience) |")
    assert own_changes(runs)["swa"]["mean"] == pytest.approx(g["mean"]) and g["mean"] > 0


def test_the_protocol_names_its_seeds_and_they_are_fresh():
    page = (FOLDER / "confirm-protocol.md").read_text(encoding="utf-8")
    assert ", ".join(map(str, PROTOCOL_SEEDS)) in page
    assert not {0, 1, 2} & set(PROTOCOL_SEEDS) and len(set(PROTOCOL_SEEDS)) == 5
    page = (FOLDER / "swa-cap-protocol.md").read_text(encoding="utf-8")
    assert ", ".join(map(str, SWA_CAP_SEEDS)) in page
    assert not {0, 1, 2, 7, *PROTOCOL_SEEDS} & set(SWA_CAP_SEEDS) and len(set(SWA_CAP_SEEDS)) == 5


def test_committed_swa_cap_files_follow_their_protocol():
    """Each swa-cap-TASK.json (none until a task's runs are done): the two labels, the
    protocol's seeds, per-pair values, swa-cap's SWA slept its 4,000 steps each seed, and its
    table (``tools/confirm.py table --candidate default+swa-cap``) and verdict on the protocol
    page."""
    for path in sorted(FOLDER.glob("swa-cap-*.json")):
        runs = json.loads(path.read_text(encoding="utf-8"))
        assert sorted(run["label"] for run in runs) == ["default", "swa-cap"], path.name
        result = check(runs, 1.0, ("default", "swa-cap"), changes=("swa-cap", "default"))
        assert result["seeds"] == SWA_CAP_SEEDS and list(result["own"]) == ["swa"], path.name
        (cap,) = [run for run in runs if run["label"] == "swa-cap"]
        assert [s["steps"] for s in cap["samplers"]["swa"]["sleep_by_seed"]] == [4000] * 5
        page = (FOLDER / "swa-cap-protocol.md").read_text(encoding="utf-8")
        missing = [row for row in table(runs, ("default", "swa-cap")) if row not in page]
        assert not missing, (path.name, missing)
        task = path.stem.removeprefix("swa-cap-")
        verdict = "confirms" if result["confirmed"] else "does not confirm"
        assert f"### {task}: {verdict}\n" in page, path.name


def _run(label, samplers, seeds=(100, 7)):
    return {
        "label": label,
        "seeds": list(seeds),
        "samplers": {
            name: {"validation_partial_kl": validation, "per_pair_partial_kl_by_seed": values}
            for name, (validation, values) in samplers.items()
        },
    }


def _values(shift, rng, seeds=2, pairs=30):
    return [[10 + shift + rng.gauss(0, 1) for _ in range(pairs)] for _ in range(seeds)]


def test_the_pick_and_the_best_are_chosen_on_validation_not_on_test():
    rng = random.Random(3)
    good, worse, best = _values(0.0, rng), _values(0.4, rng), _values(-5.0, rng)
    runs = [
        _run("default", {"swa": (20.0, good), "swp": (21.0, best)}),  # swp is best on test
        _run("usual", {"swa": (19.0, worse)}),
    ]  # ... but usual's swa on validation
    result = check(runs, delta=1.0)
    assert (result["pick"], result["best"]) == ("default/swa", "usual/swa")
    expected = upper_bound(good, worse)
    assert result["mean"] == pytest.approx(expected["mean"]) and result["mean"] < 0
    assert result["upper"] == pytest.approx(expected["mean"] + expected["t"] * expected["se"])
    assert result["df"] == pytest.approx(expected["df"]) and result["confirmed"]
    assert not check(runs, delta=result["upper"] - 1e-9)["confirmed"]


def test_the_candidate_level_with_itself_and_runs_of_other_seeds_refused():
    rng = random.Random(4)
    values = _values(0.0, rng)
    result = check(
        [_run("default", {"swp": (5.0, values)}), _run("usual", {"swp": (6.0, _values(3.0, rng))})],
        delta=0.5,
    )
    assert result["pick"] == result["best"] == "default/swp"
    assert (result["mean"], result["upper"], result["confirmed"]) == (0.0, 0.0, True)
    with pytest.raises(SystemExit, match="do not share their training seeds"):
        check(
            [
                _run("default", {"swp": (5.0, values)}),
                _run("usual", {"swp": (6.0, values)}, seeds=(100, 8)),
            ],
            delta=0.5,
        )


def test_collect_reads_a_runs_training_seeds_and_per_pair_values(finished_run):
    run, _ = finished_run
    [got] = collect("cipher", {"default": run.dir}, "nfst run ...", "abc1234")
    assert got["label"] == "default" and got["seeds"] == [run.training_seed(0)]
    assert set(got["samplers"]) == set(run.config.samplers)
    results = run.results()
    for name, m in got["samplers"].items():
        assert len(m["per_pair_partial_kl_by_seed"]) == 1 and len(
            m["per_pair_partial_kl_by_seed"][0]
        ) == len(run.lattices("test"))
        # cipher's generating structure: the share of test samples through the right cipher
        shown = results["samplers"][name]
        assert (m["generating_cipher"], m["generating_cipher_se"]) == (
            shown["generating_cipher"],
            shown["generating_cipher_se"],
        )
        assert 0 <= m["generating_cipher"] <= 1


def test_a_candidate_of_two_runs_takes_the_later_runs_samplers_in_place_of_the_earlier():
    """``default+swa-cap``: default's samplers, its swa replaced by swa-cap's; the pick is
    among those, the best among every configuration; own changes pair the two runs' swa."""
    rng = random.Random(6)
    long_swa, swp, old_swa = _values(0.0, rng), _values(1.0, rng), _values(3.0, rng)
    runs = [
        _run("default", {"swa": (9.0, old_swa), "swp": (12.0, swp)}),
        _run("swa-cap", {"swa": (11.0, long_swa)}),
    ]
    assert check(runs, delta=1.0)["pick"] == "default/swa"  # default alone
    result = check(runs, delta=1.0, labels=("default", "swa-cap"))
    assert (result["pick"], result["best"]) == ("swa-cap/swa", "default/swa")
    assert result["mean"] == pytest.approx(gap(long_swa, old_swa)["mean"]) and result["mean"] < 0
    assert table(runs, ("default", "swa-cap"))[3].startswith("| swa-cap | swa | 11.00 |")
    change = own_changes(runs, "swa-cap", "default")
    assert list(change) == ["swa"] and change["swa"]["mean"] == pytest.approx(result["mean"])
    with pytest.raises(SystemExit, match="no run labelled 'usual'"):
        check(runs, delta=1.0, labels=("usual",))


def test_own_changes_bounded_confirm_only_below_delta_and_pay_only_below_zero():
    rng = random.Random(8)
    old, better = _values(2.0, rng), _values(0.0, rng)
    runs = [
        _run("default", {"swa": (9.0, old), "swp": (5.0, _values(-4.0, rng))}),
        _run("swa-cap", {"swa": (8.0, better)}),
    ]
    result = check(runs, 1.0, ("default", "swa-cap"), changes=("swa-cap", "default"))
    expected = upper_bound(better, old)
    assert list(result["own"]) == ["swa"] and result["pick"] == "default/swp"
    assert result["own"]["swa"]["upper"] == pytest.approx(expected["upper"])
    assert expected["upper"] < 0
    assert result["confirmed"] and result["pays"]
    worse = check(runs, 1.0, ("default", "swa-cap"), changes=("default", "swa-cap"))
    assert worse["own"]["swa"]["upper"] > 1.0  # default's swa is 2 nats higher
    assert not worse["confirmed"] and not worse["pays"]
    level = [[v + 0.3 for v in seed] for seed in old]  # 0.3 higher: within δ, not lower
    runs[1]["samplers"]["swa"]["per_pair_partial_kl_by_seed"] = level
    even = check(runs, 1.0, ("default", "swa-cap"), changes=("swa-cap", "default"))
    assert 0 < even["own"]["swa"]["upper"] < 1.0 and even["confirmed"] and not even["pays"]
