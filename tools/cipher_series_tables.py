"""The two markdown tables of the cipher series (``tools/cipher_series.py summary``): the
samplers fitted to the generating paths, and the samplers trained as usual."""

import math


def tables(result: dict) -> str:
    """Two markdown tables: fitted to the generating paths, and trained as usual."""

    def row(*cells):
        return "| " + " | ".join(str(c) for c in cells) + " |"

    splits = ("train", "dev", "test")
    lines = [
        row(
            "pairs",
            "sampler",
            "steps",
            *(f"q gen. cipher ({s})" for s in splits),
            *(f"argmax gen. ({s})" for s in splits),
        ),
        row(*["---"] * 9),
    ]
    for size, runs in result["fitted_to_generating_paths"].items():
        for name, r in runs.items():
            lines.append(
                row(
                    size,
                    name,
                    r.get("step"),
                    *(r.get(s, {}).get("q_generating_cipher") for s in splits),
                    *(r.get(s, {}).get("argmax_generating_cipher") for s in splits),
                )
            )
    lines += [
        "",
        row(
            "pairs",
            "sampler",
            "steps (best)",
            "test partial KL",
            "gap to SWP",
            *(f"samples naming gen. cipher ({s})" for s in splits),
            "q gen. cipher (test)",
        ),
        row(*["---"] * 9),
    ]
    for size, runs in result["trained_as_usual"].items():
        for name, r in runs.items():
            gap = (
                f"{r['gap_to_swp']:.1f} ± {r['gap_to_swp_se']:.1f}"
                if "gap_to_swp" in r
                else "reference"
                if name == "swp"
                else "–"
            )
            test = r.get("test", {"partial_kl": math.nan, "partial_kl_se": math.nan})
            lines.append(
                row(
                    size,
                    name,
                    f"{r['steps']} ({r['best_step']})",
                    f"{test['partial_kl']:.1f} ± {test['partial_kl_se']:.1f}",
                    gap,
                    *(f"{r.get(s, {}).get('generating_cipher', math.nan):.2f}" for s in splits),
                    f"{test.get('q_generating_cipher', math.nan):.2f}",
                )
            )
    return "\n".join(lines)
