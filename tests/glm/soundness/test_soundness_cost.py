"""The verifier's cost is bounded by the data and by what the certificate's tree references.

Small hostile files that would cost minutes or gigabytes: a positive eigenvalue shift on data
with more columns than rows (a p x p Gram matrix for a proof that can never succeed), a proof
file whose header declares a billion nodes or witnesses, more witness slots than nodes, a
subtree size that lies, a file padded beyond its header's counts. Each must be refused with one
line before the expensive step. And the walk of an honest tree costs memory independent of its
number of nodes. Memory is measured with tracemalloc (numpy reports its buffers to it), never
with a timer.
"""

from __future__ import annotations

import struct
import tracemalloc

import numpy as np
import pytest
from _certgen import TNode, branch, make_certificate, raw_proof, records_of, rehashed
from _certgen import with_records as _with_records

from sparsecert.certificate import Certificate, verify_certificate
from sparsecert.certificate import verify as V

MB = 1 << 20


def _peak(fn, *args, **kwargs):
    """(result, peak traced memory in bytes) of fn(*args, **kwargs)."""
    tracemalloc.start()
    try:
        out = fn(*args, **kwargs)
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _one_node(X, y, *, mu=0.0, witness=None):
    """A one-node certificate (its leaf bounded by ``witness``, default the dual at 0)."""
    n, p = X.shape
    return Certificate.build(
        X, y, problem=dict(loss="squared", k=1, lambda2=1.0, max_abs_coef=None,
                           fit_intercept=False),
        incumbent=dict(coef=np.zeros(p), intercept=0.0, objective=float(y @ y)),
        bounds=dict(lower_bound=-1e6, upper_bound=float(y @ y) * 1.01 + 1, status="time_limit"),
        eig_shift=mu,
        nodes=[dict(id=0, parent=None, branch_var=None, branch_value=None, status="solved",
                    witness=witness or ("dual", -2.0 * y))])


# ------------------------------------------------------------------------------ the shift


def test_a_shift_on_wide_data_is_refused_before_the_gram_matrix(monkeypatch):
    """p = 30,000 columns, n = 2 rows (480 KB of data): X^T X is singular, no shift is true."""
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((2, 30_000)), np.array([1.0, -1.0])
    cert = _one_node(X, y, mu=1.0)
    rep, peak = _peak(verify_certificate, cert, X, y)
    assert rep.exit_code == 1 and "eig_shift" in rep.failed_checks, str(rep)
    msg = dict(rep.failures)["eig_shift"]
    assert "can never be proven" in msg and "rank at most 2" in msg and "\n" not in msg
    assert peak < 40 * MB, peak  # the Gram matrix alone would be 7.2 GB


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_rank_deficiency_is_decided_from_the_sizes(monkeypatch, fit_intercept):
    def no_product(*args, **kwargs):
        raise AssertionError("a product was formed for a shift that can never be proven")

    rng = np.random.default_rng(1)
    n = 6
    p = n + 1 - int(fit_intercept)  # one more column than the rank of X^T P X
    X = rng.standard_normal((n, p))
    monkeypatch.setattr(np, "matmul", no_product)
    ok, msg = V.proves_eig_shift(X, 1e-3, fit_intercept)
    assert not ok and "can never be proven" in msg
    from sparsecert.solvers import rigorous as R

    Xd = X - X.mean(0) if fit_intercept else X
    assert not R.proves_eig_shift(Xd, 1e-3, fit_intercept)


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_a_shift_above_a_columns_squared_norm_is_refused_before_the_gram(monkeypatch,
                                                                         fit_intercept):
    """A diagonal entry of X^T P X bounds its smallest eigenvalue: O(n p), not O(n p^2)."""
    X = np.random.default_rng(5).standard_normal((40, 6))
    Xc = X - X.mean(0) if fit_intercept else X
    mu = float((Xc ** 2).sum(0).min()) * (1 + 1e-9)
    monkeypatch.setattr(np, "matmul", lambda *a, **k: pytest.fail("the Gram matrix was formed"))
    ok, msg = V.proves_eig_shift(X, mu, fit_intercept)
    assert not ok and "squared norm of column" in msg


def test_the_gram_matrix_is_never_formed_for_a_hopeless_shift():
    """With p = 3000 > n the old proof built a 72 MB Gram matrix and two triangular copies."""
    X = np.random.default_rng(2).standard_normal((2, 3000))
    (ok, msg), peak = _peak(V.proves_eig_shift, X, 1.0, False)
    assert not ok and peak < 4 * MB, (msg, peak)


def test_the_shift_proof_has_a_size_limit(monkeypatch):
    monkeypatch.setattr(V, "SHIFT_MAX_FEATURES", 3)
    X = np.random.default_rng(3).standard_normal((10, 4))
    ok, msg = V.proves_eig_shift(X, 1e-6, False)
    assert not ok and "at most 3 features" in msg
    monkeypatch.setattr(V, "SHIFT_MAX_FEATURES", 4)
    assert V.proves_eig_shift(X, 1e-6, False)[0]


