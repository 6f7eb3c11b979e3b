"""Genuine certificates for tiny problems, built WITHOUT the package's solver.

The tree is a full enumeration: branch on the variables in order 0, 1, 2, ... until a node has
``|free| <= budget`` or ``budget == 0``; each such leaf is solved exactly (closed-form ridge,
bounded least squares, or a damped Newton method) and its witness is the loss gradient there
(``"dual"``, made to sum to exactly zero with an intercept) or, for the squared loss with an
eigenvalue shift, the leaf's exact solution (``"shifted"``). The incumbent is the best leaf; the
claims leave a relative slack (default 1e-9) for the verifier's rigorous rounding bounds.

The certificate (format version 3: a JSON document and a binary proof file) is written by this
file's own code (``encode_proof``, ``document``), independent of the package's writer; a
forger edits certificates through ``forge`` / ``reforge`` (the decoded tree) or raw bytes.

The brute-force reference (``brute_force_optimum``) is the tests' one enumerator
(``_bruteforce.brute_force``), which uses other solvers (``numpy.linalg.lstsq`` on the augmented
system, scipy's L-BFGS-B).
"""

from __future__ import annotations

import copy
import hashlib
import math
import struct
from dataclasses import dataclass, field

import numpy as np
from _bruteforce import brute_force
from scipy.optimize import lsq_linear

from sparsecert.certificate import Certificate
from sparsecert.certificate.verify import dual_domain_bounds

# ------------------------------------------------------------------------------ data


def make_data(loss: str, n: int = 30, p: int = 6, seed: int = 0, labels=(-1.0, 1.0)):
    """Small correlated design and a target / labels generated from a 3-sparse model."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p)) + 0.3 * rng.standard_normal((n, 1))
    beta = np.zeros(p)
    beta[[0, 2, p - 1]] = [1.5, -1.0, 0.8]
    u = X @ beta
    if loss == "squared":
        y = u + 0.5 * rng.standard_normal(n) + 2.0
    elif loss in ("logistic", "squared_hinge"):
        pos = rng.random(n) < 1.0 / (1.0 + np.exp(-u))
        y = np.where(pos, labels[1], labels[0]).astype(np.float64)
    elif loss == "poisson":
        y = rng.poisson(np.exp(0.3 * u)).astype(np.float64)
    else:
        raise ValueError(loss)
    return X, y


def map_labels(y, loss):
    """The package's label rule: the smaller of two values -> -1, the larger -> +1."""
    if loss in ("logistic", "squared_hinge"):
        vals = np.unique(y)
        assert vals.size == 2
        return np.where(y == vals[1], 1.0, -1.0)
    return np.asarray(y, float)


def zero_sum(zeta, lower=None, upper=None):
    """A vector near ``zeta`` whose exact sum is 0 (``math.fsum == 0``), inside [lower, upper]:
    the entries are moved to a power-of-two grid on which every partial sum is exact, the mean is
    removed and the integer remainder spread over entries with room."""
    z = np.asarray(zeta, dtype=np.float64)
    n = z.size
    lo = np.full(n, -np.inf) if lower is None else np.asarray(lower, float)
    hi = np.full(n, np.inf) if upper is None else np.asarray(upper, float)
    z = np.clip(z - z.mean(), lo, hi)
    scale = max(float(np.abs(z).max(initial=0.0)), 1e-300,
                float(np.abs(lo[np.isfinite(lo)]).max(initial=0.0)),
                float(np.abs(hi[np.isfinite(hi)]).max(initial=0.0)))
    q = math.ldexp(1.0, math.frexp(scale)[1] + math.ceil(math.log2(n + 1)) + 1 - 52)
    lo_u = np.ceil(np.clip(lo / q, -2.0**52, 2.0**52)).astype(np.int64)
    hi_u = np.floor(np.clip(hi / q, -2.0**52, 2.0**52)).astype(np.int64)
    units = np.clip(np.rint(z / q).astype(np.int64), lo_u, hi_u)
    r = int(units.sum())
    for i in np.argsort(-((units - lo_u) if r > 0 else (hi_u - units)), kind="stable"):
        if r == 0:
            break
        room = int(units[i] - lo_u[i]) if r > 0 else int(hi_u[i] - units[i])
        d = min(room, abs(r))
        units[i] -= d if r > 0 else -d
        r += -d if r > 0 else d
    assert r == 0
    out = units.astype(np.float64) * q
    assert math.fsum(out.tolist()) == 0.0
    return out


# ------------------------------------------------------------------------------ loss pieces


