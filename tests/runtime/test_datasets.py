"""CSR construction from edge lists, checked against a dense adjacency built independently."""

import numpy as np
import pytest

from sw.runtime.datasets import load_cora, load_edge_list, node_features


def test_edge_list_to_csr_by_hand(tmp_path):
    path = tmp_path / "g.txt"
    path.write_text("# comment\n10 30\n30 10\n20 20\n10 20\n")   # duplicate (both directions) and a self-loop
    g = load_edge_list(path)
    # ids 10, 20, 30 -> 0, 1, 2; undirected edges {0-2, 0-1}
    assert g.offsets.tolist() == [0, 2, 3, 4]
    assert g.indices.tolist() == [1, 2, 0, 0]


def test_cora_is_the_symmetrised_citation_graph():
    g = load_cora()
    assert (g.num_nodes, g.num_edges) == (2708, 10556)
    raw = np.loadtxt("data/graphs/cora.cites", dtype=np.int64)
    ids = np.unique(raw)
    dense = np.zeros((len(ids), len(ids)), dtype=bool)
    a, b = np.searchsorted(ids, raw[:, 0]), np.searchsorted(ids, raw[:, 1])
    dense[a, b] = dense[b, a] = True
    np.fill_diagonal(dense, False)
    rows = np.repeat(np.arange(g.num_nodes), np.diff(g.offsets))
    csr = np.zeros_like(dense)
    csr[rows, g.indices] = True
    assert (csr == dense).all() and dense.sum() == g.num_edges


def test_errors_name_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="graph file '/nonexistent/x.txt' does not exist"):
        load_edge_list("/nonexistent/x.txt")
    bad = tmp_path / "bad.txt"
    bad.write_text("1 2 3\n")
    with pytest.raises(ValueError, match=r"must hold two node ids per line, not 3 \(line 1: '1 2 3'\)"):
        load_edge_list(bad)
    with pytest.raises(ValueError, match=r"'a b'\)"):
        bad.write_text("# header\n0 1\na b\n")
        load_edge_list(bad)
    with pytest.raises(ValueError, match=r"must hold two integer node ids per line \(line 3: 'a b'\)"):
        load_edge_list(bad)
    bad.write_text("0 1\n1 99999999999999999999\n")
    with pytest.raises(ValueError, match="a node id outside the 64-bit integers"):
        load_edge_list(bad)
    bad.write_text("# only a comment\n\n")
    with pytest.raises(ValueError, match="holds no edge"):
        load_edge_list(bad)
    with pytest.raises(ValueError, match="is not a file"):
        load_edge_list(tmp_path)
    with pytest.raises(ValueError, match="dim must be positive, not 0"):
        node_features(3, 0)


def test_byte_order_mark_crlf_comments_and_any_integer_ids(tmp_path):
    """A file as a Windows editor writes it (UTF-8 BOM, CRLF), with comments after the ids and
    negative or huge ids, is the same graph as the plain one with ids 0..N-1 in the same order."""
    plain = tmp_path / "plain.txt"
    plain.write_text("0 1\n1 3\n3 0\n2 2\n")
    windows = tmp_path / "windows.txt"
    windows.write_bytes(b"\xef\xbb\xbf# edges\r\n-7 5 # first\r\n5\t9000000000\r\n"
                        b"9000000000 -7\r\n\r\n12 12\r\n")
    a, b = load_edge_list(plain), load_edge_list(windows)
    assert (a.offsets == b.offsets).all() and (a.indices == b.indices).all()
    assert a.num_nodes == 4 and a.num_edges == 6          # node 2 (id 12): only a self-loop, an empty row
