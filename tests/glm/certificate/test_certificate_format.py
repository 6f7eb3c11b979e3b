"""Certificate building, serialisation (JSON + proof file), determinism, hashes, independence."""

from __future__ import annotations

import hashlib
import json
import math
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from _certgen import (
    TNode,
    data_sha256,
    encode_proof,
    enumeration_certificate,
    make_data,
)

from sparsecert.certificate import Certificate, verify_certificate
from sparsecert.certificate.schema import FORMAT_NAME, array_sha256, sha256_bytes
from sparsecert.certificate.verify import dual_domain_bounds
from sparsecert.proof.witnesses import exact_zero_sum

SRC = Path(__file__).resolve().parents[3] / "src"


@pytest.fixture(scope="module")
def sq():
    X, y = make_data("squared", n=20, p=5, seed=0)
    cert, info = enumeration_certificate(X, y, "squared", 2, 0.5)
    return X, y, cert, info


def test_required_fields_present(sq):
    X, y, genuine, info = sq
    g = genuine.to_dict()
    cert = Certificate.build(X, y, problem=g["problem"], incumbent=g["incumbent"],
                             bounds=dict(g["bounds"]), nodes=_links(info["tree"]),
                             producer=dict(settings=dict(a=1)))
    d = cert.to_dict()
    assert d["format"] == FORMAT_NAME and isinstance(d["format_version"], int)
    assert d["format_version"] == 3
    for key in ("loss", "k", "lambda2", "max_abs_coef", "fit_intercept", "n_samples",
                "n_features", "X_sha256", "y_sha256", "feature_names", "label_rule",
                "objective_definition"):
        assert key in d["problem"], key
    assert "labels" not in d["problem"]  # the label coding comes from the data, never from here
    assert set(d["incumbent"]) >= {"coef", "intercept", "support", "objective"}
    assert set(d["bounds"]) >= {"lower_bound", "upper_bound", "absolute_gap", "relative_gap",
                                "relative_gap_definition", "rel_gap_tolerance",
                                "abs_gap_tolerance", "status"}
    assert d["bounds"]["relative_gap_definition"] == "(UB - LB) / max(1, |UB|)"
    assert set(d["relaxation"]) >= {"eig_shift"}
    assert set(d["proof"]) >= {"sha256", "bytes"}
    assert set(d["tree"]) >= {"n_nodes", "n_leaves", "depth", "n_derive", "witnesses"}
    assert len(d["incumbent"]["coef"]) == X.shape[1]
    assert d["incumbent"]["support"] == np.flatnonzero(d["incumbent"]["coef"]).tolist()


def test_array_hash_matches_independent_construction():
    X = np.array([[1.0, -2.5], [0.0, 3.25], [7.0, -0.0]])
    ref = hashlib.sha256(b"<f8 3x2\n" + struct.pack("<6d", *X.ravel(order="C"))).hexdigest()
    assert array_sha256(X) == ref
    assert array_sha256(np.asfortranarray(X)) == ref  # layout does not matter
    assert array_sha256(X.astype(">f8")) == ref  # nor byte order
    y = np.array([1.0, 2.0, 3.0])
    assert array_sha256(y) == hashlib.sha256(b"<f8 3\n" + struct.pack("<3d", 1, 2, 3)).hexdigest()
    assert array_sha256(y.reshape(3, 1)) != array_sha256(y)  # the shape is hashed


def _links(root: TNode) -> list[dict]:
    """The nodes of a tree as Certificate.build takes them (ids in preorder, parent links)."""
    out, stack = [], [(root, None, None, None)]
    while stack:
        nd, parent, var, value = stack.pop()
        nid = len(out)
        out.append(dict(id=nid, parent=parent, branch_var=var, branch_value=value,
                        status=nd.status, witness=nd.witness, derive_fixings=nd.derive))
        if nd.kids:
            stack.append((nd.kids[1], nid, nd.var, 1))
            stack.append((nd.kids[0], nid, nd.var, 0))
    return out


