"""Pictures of a lattice: Graphviz when its ``dot`` program is installed, else networkx and
matplotlib, with the states in columns by position (i + j, then the order along the arcs)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Optional

import networkx as nx

from ..fst.lattice import Lattice


def write_lattice_picture(lattice: Lattice, dot: Optional[str], png: Optional[str]) -> list[str]:
    """Write DOT text to ``dot`` and a PNG to ``png``; returns the files written."""
    written = []
    if dot:
        Path(dot).write_text(lattice.to_dot())
        written.append(dot)
    if png:
        exe = shutil.which("dot")
        if exe is not None:
            subprocess.run([exe, "-Tpng", "-o", png], input=lattice.to_dot(), text=True, check=True)
        else:
            draw_lattice(lattice, png)
        written.append(png)
    return written


def draw_lattice(lattice: Lattice, path: str) -> None:
    """A PNG of the lattice by networkx and matplotlib: one column per layer, layers ordered
    by i + j and, within one i + j, by the longest path from the start (both grow along
    every arc, so arcs point right); in a column, states that consumed more of y lie lower.
    Finals are doubled circles, arcs carry their marks."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    graph = lattice.to_networkx()
    depth = {0: 0}
    for s in nx.topological_sort(graph):  # longest path from the start, in arcs
        for _, t in graph.out_edges(s):
            depth[t] = max(depth.get(t, 0), depth[s] + 1)
    key = {s: (sum(graph.nodes[s]["position"]), depth[s]) for s in graph}
    layers: dict[tuple, list[int]] = {}
    for s in sorted(graph, key=lambda s: (graph.nodes[s]["position"][1], s)):
        layers.setdefault(key[s], []).append(s)  # more of y consumed: lower in the column
    pos = {}
    for column, k in enumerate(sorted(layers)):
        for row, s in enumerate(layers[k]):
            pos[s] = (column, (len(layers[k]) - 1) / 2 - row)
    width = max(6.0, 1.3 * len(layers))
    height = max(3.0, 1.0 * max(len(column) for column in layers.values()))
    fig, ax = plt.subplots(figsize=(width, height))
    finals = [s for s in graph if graph.nodes[s]["final"]]
    nx.draw_networkx_nodes(graph, pos, ax=ax, node_color="white", edgecolors="black", node_size=900)
    nx.draw_networkx_nodes(
        graph, pos, nodelist=finals, ax=ax, node_color="none", edgecolors="black", node_size=1300
    )
    nx.draw_networkx_labels(
        graph,
        pos,
        ax=ax,
        font_size=7,
        labels={s: f"{s}\n{graph.nodes[s]['position']}" for s in graph},
    )
    # Arcs that skip columns bend further, so that they pass beside the states in between.
    for far in (False, True):
        edges = [(q, r) for q, r in graph.edges() if (pos[r][0] - pos[q][0] > 1) == far]
        style = f"arc3,rad={0.35 if far else 0.05}"
        nx.draw_networkx_edges(
            graph, pos, edgelist=edges, ax=ax, node_size=1300, arrowsize=12, connectionstyle=style
        )
        labels = {(q, r): " | ".join(d["mark"] for t, d in graph[q][r].items()) for q, r in edges}
        nx.draw_networkx_edge_labels(
            graph, pos, edge_labels=labels, ax=ax, font_size=7, connectionstyle=style
        )
    ax.set_title(f"x = {' '.join(lattice.x)}    y = {' '.join(lattice.y)}", fontsize=9)
    ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
