"""Tables of results as text: aligned for a terminal, or Markdown for reports."""

from __future__ import annotations

from typing import Sequence


def text_table(rows: Sequence[Sequence[str]], markdown: bool = False) -> str:
    """``rows[0]`` is the header. Aligned text: the first column left-aligned, the others
    right-aligned; Markdown: a pipe table."""
    if markdown:
        lines = ["| " + " | ".join(rows[0]) + " |", "|---" * len(rows[0]) + "|"]
        return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows[1:]])
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
    return "\n".join(
        "  ".join(
            [row[0].ljust(widths[0])] + [cell.rjust(w) for cell, w in zip(row[1:], widths[1:])]
        ).rstrip()
        for row in rows
    )