@pytest.mark.parametrize("witness", ["dual", "shifted"])
def test_the_package_writer_and_the_independent_one_agree_byte_for_byte(witness):
    """Certificate.build (the package's writer: preorder from parent links with numpy) and
    tests/_certgen.py's own writer (recursion) give the same proof file for the same tree, in
    whatever order the nodes are given."""
    X, y = make_data("squared", n=20, p=5, seed=0)
    Xc = X - X.mean(0)
    mu = 0.5 * np.linalg.eigvalsh(Xc.T @ Xc)[0] if witness == "shifted" else 0.0
    cert, info = enumeration_certificate(X, y, "squared", 2, 0.5, witness=witness,
                                         fit_intercept=witness == "shifted", eig_shift=mu)
    root = info["tree"]
    root.kids[1].derive = True
    ours = encode_proof(root, *X.shape)
    links = _links(root)
    rng = np.random.default_rng(0)
    shuffled = [links[i] for i in rng.permutation(len(links))]
    d = cert.to_dict()
    built = Certificate.build(X, y, problem=d["problem"], incumbent=d["incumbent"],
                              bounds=dict(d["bounds"], rel_gap_tol=1e-4), eig_shift=mu,
                              nodes=shuffled)
    assert built.proof_bytes() == ours
    assert built.data["proof"] == {"sha256": sha256_bytes(ours), "bytes": len(ours),
                                   "description": built.data["proof"]["description"]}
    assert built.data["problem"]["X_sha256"] == data_sha256(X)
    assert built.data["tree"]["n_nodes"] == len(links)
    assert built.data["tree"]["n_derive"] == 1


def test_build_is_deterministic_except_timestamp(sq):
    X, y, cert, _ = sq
    d = cert.to_dict()
    nodes = _links(enumeration_certificate(X, y, "squared", 2, 0.5)[1]["tree"])
    a, b = (Certificate.build(X, y, problem=d["problem"], incumbent=d["incumbent"],
                              bounds=dict(d["bounds"]), nodes=nodes) for _ in range(2))
    da, db = a.to_dict(), b.to_dict()
    da["producer"].pop("time_utc")
    db["producer"].pop("time_utc")
    assert da == db
    assert a.proof_bytes() == b.proof_bytes()
    assert da["proof"]["sha256"] == sha256_bytes(a.proof_bytes())


def test_save_load_roundtrip(tmp_path, sq):
    X, y, cert, info = sq
    jpath, ppath = cert.save(tmp_path / "out.json")
    assert Path(ppath).name == "out.proof"
    text = Path(jpath).read_text()
    json.loads(text)  # valid strict JSON
    assert "NaN" not in text and "Infinity" not in text
    doc = json.loads(text)
    assert doc["proof"]["sha256"] == hashlib.sha256(Path(ppath).read_bytes()).hexdigest()
    assert doc["proof"]["bytes"] == Path(ppath).stat().st_size
    loaded = Certificate.load(jpath)
    assert loaded.to_dict() == cert.to_dict()
    assert loaded.proof_bytes() == cert.proof_bytes()
    assert [nd["witness"] for nd in loaded.nodes] == [nd["witness"] for nd in cert.nodes]
    kind, slot = info["best_witness"]
    zeta = loaded.witness(kind, slot)
    assert kind == "dual" and zeta.shape == (X.shape[0],)
    np.testing.assert_array_equal(zeta, info["tree"].preorder()[info["best_leaf"]].witness[1])
    assert loaded.nodes[info["best_leaf"]]["witness"] == (kind, slot)
    assert verify_certificate(jpath, X, y).ok
    assert "leaves" in loaded.summary() and repr(loaded).startswith("Certificate(")