def test_the_producer_and_the_verifier_share_the_size_limit():
    from sparsecert.solvers import rigorous as R

    assert R.SHIFT_MAX_FEATURES == V.SHIFT_MAX_FEATURES


# ------------------------------------------------------------------------------ the proof file


def _small_problem(p: int = 3):
    rng = np.random.default_rng(4)
    X = rng.standard_normal((4, p))
    y = X[:, 0] - X[:, -1] + 0.1
    return X, y


def _with_header(proof: bytes, **counts) -> bytes:
    """The proof bytes with some of the header's counts replaced."""
    names = ("n_nodes", "n_dual", "n_shifted", "nnz", "n", "p")
    values = list(struct.unpack_from("<6Q", proof, 16))
    for key, v in counts.items():
        values[names.index(key)] = v
    return proof[:16] + struct.pack("<6Q", *values) + proof[64:]


@pytest.mark.parametrize("counts, needle", [
    (dict(n_nodes=10 ** 9), "header's counts"),  # a billion records in a file of one
    (dict(n_nodes=2 ** 60), "nodes"),
    (dict(n_dual=10 ** 9), "more than one per node"),
    (dict(nnz=10 ** 12), "nonzeros"),
    (dict(p=7), "n_features = 7"),
])
def test_a_header_that_lies_is_refused_before_anything_is_read(counts, needle):
    X, y = _small_problem()
    cert = _one_node(X, y)
    bad = _with_header(cert.proof_bytes(), **counts)
    rep, peak = _peak(verify_certificate, rehashed(cert.to_dict(), bad), X, y)
    assert rep.exit_code == 2 and needle in rep.error_line, str(rep)
    assert "\n" not in rep.error_line
    assert peak < 2 * MB, peak


def test_a_padded_proof_file_is_refused_unread(tmp_path):
    """8 MB of padding after an honest proof: its size is not its header's, refused before the
    hash (nothing but the header is read)."""
    X, y = _small_problem()
    cert = _one_node(X, y)
    padded = cert.proof_bytes() + bytes(8 * MB)
    (tmp_path / "c.proof").write_bytes(padded)
    import hashlib
    import json

    doc = cert.to_dict()
    doc["proof"].update(sha256=hashlib.sha256(padded).hexdigest(), bytes=len(padded))
    (tmp_path / "c.json").write_text(json.dumps(doc))
    calls = []
    real = V._hash_file
    try:
        V._hash_file = lambda src: calls.append(src) or real(src)
        rep, peak = _peak(verify_certificate, tmp_path / "c.json", X, y)
    finally:
        V._hash_file = real
    assert rep.exit_code == 2 and "header's counts" in rep.error_line, str(rep)
    assert not calls and peak < 2 * MB, peak


def test_more_witness_slots_than_nodes_are_refused():
    X, y = _small_problem()
    cert = _one_node(X, y)
    rows = [-2.0 * y] * 3
    bad = raw_proof(4, 3, [(1 | 8, 0, 0, 0)], duals=rows)  # 3 slots, one node
    rep = verify_certificate(rehashed(cert.to_dict(), bad), X, y)
    assert rep.exit_code == 2 and "more than one per node" in rep.error_line


@pytest.mark.parametrize("size0", [0, 2, 2 ** 32 - 1])
def test_a_subtree_size_that_lies_fails_structure_and_costs_nothing(size0):
    X, y = _small_problem()
    root = branch(0, TNode(status="open"), TNode(status="open"), witness=("dual", -2.0 * y))
    cert = make_certificate(X, y, root, problem=dict(loss="squared", k=1, lambda2=1.0),
                            incumbent=dict(coef=np.zeros(3), objective=float(y @ y)),
                            bounds=dict(lower_bound=-1e6, upper_bound=float(y @ y) * 1.01,
                                        status="time_limit"))
    assert verify_certificate(cert, X, y).ok
    proof = cert.proof_bytes()
    recs = records_of(proof)
    recs[0, 3] = size0
    rep, peak = _peak(verify_certificate, rehashed(cert.to_dict(), _with_records(proof, recs)),
                      X, y)
    assert rep.failed_checks == ["tree_structure"] and "not a tree in preorder" in \
        rep.failures[0][1], str(rep)
    assert peak < 2 * MB


