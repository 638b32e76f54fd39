"""Hypothesis strategies shared by the tests."""

from hypothesis import settings
from hypothesis import strategies as st

from nfst import MarkedFST


def examples(n: int) -> int:
    """A test's max_examples: ``n`` under the ``dev`` and ``ci`` profiles, scaled by the loaded
    profile's max_examples over Hypothesis's default 100 (10x under ``thorough``;
    tests/conftest.py), since a test's own max_examples would otherwise override the profile's."""
    return max(1, n * settings.default.max_examples // 100)


@st.composite
def small_mfsts(draw, grouped: bool = False, wide: bool = False):
    """Random acyclic-ish MFSTs: ≤ 3 states, arcs with ≤ 1 symbol per tape (≤ 2 if ``wide``)
    and 1–2 marks, at least one mark per symbol unless ``grouped`` (then the last mark may
    carry two symbols, or four if ``wide``)."""
    n = draw(st.integers(1, 3))
    T = MarkedFST("random")
    for _ in range(n - 1):
        T.add_state()
    for q in draw(st.sets(st.integers(0, n - 1), min_size=1)):
        T.set_final(q)
    for _ in range(draw(st.integers(1, 7))):
        inp = draw(st.sampled_from(["", "a", "b"] + (["ab", "ba"] if wide else [])))
        out = draw(st.sampled_from(["", "c", "d"] + (["cd"] if wide else [])))
        k = max(1 if grouped else len(inp) + len(out), draw(st.integers(1, 2)))
        marks = draw(st.lists(st.sampled_from(["m", "n", "o"]), min_size=k, max_size=k))
        if not inp and not out:  # a marks-only arc would be a cycle if it loops
            inp = "a"
        T.add_arc(
            draw(st.integers(0, n - 1)),
            draw(st.integers(0, n - 1)),
            input=inp,
            output=out,
            marks=marks,
        )
    return T