def test_load_rejects_bad_files(tmp_path, sq):
    _, _, cert, _ = sq
    with pytest.raises(OSError):
        Certificate.load(tmp_path / "nope.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        Certificate.load(tmp_path / "bad.json")
    (tmp_path / "other.json").write_text('{"format": "other"}')
    with pytest.raises(ValueError, match="not a sparsecert-certificate"):
        Certificate.load(tmp_path / "other.json")
    cert.save(tmp_path / "c.json")
    (tmp_path / "c.proof").write_bytes(b"garbage")
    with pytest.raises(ValueError, match="header"):
        Certificate.load(tmp_path / "c.json")
    doc = json.loads((tmp_path / "c.json").read_text())
    doc["format_version"] = 2
    (tmp_path / "v2.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="format version 2 is not supported"):
        Certificate.load(tmp_path / "v2.json")


def _build(X, y, **over):
    n, p = X.shape
    kw = dict(
        problem=dict(loss="squared", k=2, lambda2=1.0, max_abs_coef=None, fit_intercept=False),
        incumbent=dict(coef=np.zeros(p), intercept=0.0, objective=float(y @ y)),
        bounds=dict(lower_bound=-1e3, upper_bound=float(y @ y) * (1 + 1e-12),
                    status="time_limit"),
        nodes=[dict(id=0, parent=None, branch_var=None, branch_value=None, status="open",
                    bound=None, witness=("dual", -2.0 * y))],
    )
    for key, val in over.items():
        if isinstance(val, dict):
            kw[key] = {**kw.get(key, {}), **val}
        else:
            kw[key] = val
    return Certificate.build(X, y, **kw)


@pytest.mark.parametrize(
    "over, err, match",
    [
        (dict(problem=dict(k=9)), ValueError, "k"),
        (dict(problem=dict(lambda2=0.0)), ValueError, "lambda2"),
        (dict(problem=dict(loss="hinge")), ValueError, "loss"),
        (dict(problem=dict(feature_names=["a"])), ValueError, "feature_names"),
        (dict(problem=dict(k=1.5)), TypeError, "k"),
        (dict(incumbent=dict(coef=np.zeros(3))), ValueError, "coef"),
        (dict(bounds=dict(lower_bound=-np.inf)), ValueError, "lower_bound"),
        (dict(bounds=dict(status="done")), ValueError, "status"),
        (dict(eig_shift=-1.0), ValueError, "eig_shift"),
        (dict(nodes=[dict(id=0, parent=None, branch_var=None, branch_value=None,
                          status="open", bound=None, witness=("dual", np.zeros(3)))]),
         ValueError, "witness"),
        (dict(nodes=[dict(id=0, parent=None, branch_var=None, branch_value=None,
                          status="open", bound=None, witness=("point", np.zeros(4)))]),
         ValueError, "witness kind"),
        (dict(nodes=[dict(id=0, parent=None, branch_var=None, branch_value=None,
                          status="open", bound=None, witness=None, fixings=[(1, 0)])]),
         ValueError, "derive_fixings=True"),
        (dict(nodes=[dict(id=0, parent=None, branch_var=None, branch_value=None,
                          status="open", bound=None, witness=None),
                     dict(id=1, parent=7, branch_var=0, branch_value=1, status="open",
                          bound=None, witness=None)]), ValueError, "parent 7"),
        (dict(nodes=[dict(id=0, parent=None, branch_var=None, branch_value=None,
                          status="branched", witness=None),
                     dict(id=1, parent=0, branch_var=0, branch_value=1, status="open",
                          witness=None)]), ValueError, "one child"),
        (dict(nodes=[dict(id=0, parent=None, branch_var=None, branch_value=None,
                          status="branched", witness=None),
                     dict(id=1, parent=0, branch_var=0, branch_value=1, status="open"),
                     dict(id=2, parent=0, branch_var=1, branch_value=0, status="open")]),
         ValueError, "same variable"),
        (dict(nodes=[dict(id=0, parent=None, branch_var=None, branch_value=None,
                          status="open", witness=None),
                     dict(id=1, parent=0, branch_var=0, branch_value=1, status="open"),
                     dict(id=2, parent=0, branch_var=0, branch_value=0, status="open")]),
         ValueError, "has children"),
    ],
)
def test_build_rejects_bad_input(over, err, match):
    X, y = make_data("squared", n=10, p=4, seed=0)
    with pytest.raises(err, match=match):
        _build(X, y, **over)


def test_build_minimal_root_certificate_verifies_with_exit_3():
    X, y = make_data("squared", n=10, p=4, seed=0)
    cert = _build(X, y, producer=dict(settings=dict(time_limit=float("inf")), n_jobs=2))
    assert cert.data["producer"]["settings"]["time_limit"] == "inf"  # JSON-safe
    rep = verify_certificate(cert, X, y)
    assert rep.ok and rep.exit_code == 3  # a weak but valid bound: the gap is large


def test_exact_zero_sum_independent_of_order_and_within_domain():
    rng = np.random.default_rng(0)
    for n in (1, 2, 7, 100, 1001):
        y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
        lo, hi = dual_domain_bounds("logistic", y)
        z = -y * rng.random(n)  # inside [lo, hi], arbitrary sum
        z[: n // 3] = lo[: n // 3] if n > 2 else z[: n // 3]  # some entries on the boundary
        out = exact_zero_sum(z, lo, hi)
        assert math.fsum(out.tolist()) == 0.0
        assert math.fsum(out[::-1].tolist()) == 0.0
        assert (out >= lo).all() and (out <= hi).all()
    z = rng.standard_normal(50)
    out = exact_zero_sum(z)
    np.testing.assert_allclose(out, z - z.mean(), atol=1e-12)
    with pytest.raises(ValueError, match="no room"):
        exact_zero_sum(np.array([0.5, 0.5]), np.array([0.1, 0.1]), np.array([1.0, 1.0]))


def test_verifier_imports_only_numpy_and_stdlib():
    code = (
        "import sys\n"
        "import sparsecert.certificate.verify as v\n"
        "import sparsecert.certificate\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('scipy', 'numba', 'sklearn',"
        " 'pandas', 'cvxpy') or m.startswith(('sparsecert.solvers.perspective',"
        " 'sparsecert.solvers.heuristics', 'sparsecert.solvers.loss_kernels', 'sparsecert.bnb',"
        " 'sparsecert.estimators')))\n"
        "print(repr(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"}, check=True,
                         timeout=120)
    assert out.stdout.strip() == "[]", out.stdout


def test_standalone_verifier_runs_as_a_script(tmp_path, sq):
    X, y, cert, _ = sq
    cert.save(tmp_path / "c.json")
    np.savez(tmp_path / "d.npz", X=X, y=y)
    run = subprocess.run([sys.executable, "-m", "sparsecert.certificate.verify",
                          str(tmp_path / "c.json"), str(tmp_path / "d.npz"), "--jobs", "2"],
                         capture_output=True, text=True, env={"PYTHONPATH": str(SRC)},
                         timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "VERIFIED" in run.stdout
    assert run.stderr == ""  # no runpy warning about the module being imported twice
    y2 = y.copy()
    y2[0] += 1.0
    np.savez(tmp_path / "d2.npz", X=X, y=y2)
    run = subprocess.run([sys.executable, "-m", "sparsecert.certificate.verify",
                          str(tmp_path / "c.json"), str(tmp_path / "d2.npz")],
                         capture_output=True, text=True, env={"PYTHONPATH": str(SRC)},
                         timeout=120)
    assert run.returncode == 1 and "data_hash" in run.stdout


def test_build_accepts_any_node_order_and_rejects_cycles():
    X, y = make_data("squared", n=10, p=4, seed=0)
    root = dict(id=0, parent=None, branch_var=None, branch_value=None, status="branched")
    kids = [dict(id=7, parent=3, branch_var=2, branch_value=0, status="open",
                 witness=("dual", -2.0 * y), derive_fixings=True),
            dict(id=8, parent=3, branch_var=2, branch_value=1, status="pruned"),
            dict(id=3, parent=0, branch_var=1, branch_value=1, status="branched"),
            dict(id=5, parent=0, branch_var=1, branch_value=0, status="solved")]
    cert = _build(X, y, nodes=kids + [root])
    assert [(n["index"], n["parent"], n["branch_var"], n["branch_value"], n["status"],
             n["derive"]) for n in cert.nodes] == [
        (0, None, None, None, "branched", False), (1, 0, 1, 0, "solved", False),
        (2, 0, 1, 1, "branched", False), (3, 2, 2, 0, "open", True),
        (4, 2, 2, 1, "pruned", False)]
    assert cert.nodes[3]["witness"] == ("dual", 0)
    cyc = [dict(id=0, parent=None, branch_var=None, branch_value=None, status="open"),
           dict(id=1, parent=2, branch_var=1, branch_value=0, status="branched"),
           dict(id=2, parent=1, branch_var=0, branch_value=0, status="branched"),
           dict(id=5, parent=1, branch_var=0, branch_value=1, status="open"),
           dict(id=6, parent=2, branch_var=1, branch_value=1, status="open")]
    with pytest.raises(ValueError, match="cycle"):
        _build(X, y, nodes=cyc)


def test_a_deep_tree_costs_its_records_only():
    """A caterpillar tree of depth d (a chain with one leaf off each node): the proof file
    grows by 16 bytes a record (and the witnesses), the document not at all; the writer puts
    it in preorder without recursion."""
    X, y = make_data("squared", n=10, p=5000, seed=0)

    def sizes(depth: int) -> tuple[int, int]:
        nodes = [dict(id=0, parent=None, branch_var=None, branch_value=None, status="branched",
                      witness=("dual", -2.0 * y))]
        for d in range(1, depth + 1):
            last = d == depth
            nodes.append(dict(id=2 * d - 1, parent=2 * d - 2 if d > 1 else 0, branch_var=d - 1,
                              branch_value=1, status="open"))
            nodes.append(dict(id=2 * d, parent=2 * d - 2 if d > 1 else 0, branch_var=d - 1,
                              branch_value=0, status="open" if last else "branched"))
        cert = _build(X, y, nodes=nodes)
        assert cert.data["tree"]["depth"] == depth
        return len(cert.to_json()), cert.data["proof"]["bytes"]

    (j1, p1), (j2, p2) = sizes(1500), sizes(3000)
    assert p2 - p1 == 16 * 3000 and abs(j2 - j1) < 20


def test_verifier_restates_the_schema_constants():
    from sparsecert.certificate import schema
    from sparsecert.certificate import verify as v

    for name in ("FORMAT_NAME", "FORMAT_VERSION", "LOSSES", "CLASSIFICATION_LOSSES",
                 "STATUSES", "NODE_STATUSES", "WITNESS_KINDS", "RELATIVE_GAP_DEFINITION",
                 "PROOF_SUFFIX", "PROOF_MAGIC", "PROOF_HEADER_SIZE", "RECORD_SIZE",
                 "RECORD_MAX"):
        assert getattr(v, name) == getattr(schema, name), name
    assert schema.SUPPORTED_FORMAT_VERSIONS == (v.FORMAT_VERSION,)
    assert v._RECORD == schema.RECORD_DTYPE and v._HEADER.format == schema.PROOF_HEADER.format
    assert v._STATUS_NAMES == tuple(sorted(schema.RECORD_STATUS, key=schema.RECORD_STATUS.get))
    assert v.proof_size(3, 2, 1, 4, 7) == schema.proof_size(3, 2, 1, 4, 7)
    X = np.random.default_rng(0).standard_normal((4, 3))
    assert v.array_sha256(X) == schema.array_sha256(X)


def test_verifier_file_runs_alone_without_the_package(tmp_path, sq):
    """Copy verify.py anywhere: with numpy alone it verifies a certificate."""
    import shutil

    X, y, cert, _ = sq
    cert.save(tmp_path / "c.json")
    np.savez(tmp_path / "d.npz", X=X, y=y)
    shutil.copy(SRC / "sparsecert" / "certificate" / "verify.py", tmp_path / "verify.py")
    run = subprocess.run([sys.executable, str(tmp_path / "verify.py"), str(tmp_path / "c.json"),
                          str(tmp_path / "d.npz")], capture_output=True, text=True,
                         cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "VERIFIED" in run.stdout
    assert run.stderr == ""  # no runpy warning about the module being imported twice


def test_tree_exhausted_status_claims_nothing():
    X, y = make_data("squared", n=10, p=4, seed=0)
    cert = _build(X, y, bounds=dict(status="tree_exhausted"))
    rep = verify_certificate(cert, X, y)
    assert rep.ok and rep.exit_code == 3
