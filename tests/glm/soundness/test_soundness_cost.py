"""The verifier's cost is bounded by the data and by what the certificate's tree references.

Small hostile files that cost minutes or gigabytes before: a positive eigenvalue shift on data
with more columns than rows (a p x p Gram matrix for a proof that can never succeed), a sidecar
that inflates from under a megabyte to 800 MB or carries arrays the format does not define, and
20 million empty witnesses no node references. Each must be refused with one line before the
expensive step: memory is measured with tracemalloc (numpy reports its buffers to it), never
with a timer.
"""

from __future__ import annotations

import io
import json
import struct
import tracemalloc
import zipfile
import zlib

import numpy as np
import pytest

from sparsecert.certificate import Certificate, verify_certificate
from sparsecert.certificate import verify as V
from sparsecert.certificate.schema import npz_bytes, sha256_bytes

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


# ------------------------------------------------------------------------------ the sidecar


def _npy_header(dtype: str, shape: tuple[int, ...]) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": dtype, "fortran_order": False,
                                               "shape": shape})
    return buf.getvalue()


def _deflated_zeros(head: bytes, nbytes: int) -> bytes:
    """A raw deflate stream of ``head`` followed by ``nbytes`` zero bytes, built in
    milliseconds: after a full flush every MiB of zeros compresses to the same bytes."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    out = [c.compress(head) + c.flush(zlib.Z_FULL_FLUSH)]
    q, r = divmod(nbytes, MB)
    if q:
        piece = c.compress(bytes(MB)) + c.flush(zlib.Z_FULL_FLUSH)
        again = c.compress(bytes(MB)) + c.flush(zlib.Z_FULL_FLUSH)
        assert again == piece
        out.append(piece * q)
    out.append(c.compress(bytes(r)) + c.flush())
    return b"".join(out)


def _zip(members: list[tuple[str, bytes, int, int, int]]) -> bytes:
    """A zip file by hand: (name, payload, method, crc, declared uncompressed size) each. The
    CRC of a bomb is not computed (a reader that inflated it would pay before noticing)."""
    body, central = io.BytesIO(), io.BytesIO()
    for name, payload, method, crc, size in members:
        nm = name.encode()
        offset = body.tell()
        body.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, method, 0, 0x21, crc,
                               len(payload), size, len(nm), 0) + nm + payload)
        central.write(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, method, 0,
                                  0x21, crc, len(payload), size, len(nm), 0, 0, 0, 0, 0,
                                  offset) + nm)
    cd = central.getvalue()
    return body.getvalue() + cd + struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members),
                                              len(members), len(cd), body.tell(), 0)


def _stored(name: str, arr: np.ndarray):
    buf = io.BytesIO()
    np.save(buf, arr)
    raw = buf.getvalue()
    return (name, raw, zipfile.ZIP_STORED, zlib.crc32(raw), len(raw))


def _bomb(name: str, dtype: str, shape: tuple[int, ...]):
    head = _npy_header(dtype, shape)
    nbytes = 8 * int(np.prod(shape))
    return (name, _deflated_zeros(head, nbytes), zipfile.ZIP_DEFLATED, 0, len(head) + nbytes)


def _small_problem(p: int = 3):
    rng = np.random.default_rng(4)
    X = rng.standard_normal((4, p))
    y = X[:, 0] - X[:, -1] + 0.1
    return X, y


#: p such that one node may reference a shifted witness of p nonzeros (1 MiB of indices and
#: values): the sidecar's file may then be over a megabyte, and it is the members' declared
#: sizes that refuse the bombs below
WIDE = 1 << 16


def _with_sidecar(tmp_path, cert, side: bytes):
    doc = cert.to_dict()
    doc["arrays"]["sha256"] = sha256_bytes(side)
    (tmp_path / "h.json").write_text(json.dumps(doc))
    (tmp_path / "h.npz").write_bytes(side)
    return tmp_path / "h.json"


def _valid_members(cert):
    return [_stored(name + ".npy", cert.arrays[name]) for name in
            ("dual_values", "shifted_offsets", "shifted_indices", "shifted_values")]


def test_a_compressed_sidecar_is_never_inflated_beyond_what_the_tree_references(tmp_path):
    """Under a megabyte on disk, 800 MiB of dual_values once inflated; one node references
    one row of n = 4 values."""
    X, y = _small_problem(WIDE)
    cert = _one_node(X, y)
    members = _valid_members(cert)
    members[0] = _bomb("dual_values.npy", "<f8", (800 * MB // 32, 4))
    path = _with_sidecar(tmp_path, cert, _zip(members))
    assert path.with_suffix(".npz").stat().st_size < MB < V.sidecar_size_limit(V._parse(
        cert.to_dict()))
    rep, peak = _peak(verify_certificate, path, X, y)
    assert rep.exit_code == 2 and "declares" in rep.error_line, str(rep)
    assert peak < 16 * MB, peak


def test_a_sidecar_with_arrays_the_format_does_not_define_is_refused_unread(tmp_path):
    X, y = _small_problem(WIDE)
    cert = _one_node(X, y)
    members = _valid_members(cert) + [_bomb("extra.npy", "<f8", (800 * MB // 8,))]
    path = _with_sidecar(tmp_path, cert, _zip(members))
    rep, peak = _peak(verify_certificate, path, X, y)
    assert rep.exit_code == 2 and "'extra.npy'" in rep.error_line, str(rep)
    assert peak < 16 * MB, peak
    with pytest.raises(ValueError, match="does not define"):
        Certificate.load(path)


def test_a_member_is_not_inflated_beyond_its_declared_size(tmp_path):
    """The header says 200 bytes; the stream holds 100 MiB: reading stops at 200."""
    X, y = _small_problem(WIDE)
    cert = _one_node(X, y)
    members = _valid_members(cert)
    name, payload, method, crc, _ = _bomb("dual_values.npy", "<f8", (100 * MB // 32, 4))
    members[0] = (name, payload, method, crc, 200)
    path = _with_sidecar(tmp_path, cert, _zip(members))
    rep, peak = _peak(verify_certificate, path, X, y)
    assert rep.exit_code == 2 and "sidecar" in rep.failed_checks, str(rep)
    assert peak < 16 * MB, peak


def test_twenty_million_empty_shifted_witnesses_are_refused_unread(tmp_path):
    """153 KB of deflated offsets for 20 million witnesses no node references: a Python loop
    over them took 13-18 s."""
    X, y = _small_problem(WIDE)
    cert = _one_node(X, y)
    members = _valid_members(cert)
    members[1] = _bomb("shifted_offsets.npy", "<i8", (20_000_001,))
    path = _with_sidecar(tmp_path, cert, _zip(members))
    rep, peak = _peak(verify_certificate, path, X, y)
    assert rep.exit_code == 2 and "shifted_offsets" in rep.error_line, str(rep)
    assert peak < 16 * MB, peak


def test_a_sidecar_file_larger_than_its_tree_can_reference_is_not_read(tmp_path):
    X, y = _small_problem()
    cert = _one_node(X, y)
    side = bytes(8 * MB) + cert.sidecar_bytes()  # a zip may be preceded by other bytes
    path = _with_sidecar(tmp_path, cert, side)
    rep, peak = _peak(verify_certificate, path, X, y)
    assert rep.exit_code == 2 and "its tree can reference" in rep.error_line, str(rep)
    assert peak < 2 * MB, peak


def test_unreferenced_slots_are_bounded_by_the_nodes(tmp_path):
    X, y = _small_problem()
    cert = _one_node(X, y)
    arrays = {k: v.copy() for k, v in cert.arrays.items()}
    arrays["shifted_offsets"] = np.zeros(3, dtype="<i8")  # two empty shifted slots, one node
    path = _with_sidecar(tmp_path, cert, npz_bytes(arrays))
    rep = verify_certificate(path, X, y)
    assert rep.exit_code == 2 and "more than one per node" in rep.error_line


def test_sidecar_witnesses_are_checked_without_a_loop_over_slots():
    """The vectorised check of strictly increasing indices within each shifted witness: the
    boundaries between witnesses may decrease, nothing else may."""
    def parsed(n_nodes):
        return V._Parsed("squared", 1, 1.0, None, False, 2, 5, "", "", np.zeros(5), 0.0, [],
                         0.0, 0.0, 0.0, 0.0, 0.0, "time_limit", 1.0,
                         [V._Node(i, None if i == 0 else 0, None, None, "solved", None, [])
                          for i in range(n_nodes)], "")

    def side(off, idx):
        return npz_bytes({"dual_values": np.zeros((0, 2)),
                          "shifted_offsets": np.array(off, dtype="<i8"),
                          "shifted_indices": np.array(idx, dtype="<i8"),
                          "shifted_values": np.ones(len(idx))})

    ok = V._load_sidecar(side([0, 2, 2, 5], [3, 4, 0, 1, 4]), parsed(3))
    assert ok["shifted_offsets"].tolist() == [0, 2, 2, 5]
    for off, idx, slot in (([0, 2, 5], [3, 3, 0, 1, 4], 0), ([0, 2, 5], [3, 4, 0, 4, 1], 1),
                           ([0, 0, 3], [1, 2, 2], 1)):
        with pytest.raises(V._Malformed, match=f"witness {slot}: indices are not strictly"):
            V._load_sidecar(side(off, idx), parsed(2))


@pytest.mark.parametrize("edit, needle", [
    (lambda raw: raw.replace(b"'<f8'", b"'>f8'", 1), "dtype"),
    (lambda raw: raw.replace(b"'fortran_order': False", b"'fortran_order': 0    ", 1),
     "shape"),
    (lambda raw: raw.replace(b"NUMPY", b"NUMPZ", 1), "not a .npy file"),
    (lambda raw: raw[:-8], "data bytes"),
    (lambda raw: raw.replace(b"'shape': (1, 4)", b"'shape': __import__('os')", 1),
     "malformed header"),
])
def test_the_npy_header_is_parsed_strictly(tmp_path, edit, needle):
    X, y = _small_problem()
    cert = _one_node(X, y)
    members = _valid_members(cert)
    name, raw, method, _, _ = members[0]
    raw = edit(raw)
    members[0] = (name, raw, method, zlib.crc32(raw), len(raw))
    path = _with_sidecar(tmp_path, cert, _zip(members))
    rep = verify_certificate(path, X, y)
    assert rep.exit_code == 2 and needle in rep.error_line, rep.error_line


def test_an_honest_compressed_sidecar_is_read(tmp_path):
    """numpy's own compressed .npz (savez_compressed) is a sidecar like the writer's."""
    X, y = _small_problem()
    cert = _one_node(X, y)
    buf = io.BytesIO()
    np.savez_compressed(buf, **cert.arrays)
    path = _with_sidecar(tmp_path, cert, buf.getvalue())
    assert verify_certificate(path, X, y).ok
