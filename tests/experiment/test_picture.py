import networkx as nx

from nfst import compile_lattice
from nfst.experiment import picture
from nfst.fsts import deletion_insertion


def test_png_without_graphviz(tmp_path, monkeypatch):
    monkeypatch.setattr(picture.shutil, "which", lambda name: None)
    lat = compile_lattice(deletion_insertion("ab", "cd"), "ab", "c")
    png, dot = tmp_path / "lat.png", tmp_path / "lat.dot"
    assert picture.write_lattice_picture(lat, str(dot), str(png)) == [str(dot), str(png)]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert dot.read_text().startswith("digraph")


def test_lattice_to_networkx():
    lat = compile_lattice(deletion_insertion("ab", "cd"), "ab", "c")
    graph = lat.to_networkx()
    assert (graph.number_of_nodes(), graph.number_of_edges()) == (lat.num_states, lat.num_arcs)
    assert nx.is_directed_acyclic_graph(graph)
    for s, data in graph.nodes(data=True):
        assert data["position"] == tuple(lat.positions[s]) and data["final"] == lat.final[s]
    paths = {
        tuple(graph.edges[e]["mark"] for e in zip(p, p[1:], [0] * len(p)))
        for p in nx.all_simple_paths(graph, 0, [s for s in graph if lat.final[s]])
    }
    assert paths == set(lat.mark_strings())
