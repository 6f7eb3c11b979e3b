"""The bundled real data sets: exact arrays, lossless storage, packaged with the wheel."""

from __future__ import annotations

import fnmatch
import hashlib
import json
import tomllib
from pathlib import Path

import numpy as np
import pytest

from sparsecert import datasets
from sparsecert.datasets import (
    DIABETES_FEATURE_NAMES,
    load_diabetes,
    load_leukemia,
    load_riboflavin,
)

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "src" / "sparsecert" / "data"

#: SHA-256 of the reference arrays' float64 C-order bytes (hashlib on the reference copies of
#: the two sets, computed once when they were bundled; independent of the package's code)
REFERENCE = {
    "riboflavin": ("aad61240c0e4206c80f79e6f316a9cf99bd6e7600662164be9c085e4b60d1ca6",
                   "c4cb1795adcff890b54890025d51c0153fe4ccf50de47945f0bb996bcdd563e8"),
    "leukemia": ("ada377c73a4769df4d03f9968326b33f03d3d7200fadb373864fee88fca075ca",
                 "b0342f2a2a4535d81b35d7e6c5bb17ba44c17244f0ef9fc95c9d2987cdfc7414"),
    "diabetes": ("3108d770fbdb92eb6386b2f489879a126bc8c379a2d9f8bbd931ca876b9e2320",
                 "4911e8747aff95aa1cd523fea86dd91cfd1cd14c1a8ead274f1913b14fa853c4"),
}