def _f(loss, u, y):
    if loss == "squared":
        return (y - u) ** 2
    if loss == "logistic":
        return np.logaddexp(0.0, -y * u)
    if loss == "squared_hinge":
        return np.maximum(0.0, 1.0 - y * u) ** 2
    return np.exp(u) - y * u


def _df(loss, u, y):
    if loss == "squared":
        return 2.0 * (u - y)
    if loss == "logistic":
        return -y / (1.0 + np.exp(y * u))
    if loss == "squared_hinge":
        return -2.0 * y * np.maximum(0.0, 1.0 - y * u)
    return np.exp(u) - y


def _d2f(loss, u, y):
    if loss == "squared":
        return np.full_like(u, 2.0)
    if loss == "logistic":
        s = 1.0 / (1.0 + np.exp(-y * u))
        return s * (1.0 - s)
    if loss == "squared_hinge":
        return 2.0 * (1.0 - y * u > 0)
    return np.exp(u)


def objective(X, y, loss, lam, b, c=0.0):
    """F(b, c) = sum f(Xb + c, y) + lam ||b||^2 with y already mapped to -1/+1."""
    return float(_f(loss, X @ b + c, y).sum() + lam * b @ b)


# ------------------------------------------------------------------------------ leaf solvers


def _newton(X, y, loss, lam, fit_intercept, iters=200):
    """Damped Newton on (b, c) for a smooth(ish) loss; exact to machine precision."""
    n, q = X.shape
    Z = np.hstack([X, np.ones((n, 1))]) if fit_intercept else X
    pen = np.r_[np.full(q, lam), [0.0] * fit_intercept]
    w = np.zeros(Z.shape[1])

    def val(w):
        return float(_f(loss, Z @ w, y).sum() + (pen * w * w).sum())

    for _ in range(iters):
        u = Z @ w
        g = Z.T @ _df(loss, u, y) + 2 * pen * w
        H = Z.T @ (Z * _d2f(loss, u, y)[:, None]) + np.diag(2 * pen) + 1e-14 * np.eye(len(w))
        step = np.linalg.solve(H, g)
        t, v0 = 1.0, val(w)
        while val(w - t * step) > v0 + 1e-16 * abs(v0) and t > 1e-12:
            t *= 0.5
        w = w - t * step
        if np.abs(g).max() < 1e-12 * max(1.0, abs(v0)):
            break
    return (w[:q], float(w[q])) if fit_intercept else (w, 0.0)


def solve_restricted(X, y, loss, lam, A, M=None, fit_intercept=False):
    """Exact minimiser of F over b supported on A (|b_j| <= M). Returns (b, c, zeta).

    ``y`` is mapped. For the squared loss with an intercept the centred problem is solved and
    ``zeta`` is the gradient of the centred loss; otherwise zeta = f'(Xb + c).
    """
    n, p = X.shape
    A = list(A)
    b = np.zeros(p)
    if loss == "squared":
        Xd, yd = (X - X.mean(0), y - y.mean()) if fit_intercept else (X, y)
        if A:
            XA = Xd[:, A]
            if M is None:
                b[A] = np.linalg.solve(XA.T @ XA + lam * np.eye(len(A)), XA.T @ yd)
            else:
                aug = np.vstack([XA, np.sqrt(lam) * np.eye(len(A))])
                res = lsq_linear(aug, np.r_[yd, np.zeros(len(A))], bounds=(-M, M),
                                 method="bvls", tol=1e-15)
                b[A] = res.x
        c = float(y.mean() - X.mean(0) @ b) if fit_intercept else 0.0
        zeta = 2.0 * (Xd @ b - yd)
        return b, c, zeta
    if M is not None:
        raise NotImplementedError("box constraints only for the squared loss here")
    bA, c = _newton(X[:, A], y, loss, lam, fit_intercept) if A else (
        _newton(np.zeros((n, 0)), y, loss, lam, fit_intercept))
    b[A] = bA
    return b, c, _df(loss, X @ b + c, y)


# ------------------------------------------------------------------------------ v3 writer
# The format's proof file and JSON document written by this file's own code (not the package's
# writer, sparsecert.certificate.document / proof_file): docs/certificate-format.md, section 2.


_MAGIC = b"SCPROOF\0"
_STATUS = {"branched": 0, "pruned": 1, "solved": 2, "open": 3}
_KIND = {"dual": 1, "shifted": 2}


