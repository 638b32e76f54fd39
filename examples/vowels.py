"""Tutorial task: a new topology and a new task in one file.

"vowels" strips the vowels of a word and may garble one consonant: (x, y) = ("banana",
"bnn"). The topology has two states: in state 0 each letter is copied (`copy c`), deleted
(`del c`) or replaced by another consonant (`sub c d`, at most once: it moves to state 1, where
only copies, deletions and insertions remain); a consonant may also be inserted (`ins d`).

    NFST_TASKS=examples/vowels.py nfst stats vowels
    NFST_TASKS=examples/vowels.py nfst run vowels --preset small --samplers swa,swp-prefix
"""

from dataclasses import dataclass

from nfst import MarkedFST
from nfst.tasks import Task, TaskSettings, register_task

LETTERS = "abcdefghijklmnopqrstuvwxyz"
VOWELS = "aeiou"
CONSONANTS = [c for c in LETTERS if c not in VOWELS]


def strip_and_garble() -> MarkedFST:
    T = MarkedFST("vowels")
    garbled = T.add_state(final=True)
    T.set_final(T.start)
    for q in (T.start, garbled):
        for c in LETTERS:
            T.add_arc(q, q, input=c, marks=["del", c])
            if c in CONSONANTS:
                T.add_arc(q, q, input=c, output=c, marks=["copy", c])
                T.add_arc(q, q, output=c, marks=["ins", c])
    for c in CONSONANTS:
        for d in CONSONANTS:
            if d != c:
                T.add_arc(T.start, garbled, input=c, output=d, marks=["sub", c, d])
    return T


@dataclass(frozen=True)
class VowelSettings(TaskSettings):
    train_size: int = 500
    eval_size: int = 100
    garble: float = 0.3
    """Probability that one consonant of y is replaced."""


@register_task
class Vowels(Task):
    name = "vowels"
    description = "strip vowels, maybe garble one consonant"
    splits = ("train", "dev", "test")
    Settings = VowelSettings

    def build_mfst(self, data_dir):
        return strip_and_garble()

    def load(self, split, data_dir):
        rng = self.rng(split)  # seeded by the task, its seed setting and the split
        pairs = []
        for _ in range(2000 if split == "train" else 200):
            x = [rng.choice(LETTERS) for _ in range(rng.randint(3, 8 if split != "test" else 12))]
            y = [c for c in x if c in CONSONANTS]
            if y and rng.random() < self.settings.garble:
                i = rng.randrange(len(y))
                y[i] = rng.choice([d for d in CONSONANTS if d != y[i]])
            pairs.append((tuple(x), tuple(y)))
        return pairs