def _sha(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


@pytest.mark.parametrize("name, loader, shape", [
    ("riboflavin", load_riboflavin, (71, 4088)),
    ("leukemia", load_leukemia, (38, 7129)),
    ("diabetes", load_diabetes, (442, 10)),
])
def test_loaders_return_the_reference_arrays(name, loader, shape):
    X, y = loader()
    assert X.dtype == np.float64 and y.dtype == np.float64
    assert X.shape == shape and y.shape == (shape[0],)
    assert (_sha(X), _sha(y)) == REFERENCE[name]
    assert np.isfinite(X).all() and np.isfinite(y).all()
    X[0, 0] = 123.0  # the caller owns fresh, writeable arrays
    assert loader()[0][0, 0] != 123.0


def test_diabetes_is_scikit_learns_copy_bit_for_bit():
    """The bundled diabetes data (the default job's) against scikit-learn's own loader."""
    from sklearn.datasets import load_diabetes as sklearn_diabetes

    ref = sklearn_diabetes()
    X, y = load_diabetes()
    assert X.tobytes() == np.asarray(ref.data, dtype=np.float64).tobytes()
    assert y.tobytes() == np.asarray(ref.target, dtype=np.float64).tobytes()
    assert list(DIABETES_FEATURE_NAMES) == [str(c) for c in ref.feature_names]


def test_the_default_job_data_load_without_scikit_learn():
    import subprocess
    import sys

    code = ("import sys; from sparsecert.cli.io import load_default_data, feature_names; "
            "X, y, _ = load_default_data(); names = feature_names(None); "
            "print(X.shape, len(names), 'sklearn' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert out.split() == ["(442,", "10)", "10", "False"]


def test_leukemia_labels_and_riboflavin_response():
    _, y = load_leukemia()
    assert sorted(set(y.tolist())) == [-1.0, 1.0]
    assert (y == 1).sum() == 27  # 27 ALL and 11 AML samples in the training set
    _, y = load_riboflavin()
    assert len(np.unique(y)) > 2  # a real-valued response


def test_encoding_round_trip_is_exact():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((7, 13)) * 10.0 ** rng.integers(-5, 5, size=(7, 13))
    planes, spec = datasets._encode_array(a)
    assert planes.dtype == np.uint8 and planes.shape == (8, a.size)
    assert spec["dtype"] == "<f8" and spec["decimals"] is None
    assert datasets._decode_array(planes, spec).tobytes() == a.tobytes()
    # six printed decimals: stored as int32, decoded bit for bit
    b = np.array([float(f"{v:.6f}") for v in rng.uniform(-9, 9, 50)]).reshape(5, 10)
    planes, spec = datasets._encode_array(b, decimals=6)
    assert spec["dtype"] == "<i4" and spec["decimals"] == 6 and planes.shape == (4, b.size)
    assert datasets._decode_array(planes, spec).tobytes() == b.tobytes()
    # a value with more decimals than asked for keeps the float64 storage (still exact)
    c = b.copy()
    c[0, 0] = 0.1234567
    planes, spec = datasets._encode_array(c, decimals=6)
    assert spec["dtype"] == "<f8" and datasets._decode_array(planes, spec).tobytes() == c.tobytes()


def test_decode_rejects_a_wrong_layout():
    planes, spec = datasets._encode_array(np.arange(6.0).reshape(2, 3))
    with pytest.raises(ValueError, match="expected uint8"):
        datasets._decode_array(planes[:, :5], spec)


def test_damaged_bundle_is_refused(monkeypatch):
    manifest = datasets._manifest()
    manifest["datasets"]["leukemia"]["arrays"]["X"]["sha256"] = "0" * 64
    monkeypatch.setattr(datasets, "_manifest", lambda: manifest)
    with pytest.raises(ValueError, match="leukemia data are damaged"):
        load_leukemia()


def test_manifest_hashes_match_the_reference():
    manifest = json.loads((DATA / "datasets.json").read_text())
    for name, (hx, hy) in REFERENCE.items():
        arrays = manifest["datasets"][name]["arrays"]
        assert (arrays["X"]["sha256"], arrays["y"]["sha256"]) == (hx, hy)


def test_every_data_file_ships_in_the_wheel_with_its_terms():
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = cfg["tool"]["setuptools"]["package-data"]["sparsecert"]
    files = [p.relative_to(DATA.parent).as_posix() for p in DATA.rglob("*") if p.is_file()]
    assert files
    missing = [f for f in files if not any(fnmatch.fnmatch(f, pat) for pat in patterns)]
    assert not missing, f"not in the package data: {missing}"
    licence_files = cfg["project"]["license-files"]
    for needed in ("LICENSE", "src/sparsecert/data/README.md",
                   "src/sparsecert/data/LICENSES/GPL-2.0.txt",
                   "src/sparsecert/data/LICENSES/GPL-3.0.txt"):
        assert (ROOT / needed).is_file()
        assert any(fnmatch.fnmatch(needed, pat) for pat in licence_files), needed
    notes = (DATA / "README.md").read_text()
    for fname in ("riboflavin.npz", "leukemia.npz", "diabetes.npz"):
        assert fname in notes  # each bundled file has its provenance and terms written down


def test_nothing_reads_a_folder_outside_the_repository():
    """Tests, benchmarks, examples and the package read no data folder outside the repository."""
    needles = ('"shared"', "shared/data", "SHARED_DATA")
    offenders = []
    for sub in ("src", "tests", "benchmarks", "examples"):
        for path in (ROOT / sub).rglob("*.py"):
            if path == Path(__file__).resolve():
                continue
            text = path.read_text(encoding="utf-8")
            if any(n in text for n in needles):
                offenders.append(str(path.relative_to(ROOT)))
    assert not offenders, offenders


# ------------------------------------------------------------------------------ standardisation
def _benchmark_standardise():
    """benchmarks/certify.py's preprocessing: the published numbers were made with it."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_certify",
                                                  ROOT / "benchmarks" / "certify.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod._standardise


@pytest.mark.parametrize("loader, loss", [(load_riboflavin, "squared"),
                                          (load_leukemia, "logistic")])
def test_standardize_is_the_benchmarks_preprocessing_bit_for_bit(loader, loss):
    Xs, ys = loader(standardize=True)
    Xb, yb = _benchmark_standardise()(*loader(), loss)
    assert Xs.tobytes() == Xb.tobytes() and ys.tobytes() == yb.tobytes()
    assert np.abs(Xs.mean(axis=0)).max() < 1e-12
    norms = np.linalg.norm(Xs, axis=0)
    assert np.abs(norms[norms > 0] - 1).max() < 1e-12
    if loss == "squared":
        assert abs(ys.mean()) < 1e-12 and not np.array_equal(ys, loader()[1])
    else:  # labels stay labels
        assert np.array_equal(ys, loader()[1])


def test_standardize_recipe_on_any_data():
    X = np.array([[1.0, 5.0, 2.0], [2.0, 5.0, 4.0], [4.0, 5.0, 9.0]])
    Xs, ys = datasets.standardize(X, [1, 2, 6])
    centred = X - X.mean(axis=0)
    assert np.allclose(Xs[:, [0, 2]], centred[:, [0, 2]] / np.linalg.norm(centred[:, [0, 2]],
                                                                           axis=0))
    assert np.array_equal(Xs[:, 1], np.zeros(3))  # a constant column is only centred
    assert np.allclose(ys, [-2.0, -1.0, 3.0])
    assert datasets.standardize(X)[1] is None


def test_a_certificate_is_about_the_arrays_it_was_given():
    """Certified on standardised data: it verifies on those arrays, not on the raw ones."""
    import sparsecert

    rng = np.random.default_rng(0)
    X = rng.normal(3.0, [1.0, 10.0, 0.1, 2.0], size=(30, 4))
    y = X @ [1.0, 0.1, -5.0, 0.0] + rng.normal(size=30)
    Xs, ys = datasets.standardize(X, y)
    res = sparsecert.certify(Xs, ys, 2, 0.1, verbose=0)
    assert sparsecert.verify(res.certificate, Xs, ys).ok
    raw = sparsecert.verify(res.certificate, X, y)
    assert not raw.ok and "data_hash" in raw.failed_checks


# ------------------------------------------------------------------------------ names
def test_riboflavin_gene_names_follow_the_columns_of_X():
    names = datasets.feature_names("riboflavin")
    X, y = load_riboflavin()
    assert len(names) == X.shape[1] == len(set(names)) == 4088
    assert all(n.endswith("_at") for n in names)  # Affymetrix probe-set names
    # the published analyses of these data: the four genes most correlated with y
    Xc, yc = X - X.mean(axis=0), y - y.mean()
    r = (Xc.T @ yc) / (np.linalg.norm(Xc, axis=0) * np.linalg.norm(yc))
    top = {names[j] for j in np.argsort(-np.abs(r))[:4]}
    assert top == {"XHLA_at", "XHLB_at", "YXLD_at", "YCKE_at"}


def test_feature_names_of_the_other_sets():
    assert datasets.feature_names("diabetes") == DIABETES_FEATURE_NAMES
    assert datasets.feature_names("leukemia") is None  # the LIBSVM file names no probe
    with pytest.raises(ValueError, match="no bundled data set 'iris'"):
        datasets.feature_names("iris")


def test_the_synthetic_response_follows_the_loss_target_rule():
    """The generator's response is the loss's target kind (the registry's ``target``): every
    real-target loss gets the noisy response, every two-label loss its sign; a count target
    is refused."""
    from sparsecert.datasets import make_synthetic

    X, y_sq, beta = make_synthetic(40, 6, 2, loss="squared", seed=3)
    _, y_hub, _ = make_synthetic(40, 6, 2, loss="huber", seed=3)
    _, y_log, _ = make_synthetic(40, 6, 2, loss="logistic", seed=3)
    _, y_hinge, _ = make_synthetic(40, 6, 2, loss="squared_hinge", seed=3)
    np.testing.assert_array_equal(y_hub, y_sq)
    assert set(np.unique(y_log)) == {-1.0, 1.0}
    np.testing.assert_array_equal(y_log, np.where(y_sq > 0, 1.0, -1.0))
    np.testing.assert_array_equal(y_hinge, y_log)
    assert np.count_nonzero(beta) == 2 and X.shape == (40, 6)
    with pytest.raises(ValueError, match="counts"):
        make_synthetic(40, 6, 2, loss="poisson")
    with pytest.raises(ValueError, match="unknown loss"):
        make_synthetic(40, 6, 2, loss="hinge")
