"""The proof as the search runs and as the verifier streams it: the engine keeps only its open
frontier when a recorder takes the closed nodes, the streamed proof is the proof of the whole
tree recorded after the search, the time limit keeps the recorder's reserve for the
certificate, and the verifier's walk split over worker processes gives the serial verdict and
messages."""

from __future__ import annotations

import os
import tempfile

import numpy as np
import pytest
from _certgen import TNode, branch, make_certificate

import sparsecert
from sparsecert.bnb import BranchAndBound
from sparsecert.certificate import verify as V
from sparsecert.certificate import verify_certificate
from sparsecert.proof.producer import produce, start
from sparsecert.proof.recorder import ProofRecorder
from sparsecert.solvers.perspective import RelaxationProblem


def _problem(seed: int = 3, n: int = 30, p: int = 14):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    y = X[:, :4] @ np.array([1.0, -0.8, 0.6, 0.4]) + 0.8 * rng.standard_normal(n)
    return X, y


def _noise(seed: int = 4, n: int = 30, p: int = 20):
    """Pure noise: no support stands out, the tree grows."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, p)), rng.standard_normal(n)


def _records(X, y, k, lambda2, **search):
    """The prepared problem and the search options, as :func:`sparsecert.certify` makes them."""
    from sparsecert._validation import prepare
    from sparsecert.problem import build_records

    spec, options = build_records(dict(k=k, lambda2=lambda2, fit_intercept=False, verbose=0,
                                       n_jobs=1, **search))
    return prepare(X, y, spec), options


def _tree(cert):
    """(status, derive, witness vector or None) of every node in preorder."""
    out = []
    for nd in cert.nodes:
        w = nd["witness"]
        vec = None if w is None else (w[0], cert.witness(*w))
        out.append((nd["status"], nd["parent"], nd["branch_var"], nd["branch_value"],
                    nd["derive"], vec))
    return out


def test_the_engine_keeps_only_its_open_frontier_and_the_streamed_proof_is_the_trees():
    """With a recorder the engine hands every closed node over and keeps the open ones only;
    the proof it streams is the proof recorded from the whole tree after a run without one
    (same records in preorder, same witnesses, same claims), and it verifies."""
    X, y = _noise()
    k, lam = 4, 0.01
    prepared, options = _records(X, y, k, lam, node_limit=40)
    prob = RelaxationProblem.from_prepared(prepared)

    recorder = start(prob, prepared)
    streamed = BranchAndBound(prob, k, options, proof=recorder).run()
    assert streamed.streamed and streamed.n_nodes > 20
    assert all(nd.status == "open" for nd in streamed.nodes)
    assert len(streamed.nodes) == streamed.n_open < streamed.n_nodes
    assert recorder.n_closed == streamed.n_nodes - streamed.n_open
    a = produce(streamed, prob, prepared, options, recorder=recorder)

    whole = BranchAndBound(prob, k, options).run()  # the same search, every node kept
    assert not whole.streamed and len(whole.nodes) == whole.n_nodes == streamed.n_nodes
    b = produce(whole, prob, prepared, options)

    assert a.lower_bound == b.lower_bound and a.upper_bound == b.upper_bound
    assert a.certificate.data["tree"] == b.certificate.data["tree"]
    ta, tb = _tree(a.certificate), _tree(b.certificate)
    assert len(ta) == len(tb) == streamed.n_nodes
    for x, z in zip(ta, tb, strict=True):
        assert x[:5] == z[:5]
        assert (x[5] is None) == (z[5] is None)
        if x[5] is not None:
            assert x[5][0] == z[5][0] and np.array_equal(x[5][1], z[5][1])
    rep = verify_certificate(a.certificate, X, y)
    assert rep.ok and rep.summary["n_nodes"] == streamed.n_nodes, str(rep)


def test_the_time_limit_keeps_the_recorders_reserve(monkeypatch):
    """A reserve as long as the limit stops the search after the root (status time_limit),
    and the certificate of that stopped search verifies; without the reserve the same search
    closes the gap."""
    X, y = _problem(seed=5)
    plain = sparsecert.certify(X, y, 3, 0.05, fit_intercept=False, time_limit=600, verbose=0)
    assert plain.status == "optimal" and plain.n_nodes > 1
    monkeypatch.setattr(ProofRecorder, "reserve", lambda self, n_open: 1e9)
    res = sparsecert.certify(X, y, 3, 0.05, fit_intercept=False, time_limit=600, verbose=0)
    assert res.status == "time_limit" and res.search.n_evaluated == 1
    rep = res.verify(X, y)
    assert not rep.input_error and not rep.failed_checks, str(rep)
    assert res.verification_time == rep.seconds
    assert res.certificate_bytes == res.proof_stats.total_bytes > 64
    assert res.assembly_time >= 0.0


def test_certify_reports_what_the_certificate_cost():
    X, y = _problem(seed=6)
    res = sparsecert.certify(X, y, 2, 0.1, fit_intercept=False, verbose=0)
    st = res.proof_stats
    assert st.n_nodes == res.certificate.n_nodes == res.n_nodes
    assert st.proof_bytes == res.certificate.data["proof"]["bytes"]
    assert res.certificate_bytes == res.certificate.nbytes
    assert "bytes a node" in st.line() and f"{st.n_nodes:,} nodes" in st.line()


# ------------------------------------------------------------------------------ where it lives


def _folders(root) -> list:
    return sorted(p.name for p in root.iterdir() if p.name.startswith("sparsecert-proof-"))


def test_a_small_proof_is_written_in_memory_and_a_large_one_in_a_folder_removed_with_it(
        monkeypatch, tmp_path):
    """A search whose streams stay under the recorder's memory bound touches no file: its
    certificate holds the proof's bytes. With a bound of 64 bytes the streams move to a
    temporary folder during the search: the proof file there is byte for byte the same, both
    certificates verify and refuse other data, and the folder goes with the certificate."""
    import gc

    from sparsecert.proof import recorder as rec

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    X, y = _noise(seed=8, n=24, p=12)
    kw = dict(fit_intercept=False, verbose=0, node_limit=30)
    small = sparsecert.certify(X, y, 3, 0.01, **kw)
    assert small.n_nodes > 5 and _folders(tmp_path) == []
    assert isinstance(small.certificate.proof_source(), bytes)

    made = []
    mkdtemp = tempfile.mkdtemp
    monkeypatch.setattr(rec.tempfile, "mkdtemp", lambda **a: made.append(mkdtemp(**a)) or made[-1])
    monkeypatch.setattr(rec, "_MEMORY_BYTES", 64)
    spilled = sparsecert.certify(X, y, 3, 0.01, **kw)
    assert len(made) == 1 and _folders(tmp_path) == [os.path.basename(made[0])]
    src = spilled.certificate.proof_source()
    assert isinstance(src, str) and os.path.dirname(src) == made[0]
    assert os.listdir(made[0]) == [os.path.basename(src)]  # the streams' files are removed
    assert spilled.certificate.proof_bytes() == small.certificate.proof_source()
    assert spilled.certificate.data["proof"] == small.certificate.data["proof"]
    other = y.copy()
    other[0] += 1.0
    for res in (small, spilled):
        assert res.verify(X, y).ok
        assert not verify_certificate(res.certificate, X, other).ok
    del spilled, res
    gc.collect()
    assert _folders(tmp_path) == []


def test_a_proof_larger_than_the_bound_goes_to_a_file_and_an_abandoned_one_leaves_nothing(
        monkeypatch, tmp_path):
    """Streams held in memory, a final file above the bound: it is written in a temporary
    folder (removed with the certificate); a recorder discarded leaves no folder behind."""
    import gc

    from sparsecert.proof import recorder as rec

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    X, y = _noise(seed=9, n=24, p=12)
    prepared, options = _records(X, y, 3, 0.01, node_limit=30)
    prob = RelaxationProblem.from_prepared(prepared)
    recorder = start(prob, prepared)
    search = BranchAndBound(prob, 3, options, proof=recorder).run()
    assert recorder.dir is None and _folders(tmp_path) == []
    monkeypatch.setattr(rec, "_MEMORY_BYTES", 64)  # after the search: only the final file
    proof = produce(search, prob, prepared, options, recorder=recorder)
    src = proof.certificate.proof_source()
    assert isinstance(src, str) and os.listdir(recorder.dir) == [os.path.basename(src)]
    assert verify_certificate(proof.certificate, X, y).ok
    del proof
    gc.collect()
    assert _folders(tmp_path) == []

    recorder = start(prob, prepared)
    BranchAndBound(prob, 3, options, proof=recorder).run()
    assert recorder.dir is not None and _folders(tmp_path)  # 64 bytes: moved to files
    recorder.discard()
    assert _folders(tmp_path) == []


# ------------------------------------------------------------------------------ parallel walk


def _balanced(depth: int, d: int = 0) -> TNode:
    if d == depth:
        return TNode(status="open")
    return branch(d, _balanced(depth, d + 1), _balanced(depth, d + 1))


def _wide_certificate(X, y, lower: float):
    """A balanced tree of 2^8 leaves under the root's dual witness, some subtrees with
    witnesses of their own (scaled duals), claiming ``lower``."""
    p = X.shape[1]
    root = _balanced(8)
    root.witness = ("dual", -2.0 * y)
    for i, nd in enumerate(root.preorder()):
        if nd.kids and i % 7 == 3:
            nd.witness = ("dual", -1.5 * y)
    return make_certificate(X, y, root, problem=dict(loss="squared", k=p, lambda2=1.0),
                            incumbent=dict(coef=np.zeros(p), objective=float(y @ y)),
                            bounds=dict(lower_bound=lower, upper_bound=float(y @ y) * 1.01,
                                        status="time_limit"))


@pytest.mark.parametrize("failing", [False, True])
def test_the_walk_over_two_processes_gives_the_serial_verdict(monkeypatch, failing):
    """Subtrees handed to two worker processes (tasks of 16 to 64 records here): the same
    checks, messages, certified bound and counts as the serial walk, for an honest tree and
    for one whose claimed bound some leaves do not reach (the first failures in preorder)."""
    rng = np.random.default_rng(7)
    X = rng.standard_normal((12, 10))
    y = X[:, 0] - X[:, 1] + 0.3 * rng.standard_normal(12)
    lower = -1e9
    if failing:  # between the least and the largest leaf bounds
        rep = verify_certificate(_wide_certificate(X, y, -1e9), X, y)
        assert rep.ok
        lower = rep.certified_lower_bound + 0.5 * abs(rep.certified_lower_bound)
    cert = _wide_certificate(X, y, lower)
    monkeypatch.setattr(V, "_MIN_TASK", 16)
    submitted = []
    orig = V._Splitter.submit

    def counting(self, *args):
        submitted.append(args[1])
        return orig(self, *args)

    monkeypatch.setattr(V._Splitter, "submit", counting)
    serial = verify_certificate(cert, X, y, n_jobs=1)
    assert not submitted
    parallel = verify_certificate(cert, X, y, n_jobs=2)
    assert len(submitted) >= 4  # the walk was split
    assert parallel.checks == serial.checks
    assert parallel.exit_code == serial.exit_code == (1 if failing else 3)
    assert parallel.certified_lower_bound == serial.certified_lower_bound
    assert parallel.summary["n_regions"] == serial.summary["n_regions"]
    if failing:
        assert "leaf_bounds" in serial.failed_checks


# ------------------------------------------------------------------------------ root fixings


def _rooted(X, y, k, var, **problem):
    """The root branched on ``var`` with its dual witness: the child z_var = 0 an open leaf,
    the child z_var = 1 a malformed record (reserved bits set) that only a walk reaching it
    reads; the problem's optional fields added to the document."""
    p = X.shape[1]
    root = branch(var, TNode(status="open"), TNode(status="open", raw={"head": 0x20 | 3}))
    root.witness = ("dual", -2.0 * y)
    cert = make_certificate(X, y, root, problem=dict(loss="squared", k=k, lambda2=1.0),
                            incumbent=dict(coef=np.zeros(p), objective=float(y @ y)),
                            bounds=dict(lower_bound=-1e9, upper_bound=float(y @ y) * 1.01,
                                        status="time_limit"))
    doc = cert.to_dict()
    doc["problem"].update(problem)
    return doc, cert.proof_bytes()