@dataclass
class TNode:
    """A node of a tree to encode: ``status`` (a leaf's, or ``branched``), ``var`` (the variable
    a branched node's children fix), ``kids`` ([child z_var = 0, child z_var = 1]), ``witness``
    (("dual", zeta) / ("shifted", b) / None: the nearest ancestor's), ``derive`` (the verifier
    derives the node's bound fixings). ``raw`` overrides fields of the encoded record (head,
    var, slot, size0) for hostile tests."""

    status: str = "open"
    var: int | None = None
    kids: list | None = None
    witness: tuple | None = None
    derive: bool = False
    raw: dict = field(default_factory=dict)

    def preorder(self) -> list:
        out, stack = [], [self]
        while stack:
            nd = stack.pop()
            out.append(nd)
            if nd.kids:
                stack.extend(reversed(nd.kids))
        return out


def branch(var: int, zero: TNode, one: TNode, **kw) -> TNode:
    return TNode(status="branched", var=var, kids=[zero, one], **kw)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def data_sha256(a) -> str:
    """The format's data hash (section 3), by this file's own code."""
    a = np.ascontiguousarray(np.asarray(a, dtype=np.float64), dtype="<f8")
    head = ("<f8 " + "x".join(str(d) for d in a.shape) + "\n").encode("ascii")
    return _sha(head + a.tobytes())


def encode_proof(root: TNode, n: int, p: int) -> bytes:
    """The proof file of a tree: records in preorder, each witness its own slot (preorder)."""
    nodes = root.preorder()
    size = {}
    for nd in reversed(nodes):
        size[id(nd)] = 1 + (sum(size[id(c)] for c in nd.kids) if nd.kids else 0)
    duals, shifted, recs = [], [], []
    for nd in nodes:
        kind, slot = 0, 0
        if nd.witness is not None:
            wk, vec = nd.witness
            kind = _KIND[wk]
            vec = np.asarray(vec, dtype=np.float64)
            if wk == "dual":
                slot = len(duals)
                duals.append(vec)
            else:
                slot = len(shifted)
                shifted.append(vec)
        head = _STATUS[nd.status] | (4 if nd.derive else 0) | (kind << 3)
        rec = dict(head=head, var=nd.var if nd.kids else 0, slot=slot,
                   size0=size[id(nd.kids[0])] if nd.kids else 0)
        rec.update(nd.raw)
        recs.append(struct.pack("<IIII", rec["head"], rec["var"], rec["slot"], rec["size0"]))
    nz = [np.flatnonzero(b) for b in shifted]
    off = np.concatenate([[0], np.cumsum([z.size for z in nz])]).astype("<u8")
    out = [struct.pack("<8sII6Q", _MAGIC, 3, 16, len(nodes), len(duals), len(shifted),
                       int(off[-1]), n, p)]
    out += recs
    out += [np.asarray(d, dtype="<f8").tobytes() for d in duals]
    out.append(off.tobytes())
    out += [np.asarray(b[z], dtype="<f8").tobytes() for b, z in zip(shifted, nz, strict=True)]
    out += [np.asarray(z, dtype="<u4").tobytes() for z in nz]
    return b"".join(out)


def decode_proof(data: bytes) -> tuple[TNode, int, int]:
    """(root, n, p) of a proof file (witness vectors resolved), by this file's own code."""
    magic, _, _, n_nodes, n_dual, n_shifted, nnz, n, p = struct.unpack_from("<8sII6Q", data)
    assert magic == _MAGIC
    recs = np.frombuffer(data, dtype="<u4", count=4 * n_nodes, offset=64).reshape(-1, 4)
    at = 64 + 16 * n_nodes
    dual = np.frombuffer(data, dtype="<f8", count=n * n_dual, offset=at).reshape(-1, n)
    at += 8 * n * n_dual
    off = np.frombuffer(data, dtype="<u8", count=n_shifted + 1, offset=at).astype(np.int64)
    at += 8 * (n_shifted + 1)
    val = np.frombuffer(data, dtype="<f8", count=nnz, offset=at)
    idx = np.frombuffer(data, dtype="<u4", count=nnz, offset=at + 8 * nnz).astype(np.int64)
    names = {v: k for k, v in _STATUS.items()}

    def node(pos: int) -> tuple[TNode, int]:
        head, var, slot, size0 = (int(v) for v in recs[pos])
        wk = (head >> 3) & 3
        wit = None
        if wk == 1:
            wit = ("dual", dual[slot].copy())
        elif wk == 2:
            b = np.zeros(p)
            b[idx[off[slot]:off[slot + 1]]] = val[off[slot]:off[slot + 1]]
            wit = ("shifted", b)
        nd = TNode(status=names[head & 3], derive=bool(head & 4), witness=wit)
        if head & 3:
            return nd, pos + 1
        c0, nxt = node(pos + 1)
        c1, nxt = node(nxt)
        nd.var, nd.kids = var, [c0, c1]
        return nd, nxt

    root, end = node(0)
    assert end == n_nodes
    return root, n, p