def test_a_deep_chain_is_walked_without_recursion():
    """A caterpillar tree as deep as p (every branching z_d = 1 deeper): walked on the undo
    stack, verified."""
    X, y = _small_problem(40)

    def chain(depth: int) -> bytes:  # a caterpillar: the root's witness inherited by all
        recs = []
        for d in range(depth):
            recs.append((0 | (8 if d == 0 else 0), d, 0, 1))  # branched on d, child 0 a leaf
            recs.append((3, 0, 0, 0))
        recs.append((3, 0, 0, 0))
        sizes = [2 * (depth - d) + 1 for d in range(depth)]
        recs = [(h, v, s, 1) if h & 3 == 0 else (h, v, s, z) for (h, v, s, z) in recs]
        assert len(recs) == sizes[0]
        return raw_proof(4, 40, recs, duals=[-2.0 * y])

    peaks = []
    cert = _one_node(X, y)
    for depth in (32, 39):
        proof = chain(depth)
        c = rehashed(cert.to_dict(), proof)
        c.data["problem"]["k"] = 40
        rep, peak = _peak(verify_certificate, c, X, y)
        assert rep.ok, str(rep)
        peaks.append(peak)
    assert peaks[1] < peaks[0] + MB


def test_a_wide_tree_walks_in_memory_independent_of_its_size(monkeypatch):
    """2^9 and 2^12 leaves under one witness, records read 256 at a time: the walk's peak
    memory is the same (within 256 KB): no object per node is kept."""
    monkeypatch.setattr(V, "_RECORD_CHUNK", 256)
    X, y = _small_problem(18)

    def balanced(depth: int, d: int = 0) -> TNode:
        if d == depth:
            return TNode(status="open")
        return branch(d, balanced(depth, d + 1), balanced(depth, d + 1))

    peaks = []
    for depth in (9, 12):
        root = balanced(depth)
        root.witness = ("dual", -2.0 * y)
        cert = make_certificate(X, y, root, problem=dict(loss="squared", k=18, lambda2=1.0),
                                incumbent=dict(coef=np.zeros(18), objective=float(y @ y)),
                                bounds=dict(lower_bound=-1e9, upper_bound=float(y @ y) * 1.01,
                                            status="time_limit"))
        ctx_peak = _walk_peak(cert, X, y)
        peaks.append(ctx_peak)
    assert peaks[1] < peaks[0] + MB // 4, peaks


def _walk_peak(cert, X, y) -> int:
    """Peak traced memory of the tree walk alone (the proof file's bytes are held by the test
    already)."""
    import io

    c = V._parse(cert.to_dict())
    src = V._Source(cert.proof_bytes())
    with io.BytesIO(cert.proof_bytes()) as fh:
        layout = V._read_layout(fh, len(cert.proof_bytes()), c)
    ctx = V._Context(c, V._Design(X, y, "squared", False), src, layout, y, True)
    out, peak = _peak(V._check_tree, ctx, 1, None)
    assert out.stop is None and not out.bad and out.n_leaves == (layout.n_nodes + 1) // 2
    return peak


def test_shifted_witness_rows_are_checked_when_read(monkeypatch):
    """A shifted witness whose offsets decrease, or whose indices repeat or leave [0, p), or
    whose values are not finite gives no bound (a witness problem naming it); slots no node
    references are never read."""
    X = np.random.default_rng(2).standard_normal((8, 3))
    y = X[:, 0] + 0.1
    mu = 0.5 * float(np.linalg.eigvalsh(X.T @ X)[0])
    cert = Certificate.build(
        X, y, problem=dict(loss="squared", k=1, lambda2=1.0, max_abs_coef=None,
                           fit_intercept=False),
        incumbent=dict(coef=np.zeros(3), intercept=0.0, objective=float(y @ y)),
        bounds=dict(lower_bound=-1e6, upper_bound=float(y @ y) * 1.01, status="time_limit"),
        eig_shift=mu,
        nodes=[dict(id=0, parent=None, branch_var=None, branch_value=None, status="solved",
                    witness=("shifted", np.array([0.5, 0.0, -0.25])))])
    assert verify_certificate(cert, X, y).ok
    proof = bytearray(cert.proof_bytes())
    n_nodes, n_dual, n_shifted, nnz = struct.unpack_from("<4Q", proof, 16)
    off_at = 64 + 16 * n_nodes + 8 * 8 * n_dual
    val_at = off_at + 8 * (n_shifted + 1)
    idx_at = val_at + 8 * nnz
    for edit, needle in (
            (lambda b: struct.pack_into("<Q", b, off_at + 8, nnz + 1), "offsets"),
            (lambda b: struct.pack_into("<II", b, idx_at, 2, 2), "strictly increasing"),
            (lambda b: struct.pack_into("<II", b, idx_at, 0, 3), "strictly increasing"),
            (lambda b: struct.pack_into("<d", b, val_at, float("nan")), "not finite")):
        bad = bytearray(proof)
        edit(bad)
        rep = verify_certificate(rehashed(cert.to_dict(), bytes(bad)), X, y)
        assert rep.failed_checks == ["leaf_witnesses"], str(rep)
        assert needle in rep.failures[0][1] and "shifted witness 0 (node 0)" in \
            rep.failures[0][1]