@pytest.mark.parametrize("k, var, fields", [(2, 0, dict(exclude=[0])),
                                            (1, 2, dict(always_select=[1]))])
def test_the_problems_fixed_features_are_the_roots_fixings(k, var, fields):
    """A branching that contradicts the problem's excluded features (z_j = 1 on an excluded
    j), or that puts more than k features in with the forced-in ones, makes an empty region:
    its records are never read. Without the field the same walk reaches the malformed record."""
    rng = np.random.default_rng(1)
    X, y = rng.standard_normal((8, 4)), rng.standard_normal(8)
    doc, proof = _rooted(X, y, k, var, **fields)
    rep = verify_certificate(doc, X, y, proof=proof)
    assert not rep.failed_checks and not rep.input_error, str(rep)
    assert "forced-in and excluded features fixed at the root" in str(rep)
    doc, proof = _rooted(X, y, k, var)
    rep = verify_certificate(doc, X, y, proof=proof)
    assert rep.failed_checks == ["tree_structure"] and "reserved bits" in str(rep)


def test_the_reserve_prices_an_open_node_like_a_leaf_without_fixings(monkeypatch):
    """At the end every open node is recorded as a leaf with its inherited witness and no
    fixings of its own: the reserve prices it at what such leaves cost during the search, not
    at the average over nodes with fixings (dearer) and branched ones (nearly free)."""
    import types

    from sparsecert.proof import recorder as R
    from sparsecert.statuses import BRANCHED

    cost = {"now": 0.0, "step": 0.0}

    def clock():  # each closed() spans one step of this clock
        cost["now"] += cost["step"]
        return cost["now"]

    monkeypatch.setattr(R, "time", types.SimpleNamespace(perf_counter=clock))
    kinds, recorders, original = [], set(), ProofRecorder.closed

    def closed(self, node, leaf=None):
        is_leaf = node.status != BRANCHED if leaf is None else leaf
        # a call spans one step: 5 s with fixings, 0.5 s a leaf without, 0 a branched node
        cost["step"] = 5.0 if node.bound_fixings else (0.5 if is_leaf else 0.0)
        kinds.append((bool(node.bound_fixings), is_leaf))
        recorders.add(self)
        return original(self, node, leaf)

    monkeypatch.setattr(ProofRecorder, "closed", closed)
    X, y = _noise()
    sparsecert.certify(X, y, 3, 0.05, fit_intercept=False, verbose=0, node_limit=200)
    (rec,) = recorders
    assert sum(leaf and not fx for fx, leaf in kinds) >= 16
    assert any(not leaf for _, leaf in kinds)  # branched nodes too, which cost 0 here
    assert rec.reserve(100) - rec.reserve(0) == pytest.approx(1.5 * 0.5 * 100, abs=0.5)