def document(X, y, *, problem, incumbent, bounds, eig_shift=0.0, proof: bytes,
             producer=None) -> dict:
    """The JSON document (section 2) of a proof file, by this file's own code."""
    X, y = np.asarray(X), np.asarray(y)
    n, p = X.shape
    coef = np.asarray(incumbent["coef"], dtype=float)
    M = problem.get("max_abs_coef")
    pr = dict(loss=problem["loss"], k=int(problem["k"]), lambda2=float(problem["lambda2"]),
              max_abs_coef=None if M is None else float(M),
              fit_intercept=bool(problem.get("fit_intercept", False)), n_samples=n,
              n_features=p, X_sha256=data_sha256(X), y_sha256=data_sha256(y),
              feature_names=None)
    for key in ("huber_delta",):
        if key in problem:
            pr[key] = float(problem[key])
    lb, ub = float(bounds["lower_bound"]), float(bounds["upper_bound"])
    return {
        "format": "sparsecert-certificate",
        "format_version": 3,
        "problem": pr,
        "incumbent": dict(coef=[float(v) for v in coef],
                          intercept=float(incumbent.get("intercept", 0.0)),
                          support=np.flatnonzero(coef).tolist(),
                          objective=float(incumbent.get("objective", ub))),
        "bounds": dict(lower_bound=lb, upper_bound=ub, absolute_gap=max(0.0, ub - lb),
                       relative_gap=max(0.0, ub - lb) / max(1.0, abs(ub)),
                       relative_gap_definition="(UB - LB) / max(1, |UB|)",
                       rel_gap_tolerance=float(bounds.get("rel_gap_tol", 1e-4)),
                       abs_gap_tolerance=float(bounds.get("abs_gap_tol", 0.0)),
                       status=bounds["status"]),
        "relaxation": {"eig_shift": float(eig_shift)},
        "tree": {"generator": "tests/_certgen.py"},
        "proof": {"sha256": _sha(proof), "bytes": len(proof)},
        "producer": dict(producer or {}),
    }


def make_certificate(X, y, root: TNode, *, problem, incumbent, bounds, eig_shift=0.0,
                     producer=None) -> Certificate:
    """A certificate of ``root``'s tree written by this file's own writer (the package's
    Certificate only holds the document and the bytes)."""
    X = np.asarray(X)
    proof = encode_proof(root, X.shape[0], X.shape[1])
    doc = document(X, y, problem=problem, incumbent=incumbent, bounds=bounds,
                   eig_shift=eig_shift, proof=proof, producer=producer)
    return Certificate(doc, proof)


def forge(cert) -> tuple[dict, TNode]:
    """A forger's editable copy of a certificate: its document and its decoded tree."""
    root, _, _ = decode_proof(cert.proof_bytes())
    return cert.to_dict(), root


def reforge(doc: dict, root: TNode, *, rehash: bool = True) -> Certificate:
    """A certificate of the edited document and tree (the proof re-encoded and, like a careful
    forger, re-hashed in the document)."""
    pr = doc["problem"]
    proof = encode_proof(root, pr["n_samples"], pr["n_features"])
    doc = copy.deepcopy(doc)
    if rehash:
        doc["proof"].update(sha256=_sha(proof), bytes=len(proof))
    return Certificate(doc, proof)


def rehashed(doc: dict, proof: bytes) -> Certificate:
    """A certificate of a document and raw proof bytes, the document's hash and size made to
    match the bytes."""
    doc = copy.deepcopy(doc)
    doc["proof"].update(sha256=_sha(proof), bytes=len(proof))
    return Certificate(doc, proof)


def write_files(tmp_path, cert, name="cert"):
    """Write a certificate's two files as they are (no checks): the JSON path."""
    import json

    (tmp_path / (name + ".proof")).write_bytes(cert.proof_bytes())
    path = tmp_path / (name + ".json")
    path.write_text(json.dumps(cert.to_dict(), allow_nan=False))
    return path


# ------------------------------------------------------------------------------ certificate


