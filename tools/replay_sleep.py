"""Where ``sampler.sleep_steps=auto`` would have ended a sleep phase that ran a fixed number of
steps, for each patience P: replayed on the phase's recorded validations (training is
deterministic given its seed, so an ``auto`` run of the same seed validates the same values up
to its switch). Each line gives a record's validation partial KL at step 0 and its best over
the whole phase, then per P the step where ``auto`` would switch and the best it had by then.

    python tools/replay_sleep.py MIN_DELTA P[,P...] RECORD.json ...   # JSON last line

RECORD: a run's ``stages/sampler-NAME[-seedJ].json`` (its ``history``); MIN_DELTA: the run's
``sampler.min_delta`` (0.1 at the large preset).

A rule on the sleep loss instead (each step's mean −log q of its fresh triples, recorded at
every step): the phase ends at the end of the first window of W steps whose mean loss is less
than EPS nats below the window before's (the earliest at step 2W), per record:

    python tools/replay_sleep.py loss W EPS RECORD.json ...          # JSON last line
"""

import json
import sys

import torch

from nfst.train.early_stopping import EarlyStopping


def sleep_validations(history: list[dict]) -> list[tuple[int, float]]:
    """(step, validation partial KL) before training and through the sleep phase."""
    last = max((r["step"] for r in history if r.get("phase") == "sleep"), default=0)
    return [
        (r["step"], r["dev_partial_kl"])
        for r in history
        if "dev_partial_kl" in r and r["step"] <= last
    ]


def replay(
    validations: list[tuple[int, float]], patience: int, min_delta: float
) -> tuple[int, float]:
    """The step where ``auto`` with ``sleep_patience=patience`` switches (the phase's last step
    if it never does), and the best value by then: the trainer's rule, on the same
    :class:`EarlyStopping`."""
    (_, first), *rest = validations
    early = EarlyStopping(patience, {}, min_delta, best=first)
    since_best = 0
    for step, value in rest:
        since_best = (
            0 if early.update(step, value, torch.nn.Module(), count=False) else since_best + 1
        )
        if since_best >= patience:
            return step, early.best
    return validations[-1][0], early.best


def sleep_losses(history: list[dict]) -> list[float]:
    """The sleep phase's loss at each of its steps 1, 2, ..."""
    return [r["loss"] for r in history if r.get("phase") == "sleep"]


def loss_switch(losses: list[float], window: int, eps: float) -> int:
    """Where the sleep-loss rule ends a phase of these per-step losses (module docstring): the
    end of the first window of ``window`` steps whose mean is not ``eps`` below the one before,
    else the phase's last step."""
    means = [
        sum(losses[k : k + window]) / window for k in range(0, len(losses) - window + 1, window)
    ]
    for j in range(1, len(means)):
        if means[j - 1] - means[j] < eps:
            return (j + 1) * window
    return len(losses)


def main_loss(window: str, eps: str, *records: str) -> None:
    rows = []
    for path in records:
        with open(path) as f:
            losses = sleep_losses(json.load(f)["history"])
        switch = loss_switch(losses, int(window), float(eps))
        rows.append({"record": path, "steps_of_phase": len(losses), "switch": switch})
        print(f"{path}: {len(losses)} sleep steps; the loss rule switches at {switch}")
    print(
        json.dumps(
            {
                "bench": "replay_sleep_loss",
                "window": int(window),
                "eps": float(eps),
                "records": rows,
            }
        )
    )


def main(min_delta: str, patiences: str, *records: str) -> None:
    rows = []
    for path in records:
        with open(path) as f:
            validations = sleep_validations(json.load(f)["history"])
        row = {
            "record": path,
            "start": validations[0][1],
            "best_of_phase": min(v for _, v in validations),
            "steps_of_phase": validations[-1][0],
            "auto": {
                p: replay(validations, int(p), float(min_delta)) for p in patiences.split(",")
            },
        }
        print(
            f"{path}: start {row['start']:.2f}, best of {row['steps_of_phase']} steps "
            f"{row['best_of_phase']:.2f};",
            "; ".join(f"P {p}: switch {s}, best {b:.2f}" for p, (s, b) in row["auto"].items()),
        )
        rows.append(row)
    print(json.dumps({"bench": "replay_sleep", "min_delta": float(min_delta), "records": rows}))


if __name__ == "__main__":
    if sys.argv[1:2] == ["loss"]:
        main_loss(*sys.argv[2:])
    else:
        main(*sys.argv[1:])
