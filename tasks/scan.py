"""scan: the SCAN length split (Lake & Baroni 2018), generated from the SCAN grammar.

No data is needed: :func:`scan_commands` enumerates the grammar and interprets every command.

Grammar (C = command, S = phrase, V = verb phrase, U = verb, D = direction)::

    C -> S | S and S | S after S
    S -> V | V twice | V thrice
    V -> U | U D | U opposite D | U around D | turn D | turn opposite D | turn around D
    U -> walk | look | run | jump
    D -> left | right

Interpretation ([[.]] maps words to actions; LTURN = I_TURN_LEFT, RTURN = I_TURN_RIGHT)::

    [[walk]] = I_WALK (likewise look, run, jump)     [[turn left]] = LTURN
    [[u left]] = LTURN [[u]]                         [[turn opposite left]] = LTURN LTURN
    [[u opposite left]] = LTURN LTURN [[u]]          [[turn around left]] = LTURN x4
    [[u around left]] = (LTURN [[u]]) x4             (right likewise)
    [[v twice]] = [[v]] x2    [[v thrice]] = [[v]] x3
    [[s1 and s2]] = [[s1]] [[s2]]    [[s1 after s2]] = [[s2]] [[s1]]

That is 34 verb phrases, 102 phrases and 102 + 2·102² = 20,910 commands, each with one action
sequence. The length split puts every command with at most 22 actions in train and the rest
(24 to 48 actions; none has 23) in test: 16,990 and 3,920 pairs, exactly the published
``scan/length_split`` files (tests/tasks/test_scan.py checks this when the data is present).

Splits: ``dev`` is a seeded sample of ``dev_size`` pairs held out of the length-split train
set, ``train`` is a seeded sample of ``train_size`` of the rest, and ``test`` one of
``eval_size`` pairs of the length-split test set.

T is the one-state deletion/insertion MFST over words: ``<del> walk`` reads a command word,
``<ins> I_WALK`` writes an action.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from nfst.fst.mfst import MarkedFST
from nfst.fsts import deletion_insertion

from .base import MalformedLine, Pair, PaperStats, Task, TaskSettings, read_records, steps
from .registry import register_task

VERBS = {"walk": "I_WALK", "look": "I_LOOK", "run": "I_RUN", "jump": "I_JUMP"}
TURNS = {"left": "I_TURN_LEFT", "right": "I_TURN_RIGHT"}
REPEATS = {"": 1, "twice": 2, "thrice": 3}
WORDS = (
    tuple(VERBS)
    + ("turn",)
    + tuple(TURNS)
    + ("opposite", "around", "twice", "thrice", "and", "after")
)
ACTIONS = tuple(VERBS.values()) + tuple(TURNS.values())


def _verb_phrases() -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    """The 34 (V, [[V]]) pairs."""
    phrases = []
    for verb in (*VERBS, "turn"):
        act = (VERBS[verb],) if verb != "turn" else ()
        if act:
            phrases.append(((verb,), act))
        for direction, turn in TURNS.items():
            phrases.append(((verb, direction), (turn,) + act))
            phrases.append(((verb, "opposite", direction), (turn, turn) + act))
            phrases.append(((verb, "around", direction), ((turn,) + act) * 4))
    return phrases


def scan_commands() -> list[Pair]:
    """Every SCAN command with its action sequence, in a fixed order (S, then S and S, then
    S after S)."""
    phrases = [
        (v + ((word,) if word else ()), meaning * k)
        for v, meaning in _verb_phrases()
        for word, k in REPEATS.items()
    ]
    commands = list(phrases)
    commands += [(c1 + ("and",) + c2, a1 + a2) for c1, a1 in phrases for c2, a2 in phrases]
    commands += [(c1 + ("after",) + c2, a2 + a1) for c1, a1 in phrases for c2, a2 in phrases]
    return commands


def length_split(commands: list[Pair], max_train_actions: int = 22):
    """(train, test): commands with at most ``max_train_actions`` actions, and the rest."""
    train = [p for p in commands if len(p[1]) <= max_train_actions]
    test = [p for p in commands if len(p[1]) > max_train_actions]
    return train, test


_LINE = re.compile(r"IN: (.+?) OUT: (.+)")


def parse_scan_line(line: str) -> Pair:
    """One ``IN: <command> OUT: <actions>`` line as a pair; MalformedLine if it is not."""
    match = _LINE.fullmatch(line.strip())
    if match is None:
        raise MalformedLine(f"expected 'IN: <command> OUT: <actions>', got {line!r}")
    return tuple(match.group(1).split()), tuple(match.group(2).split())


def read_scan_file(path: Path, strict: bool = False) -> list[Pair]:
    """The (command words, actions) pairs of a SCAN file; malformed lines are skipped with a
    warning, or raise with ``strict`` (``read_records``)."""
    return read_records(path, parse_scan_line, strict)


@dataclass(frozen=True)
class ScanSettings(TaskSettings):
    max_train_actions: int = 22
    """Length split: train commands have at most this many actions, test commands more."""
    dev_size: int = 1_000
    """Pairs held out of the length-split train set as dev (before train_size applies)."""


@register_task
class Scan(Task):
    name = "scan"
    description = "SCAN length split, generated from the grammar; deletion/insertion MFST"
    splits = ("train", "dev", "test")
    Settings = ScanSettings
    paper = {  # 003 Table 2 ("Valid" is our dev)
        "train": PaperStats(8.1, 12.0, 285, 366, 35),
        "dev": PaperStats(8.0, 11.5, 271, 349, 35),
        "test": PaperStats(9.0, 25.3, 658, 854, 35),
    }

    def build_mfst(self, data_dir: Optional[Path]) -> MarkedFST:
        return deletion_insertion(WORDS, ACTIONS, name=self.name)

    def abbreviate(self, marks: Sequence[str]) -> str:
        """003 Table 5's notation: the words and actions in path order, the moves ``<del>`` and
        ``<ins>`` left out (words and actions never share a name), e.g. ``look I_TURN_LEFT
        around``."""
        return " ".join(symbol for _, symbol in steps(marks, 2))

    def size(self, split: str) -> Optional[int]:
        return None if split == "dev" else super().size(split)  # load() already sized dev

    def load(self, split: str, data_dir: Optional[Path]) -> list[Pair]:
        train, test = length_split(scan_commands(), self.settings.max_train_actions)
        if split == "test":
            return test
        # Hold dev out of the length-split train set so that train and dev never share a pair.
        dev_size = min(self.settings.dev_size, len(train))
        dev = set(self.rng("dev").sample(range(len(train)), dev_size))
        return [p for i, p in enumerate(train) if (i in dev) == (split == "dev")]