def enumeration_certificate(
    X, y, loss, k, lambda2, *, M=None, fit_intercept=False, witness="dual", eig_shift=0.0,
    status="optimal", rel_gap_tol=1e-4, slack=1e-9,
):
    """A genuine certificate from the full enumeration tree, written by this file's own v3
    writer. Returns (Certificate, info); ``info["best_leaf"]`` is the best leaf's position in
    preorder and ``info["best_witness"]`` its witness (kind, slot).

    ``y`` holds raw labels (mapped by the package's rule). ``witness``: "dual" or "shifted"
    (squared loss with ``eig_shift > 0``). The claimed bounds are the best leaf's objective and
    the worst leaf's, widened by ``slack * max(1, |value|)``.
    """
    n, p = X.shape
    ym = map_labels(y, loss)
    leaves = []

    def visit(fin, fout, depth) -> TNode:
        free = [j for j in range(depth, p)]
        budget = k - len(fin)
        if len(free) <= budget or budget == 0:
            A = sorted(fin + (free if budget > 0 else []))
            b, c, zeta = solve_restricted(X, ym, loss, lambda2, A, M, fit_intercept)
            obj = objective(X, ym, loss, lambda2, b, c)
            if witness == "shifted":
                wit = ("shifted", b)
            else:
                if fit_intercept:
                    lo, hi = dual_domain_bounds(loss, ym)
                    zeta = zero_sum(zeta, lo, hi)
                wit = ("dual", zeta)
            nd = TNode(status="solved", witness=wit)
            leaves.append((obj, nd, b, c))
            return nd
        return branch(depth, visit(fin, fout + [depth], depth + 1),
                      visit(fin + [depth], fout, depth + 1))

    root = visit([], [], 0)
    best = min(leaves, key=lambda t: t[0])
    obj, best_node, b, c = best
    lb = min(t[0] for t in leaves)
    cert = make_certificate(
        X, y, root,
        problem=dict(loss=loss, k=k, lambda2=lambda2, max_abs_coef=M,
                     fit_intercept=fit_intercept),
        incumbent=dict(coef=b, intercept=c, objective=obj),
        bounds=dict(lower_bound=lb - slack * max(1.0, abs(lb)),
                    upper_bound=obj + slack * max(1.0, abs(obj)), status=status,
                    rel_gap_tol=rel_gap_tol, abs_gap_tol=0.0),
        eig_shift=eig_shift,
        producer=dict(settings=dict(generator="tests/_certgen.py enumeration"), elapsed=0.0,
                      n_jobs=1, executor="none"))
    order = root.preorder()
    pos = next(i for i, nd in enumerate(order) if nd is best_node)
    slot = sum(1 for nd in order[:pos] if nd.witness is not None
               and nd.witness[0] == best_node.witness[0])
    return cert, dict(optimum=obj, best_leaf=pos, best_witness=(best_node.witness[0], slot),
                      coef=b, intercept=c, n_leaves=len(leaves), tree=root)


# ------------------------------------------------------------------------------ reference


def brute_force_optimum(X, y, loss, k, lambda2, *, M=None, fit_intercept=False):
    """min over all supports of size <= k by the tests' one brute-force reference
    (``_bruteforce``: other solvers than the leaf solvers here); raw labels."""
    ym = map_labels(y, loss)
    return brute_force(X, ym, min(k, X.shape[1]), loss, lambda2, M=M,
                       fit_intercept=fit_intercept)[0]


def raw_proof(n: int, p: int, records, duals=(), shifted=(), counts=None) -> bytes:
    """Proof bytes from raw records ((head, var, slot, size0) each) and witness rows, for
    hostile tests; ``counts`` overrides the header's (n_nodes, n_dual, n_shifted, nnz)."""
    nz = [np.flatnonzero(b) for b in shifted]
    off = np.concatenate([[0], np.cumsum([z.size for z in nz])]).astype("<u8")
    c = counts or (len(records), len(duals), len(shifted), int(off[-1]))
    out = [struct.pack("<8sII6Q", _MAGIC, 3, 16, *c, n, p)]
    out += [struct.pack("<IIII", *r) for r in records]
    out += [np.asarray(d, dtype="<f8").tobytes() for d in duals]
    out.append(off.tobytes())
    out += [np.asarray(b[z], dtype="<f8").tobytes() for b, z in zip(shifted, nz, strict=True)]
    out += [np.asarray(z, dtype="<u4").tobytes() for z in nz]
    return b"".join(out)


def records_of(proof: bytes) -> np.ndarray:
    """The records of proof bytes as an editable (n_nodes, 4) uint32 array."""
    n_nodes = struct.unpack_from("<Q", proof, 16)[0]
    return np.frombuffer(proof, dtype="<u4", count=4 * n_nodes, offset=64).reshape(-1, 4).copy()


def with_records(proof: bytes, recs: np.ndarray) -> bytes:
    """Proof bytes with their records replaced (same count)."""
    n_nodes = struct.unpack_from("<Q", proof, 16)[0]
    assert recs.shape == (n_nodes, 4)
    return proof[:64] + np.ascontiguousarray(recs, dtype="<u4").tobytes() + \
        proof[64 + 16 * n_nodes:]
