"""Certificate building, serialisation (JSON + sidecar), determinism, hashes, independence."""

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
from _certgen import enumeration_certificate, make_data

from sparsecert.certificate import Certificate, verify_certificate
from sparsecert.certificate.schema import FORMAT_NAME, array_sha256, npz_bytes, sha256_bytes
from sparsecert.certificate.verify import dual_domain_bounds
from sparsecert.proof.witnesses import exact_zero_sum

SRC = Path(__file__).resolve().parents[3] / "src"


@pytest.fixture(scope="module")
def sq():
    X, y = make_data("squared", n=20, p=5, seed=0)
    cert, info = enumeration_certificate(X, y, "squared", 2, 0.5)
    return X, y, cert, info


def test_required_fields_present(sq):
    X, y, cert, _ = sq
    d = cert.to_dict()
    assert d["format"] == FORMAT_NAME and isinstance(d["format_version"], int)
    assert d["format_version"] == 2
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
    assert set(d["arrays"]) >= {"sha256"} and "file" not in d["arrays"]
    assert set(d["producer"]) >= {"version", "python", "numpy", "platform", "time_utc",
                                  "settings"}
    node = d["tree"]["nodes"][1]
    assert set(node) >= {"id", "parent", "branch_var", "branch_value", "status", "bound",
                         "witness"}
    assert "fixed_in" not in node and "fixed_out" not in node  # derived from the parent chain
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


def test_sidecar_bytes_are_deterministic_and_loadable():
    arrs = {"b": np.arange(4, dtype="<i8"), "a": np.ones((2, 3))}
    b1, b2 = npz_bytes(arrs), npz_bytes(dict(reversed(list(arrs.items()))))
    assert b1 == b2
    import io

    with np.load(io.BytesIO(b1)) as z:
        assert sorted(z.files) == ["a", "b"]
        np.testing.assert_array_equal(z["a"], arrs["a"])


def test_build_is_deterministic_except_timestamp(sq):
    X, y, cert, _ = sq
    again, _ = enumeration_certificate(X, y, "squared", 2, 0.5)
    a, b = cert.to_dict(), again.to_dict()
    a["producer"].pop("time_utc")
    b["producer"].pop("time_utc")
    assert a == b
    assert cert.sidecar_bytes() == again.sidecar_bytes()
    assert a["arrays"]["sha256"] == sha256_bytes(cert.sidecar_bytes())


def test_save_load_roundtrip(tmp_path, sq):
    X, y, cert, info = sq
    jpath, spath = cert.save(tmp_path / "out.json")
    assert Path(spath).name == "out.npz"
    text = Path(jpath).read_text()
    json.loads(text)  # valid strict JSON
    assert "NaN" not in text and "Infinity" not in text
    doc = json.loads(text)
    assert doc["arrays"]["sha256"] == hashlib.sha256(Path(spath).read_bytes()).hexdigest()
    loaded = Certificate.load(jpath)
    assert loaded.to_dict() == cert.to_dict()
    for nd in cert.nodes:
        w1, w2 = cert.witness(nd["id"]), loaded.witness(nd["id"])
        assert (w1 is None) == (w2 is None)
        if w1 is not None:
            assert w1[0] == w2[0]
            np.testing.assert_array_equal(w1[1], w2[1])
    kind, zeta = loaded.witness(info["best_leaf"])
    assert kind == "dual" and zeta.shape == (X.shape[0],)
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
    (tmp_path / "c.npz").write_bytes(b"garbage")
    with pytest.raises(ValueError, match="readable"):
        Certificate.load(tmp_path / "c.json")


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
        (dict(feature_names=["a"]), ValueError, "feature_names"),
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
                          status="open", bound=None, witness=None, fixings=[(9, 0)])]),
         ValueError, "fixing"),
        (dict(nodes=[dict(id=0, parent=None, branch_var=None, branch_value=None,
                          status="open", bound=None, witness=None),
                     dict(id=1, parent=7, branch_var=0, branch_value=1, status="open",
                          bound=None, witness=None)]), ValueError, "parent 7"),
    ],
)
def test_build_rejects_bad_input(over, err, match):
    X, y = make_data("squared", n=10, p=4, seed=0)
    with pytest.raises(err, match=match):
        _build(X, y, **over)


def _root_with(fixings):
    return dict(nodes=[dict(id=0, parent=None, branch_var=None, branch_value=None,
                            status="open", bound=None, witness=None, fixings=fixings)])


@pytest.mark.parametrize(
    "fixings, err, match",
    [
        ([(0, 0), (1, 1), (True, 0)], TypeError, r"fixings\[2\]"),
        ([(0, 0), (2**70, 1)], ValueError, "needs j in"),
        ([(0, 0), (1, 2)], ValueError, r"fixing \(1, 2\)"),
        ([(0, 0), (1.0, 1)], TypeError, r"fixings\[1\]"),
        ([(0, 0), (-1, 0)], ValueError, r"fixing \(-1, 0\)"),
        ([(0, 0), (np.int64(1), 1), (4, 0)], ValueError, r"fixing \(4, 0\)"),
    ],
)
def test_build_checks_every_fixing(fixings, err, match):
    """Long lists of plain int pairs take an array check, anything else the pair-by-pair one:
    either way the first bad fixing is named and nothing is accepted that should not be."""
    X, y = make_data("squared", n=10, p=4, seed=0)
    with pytest.raises(err, match=match):
        _build(X, y, **_root_with(fixings))
    ok = [(j, v) for j, v in ((3, 0), (0, 1), (np.int64(2), 0))]
    cert = _build(X, y, **_root_with(ok))
    assert cert.nodes[0]["fixings"] == [[3, 0], [0, 1], [2, 0]]
    assert all(type(x) is int for fx in cert.nodes[0]["fixings"] for x in fx)


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
                          str(tmp_path / "c.json"), str(tmp_path / "d.npz")],
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
                 witness=("dual", -2.0 * y), fixings=[(0, 0)]),
            dict(id=3, parent=0, branch_var=1, branch_value=1, status="branched")]
    cert = _build(X, y, nodes=kids + [root])
    assert [n["id"] for n in cert.nodes] == [0, 3, 7]
    assert cert.nodes[2]["fixings"] == [[0, 0]] and "fixings" not in cert.nodes[1]
    cyc = [dict(id=1, parent=2, branch_var=0, branch_value=1, status="open"),
           dict(id=2, parent=1, branch_var=1, branch_value=0, status="open"), root]
    with pytest.raises(ValueError, match="cycle"):
        _build(X, y, nodes=cyc)


def test_deep_chain_keeps_the_json_linear():
    """A caterpillar tree of depth d (a chain with one leaf off each node) has a JSON of size
    linear in d: fixings are derived from the parent chain, not stored per node."""
    X, y = make_data("squared", n=10, p=400, seed=0)

    def size(depth: int) -> int:
        nodes = [dict(id=0, parent=None, branch_var=None, branch_value=None, status="branched")]
        for d in range(1, depth + 1):
            last = d == depth
            nodes.append(dict(id=2 * d - 1, parent=2 * d - 2 if d > 1 else 0, branch_var=d - 1,
                              branch_value=1, status="open", witness=("dual", -2.0 * y)))
            nodes.append(dict(id=2 * d, parent=2 * d - 2 if d > 1 else 0, branch_var=d - 1,
                              branch_value=0, status="open" if last else "branched"))
        return len(_build(X, y, nodes=nodes).to_json())

    s1, s2 = size(150), size(300)
    assert s2 < 2.05 * s1


def test_verifier_restates_the_schema_constants():
    from sparsecert.certificate import schema
    from sparsecert.certificate import verify as v

    for name in ("FORMAT_NAME", "FORMAT_VERSION", "LOSSES", "CLASSIFICATION_LOSSES",
                 "STATUSES", "NODE_STATUSES", "WITNESS_KINDS", "RELATIVE_GAP_DEFINITION",
                 "SIDECAR_ARRAYS"):
        assert getattr(v, name) == getattr(schema, name), name
    assert schema.SUPPORTED_FORMAT_VERSIONS == (v.FORMAT_VERSION,)
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
