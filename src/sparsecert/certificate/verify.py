"""Standalone verifier of sparsecert certificates.

This file imports **only numpy and the Python standard library**: not the solvers, not the
branch-and-bound engine, not even the rest of sparsecert (the certificate writer included). It is
an independent implementation of the checks specified in ``docs/certificate-format.md``: every
number it accepts it recomputes with its own code from the certificate, the sidecar arrays and
the data. The file can be copied and run on its own::

    python verify.py cert.json data.npz          # data.npz holds arrays X and y
    python -m sparsecert.certificate.verify cert.json data.npz
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# The format's constants, restated here on purpose (the verifier shares no code with the writer;
# tests/test_certificate_format.py checks that they agree with sparsecert.certificate.schema).
FORMAT_NAME = "sparsecert-certificate"
SUPPORTED_FORMAT_VERSIONS = (1,)
LOSSES = ("squared", "logistic", "squared_hinge", "poisson")
CLASSIFICATION_LOSSES = ("logistic", "squared_hinge")
STATUSES = ("optimal", "time_limit", "node_limit", "interrupted", "tree_exhausted")
NODE_STATUSES = ("branched", "pruned", "solved", "open")
WITNESS_KINDS = ("point", "dual")
RELATIVE_GAP_DEFINITION = "(UB - LB) / max(1, |UB|)"
BOUND_MARGIN_REL = 1e-9  # certified LB >= claimed LB - BOUND_MARGIN_REL * max(1, |UB|)
OBJECTIVE_REL_TOL = 1e-9  # recomputed incumbent objective vs claimed, relative
ARITHMETIC_REL_TOL = 1e-12  # absolute_gap / relative_gap vs their definitions, relative
SIDECAR_ARRAYS = {
    "point_offsets": "<i8",
    "point_indices": "<i8",
    "point_values": "<f8",
    "dual_values": "<f8",
}


def array_sha256(a: np.ndarray) -> str:
    """SHA-256 of ASCII ``'<f8 ' + 'x'.join(shape) + '\\n'`` then the C-order little-endian
    float64 bytes of ``a``."""
    arr = np.ascontiguousarray(np.asarray(a, dtype=np.float64), dtype="<f8")
    header = "<f8 " + "x".join(str(d) for d in arr.shape) + "\n"
    return hashlib.sha256(header.encode("ascii") + arr.tobytes(order="C")).hexdigest()


def sha256_bytes(data: bytes) -> str:
    """Hex SHA-256 of raw bytes."""
    return hashlib.sha256(data).hexdigest()


__all__ = [
    "VerificationReport",
    "verify_certificate",
    "node_lower_bound",
    "prepare_data",
    "loss_value",
    "loss_derivative",
    "loss_conjugate",
    "dual_domain_bounds",
    "huber",
    "g_star_node",
]

_MAX_LISTED = 5  # how many offending items a failure message names


# ----------------------------------------------------------------------------------------------
# Loss functions, conjugates, Huber and the node conjugate g*_node (the verifier's own code)
# ----------------------------------------------------------------------------------------------


def _xlogx(t: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(t > 0, t * np.log(np.where(t > 0, t, 1.0)), 0.0)


def loss_value(loss: str, u: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per-sample loss f(u_i, y_i) (labels already in {-1, +1} for classification)."""
    if loss == "squared":
        r = y - u
        return r * r
    if loss == "logistic":
        return np.logaddexp(0.0, -y * u)
    if loss == "squared_hinge":
        m = np.maximum(0.0, 1.0 - y * u)
        return m * m
    if loss == "poisson":
        return np.exp(u) - y * u
    raise ValueError(f"unknown loss {loss!r}")


def loss_derivative(loss: str, u: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per-sample derivative df/du (u_i, y_i)."""
    if loss == "squared":
        return 2.0 * (u - y)
    if loss == "logistic":
        # -y * sigmoid(-y u), computed stably as -y * exp(-log(1 + exp(y u)))
        return -y * np.exp(-np.logaddexp(0.0, y * u))
    if loss == "squared_hinge":
        return -2.0 * y * np.maximum(0.0, 1.0 - y * u)
    if loss == "poisson":
        return np.exp(u) - y
    raise ValueError(f"unknown loss {loss!r}")


def loss_conjugate(loss: str, z: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-sample convex conjugate f*(z_i; y_i) and the mask of samples inside its domain.

    Outside the domain the conjugate is +inf; the returned values there are meaningless and the
    caller must use the mask.
    """
    if loss == "squared":
        return 0.25 * z * z + y * z, np.ones(z.shape, dtype=bool)
    if loss == "logistic":
        t = -y * z
        dom = (t >= 0.0) & (t <= 1.0)
        tc = np.clip(t, 0.0, 1.0)
        return _xlogx(tc) + _xlogx(1.0 - tc), dom
    if loss == "squared_hinge":
        yz = y * z
        return yz + 0.25 * z * z, yz <= 0.0
    if loss == "poisson":
        w = z + y
        dom = w >= 0.0
        wc = np.maximum(w, 0.0)
        return _xlogx(wc) - wc, dom
    raise ValueError(f"unknown loss {loss!r}")


def dual_domain_bounds(loss: str, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-sample interval [lower, upper] equal to dom f*(.; y_i) (may contain infinities)."""
    y = np.asarray(y, dtype=np.float64)
    inf = np.full(y.shape, np.inf)
    if loss == "squared":
        return -inf, inf.copy()
    if loss == "logistic":  # t = -y z in [0, 1]
        return np.where(y > 0, -1.0, 0.0), np.where(y > 0, 0.0, 1.0)
    if loss == "squared_hinge":  # y z <= 0
        return np.where(y > 0, -np.inf, 0.0), np.where(y > 0, 0.0, np.inf)
    if loss == "poisson":  # z + y >= 0
        return -y, inf.copy()
    raise ValueError(f"unknown loss {loss!r}")


def huber(a: np.ndarray, M: float | None) -> np.ndarray:
    """H_M(t) = t^2/2 if |t| <= M else M|t| - M^2/2 (M = None means +inf)."""
    if M is None:
        return 0.5 * a * a
    aa = np.abs(a)
    return np.where(aa <= M, 0.5 * a * a, M * aa - 0.5 * M * M)


def g_star_node(
    a: np.ndarray, fixed_in: np.ndarray, fixed_out: np.ndarray, budget: int, M: float | None
) -> float:
    """g*_node(a) = sum_{j in S1} H_M(a_j) + sum of the ``budget`` largest H_M(a_j), j free."""
    h = huber(a, M)
    total = float(h[fixed_in].sum()) if len(fixed_in) else 0.0
    free = np.ones(h.shape[0], dtype=bool)
    free[fixed_in] = False
    free[fixed_out] = False
    hf = h[free]
    if budget <= 0 or hf.size == 0:
        return total
    if budget >= hf.size:
        return total + float(hf.sum())
    return total + float(np.partition(hf, hf.size - budget)[hf.size - budget :].sum())


def prepare_data(
    X: np.ndarray, y: np.ndarray, loss: str, labels: list | None, fit_intercept: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Map labels and build the design used by the node bounds.

    Returns
    -------
    X, y_mapped : the raw design and the labels mapped to -1/+1 (classification) -- used for the
        incumbent objective.
    Xd, yd : the design of the bound computations: column-centred X and centred y when the loss
        is squared and ``fit_intercept`` (the intercept is then minimised out exactly), else
        ``X`` and ``y_mapped``.
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if loss in CLASSIFICATION_LOSSES:
        if labels is None:
            neg, pos = -1.0, 1.0
        else:
            neg, pos = float(labels[0]), float(labels[1])
        bad = ~((y == neg) | (y == pos))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"label y[{i}] = {y[i]!r} is neither negative label {neg!r} nor positive "
                f"label {pos!r}"
            )
        ym = np.where(y == pos, 1.0, -1.0)
    else:
        ym = y
        if loss == "poisson" and (y < 0).any():
            i = int(np.flatnonzero(y < 0)[0])
            raise ValueError(f"Poisson needs y >= 0 but y[{i}] = {y[i]!r}")
    if loss == "squared" and fit_intercept:
        return X, ym, X - X.mean(axis=0), ym - ym.mean()
    return X, ym, X, ym


def node_lower_bound(
    Xd: np.ndarray,
    yd: np.ndarray,
    loss: str,
    k: int,
    lambda2: float,
    max_abs_coef: float | None,
    fixed_in: Iterable[int],
    fixed_out: Iterable[int],
    witness: tuple[str, np.ndarray],
    eig_shift: float = 0.0,
    zero_sum: bool = False,
) -> float:
    """Lower bound on the node's optimum recomputed from a witness (the verifier's formula).

    Parameters
    ----------
    Xd, yd : design and labels of the bound computations (see :func:`prepare_data`).
    witness : ("point", b) with b of length p, or ("dual", zeta) with zeta of length n.
    eig_shift : mu >= 0 (point witnesses only; X^T X - mu I must be PSD for validity).
    zero_sum : require math.fsum(zeta) == 0.0 (unpenalised intercept, non-squared loss).

    Returns
    -------
    float
        The bound; ``-inf`` when a dual witness is outside dom f* or violates the zero sum.
    """
    p = Xd.shape[1]
    fin = np.asarray(sorted(set(int(j) for j in fixed_in)), dtype=np.int64)
    fout = np.asarray(sorted(set(int(j) for j in fixed_out)), dtype=np.int64)
    budget = k - fin.size
    kind, vec = witness
    vec = np.asarray(vec, dtype=np.float64)
    if kind == "point":
        if vec.shape != (p,):
            raise ValueError(f"point witness has shape {vec.shape}, expected ({p},)")
        F, grad, gb = _point_terms(Xd, yd, loss, eig_shift, vec[None, :])
        lamp = lambda2 + eig_shift
        return float(F[0] - gb[0] - 2.0 * lamp * g_star_node(
            -grad[0] / (2.0 * lamp), fin, fout, budget, max_abs_coef))
    if kind == "dual":
        if vec.shape != (Xd.shape[0],):
            raise ValueError(f"dual witness has shape {vec.shape}, expected ({Xd.shape[0]},)")
        C, ok, a = _dual_terms(Xd, yd, loss, lambda2, vec[None, :])
        if not ok[0] or (zero_sum and math.fsum(vec.tolist()) != 0.0):
            return -math.inf
        return float(-C[0] - 2.0 * lambda2 * g_star_node(a[0], fin, fout, budget, max_abs_coef))
    raise ValueError(f"unknown witness kind {kind!r}")


def _point_terms(Xd, yd, loss, mu, B):
    """For points B (m, p): shifted loss value F, gradient (m, p) and grad . b."""
    U = B @ Xd.T
    F = loss_value(loss, U, yd).sum(axis=1) - mu * np.einsum("ij,ij->i", B, B)
    G = loss_derivative(loss, U, yd) @ Xd - 2.0 * mu * B
    gb = np.einsum("ij,ij->i", G, B)
    return F, G, gb


def _dual_terms(Xd, yd, loss, lambda2, Z):
    """For duals Z (m, n): sum of conjugates, in-domain flags, and a = -X^T zeta / (2 lambda2)."""
    vals, dom = loss_conjugate(loss, Z, yd)
    ok = dom.all(axis=1)
    C = np.where(ok, np.where(dom, vals, 0.0).sum(axis=1), np.inf)
    A = -(Z @ Xd) / (2.0 * lambda2)
    return C, ok, A


# ----------------------------------------------------------------------------------------------
# Report
# ----------------------------------------------------------------------------------------------


@dataclass
class VerificationReport:
    """Outcome of :func:`verify_certificate`.

    Attributes
    ----------
    checks : list of (name, passed, message), in the order they ran.
    certified_lower_bound : min over leaves of the recomputed bounds (nan if not reached).
    margin : the floating-point margin ``BOUND_MARGIN_REL * max(1, |UB|)`` (nan if not reached).
    gap_within_tolerance : the claimed gap is within the tolerance asked for.
    rel_gap_tolerance : the relative-gap tolerance used for ``gap_within_tolerance``.
    summary : a few facts about the certificate for printing.
    """

    checks: list[tuple[str, bool, str]] = field(default_factory=list)
    certified_lower_bound: float = math.nan
    margin: float = math.nan
    gap_within_tolerance: bool = False
    rel_gap_tolerance: float | None = None
    summary: dict[str, Any] = field(default_factory=dict)
    complete: bool = False

    def add(self, name: str, passed: bool, message: str) -> bool:
        self.checks.append((name, bool(passed), message))
        return bool(passed)

    @property
    def ok(self) -> bool:
        """Every check ran and passed."""
        return self.complete and all(passed for _, passed, _ in self.checks)

    @property
    def failures(self) -> list[tuple[str, str]]:
        """(name, message) of every failed check."""
        return [(name, msg) for name, passed, msg in self.checks if not passed]

    @property
    def failed_checks(self) -> list[str]:
        """Names of the failed checks."""
        return [name for name, _ in self.failures]

    @property
    def exit_code(self) -> int:
        """0 verified, 1 failed, 3 verified but the gap is above the tolerance asked for."""
        if not self.ok:
            return 1
        return 0 if self.gap_within_tolerance else 3

    def __str__(self) -> str:
        s = self.summary
        if self.ok:
            verdict = "VERIFIED" if self.gap_within_tolerance else "VERIFIED (gap above tolerance)"
        else:
            verdict = "FAILED: " + ", ".join(self.failed_checks or ["incomplete"])
        lines = [f"certificate verification: {verdict} (exit code {self.exit_code})"]
        if "loss" in s:
            lines.append(
                f"  problem     : {s['loss']} loss, n={s['n']}, p={s['p']}, k={s['k']}, "
                f"lambda2={s['lambda2']:.6g}, max_abs_coef={s['max_abs_coef']}, "
                f"fit_intercept={s['fit_intercept']}"
            )
        if "upper_bound" in s:
            lines.append(
                f"  bounds      : upper {s['upper_bound']:.12g}, claimed lower "
                f"{s['lower_bound']:.12g}, relative gap {s['relative_gap']:.3e} "
                f"({RELATIVE_GAP_DEFINITION}), status {s['status']}"
            )
        if not math.isnan(self.certified_lower_bound):
            lines.append(
                f"  recomputed  : certified lower bound {self.certified_lower_bound:.12g} over "
                f"{s.get('n_leaves', '?')} leaves of {s.get('n_nodes', '?')} nodes "
                f"(floating-point margin {self.margin:.3e})"
            )
        if self.rel_gap_tolerance is not None:
            lines.append(
                f"  tolerance   : relative gap {self.rel_gap_tolerance:.3e} -> "
                f"{'within' if self.gap_within_tolerance else 'NOT within'}"
            )
        for name, passed, msg in self.checks:
            lines.append(f"  [{'ok' if passed else 'FAIL'}] {name}: {msg}")
        return "\n".join(lines)


# ----------------------------------------------------------------------------------------------
# Parsing (check 1)
# ----------------------------------------------------------------------------------------------


class _Malformed(Exception):
    pass


def _reject_constant(name: str):
    raise ValueError(f"non-standard JSON constant {name}")


def _field(d: Any, key: str, where: str) -> Any:
    if not isinstance(d, dict):
        raise _Malformed(f"{where} is not a JSON object")
    if key not in d:
        raise _Malformed(f"missing field {where}.{key}")
    return d[key]


def _as_int(v: Any, where: str, none_ok: bool = False) -> int | None:
    if v is None and none_ok:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise _Malformed(f"{where} must be an integer, got {v!r}")
    return v


def _as_num(v: Any, where: str, none_ok: bool = False) -> float | None:
    if v is None and none_ok:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise _Malformed(f"{where} must be a finite number, got {v!r}")
    return float(v)


def _as_str(v: Any, where: str, choices: Iterable[str] | None = None) -> str:
    if not isinstance(v, str):
        raise _Malformed(f"{where} must be a string, got {v!r}")
    if choices is not None and v not in choices:
        raise _Malformed(f"{where} = {v!r} is not one of {list(choices)}")
    return v


def _as_bool(v: Any, where: str) -> bool:
    if not isinstance(v, bool):
        raise _Malformed(f"{where} must be true or false, got {v!r}")
    return v


def _as_int_list(v: Any, where: str) -> list[int]:
    if not isinstance(v, list):
        raise _Malformed(f"{where} must be a list of integers")
    return [_as_int(x, f"{where}[{i}]") for i, x in enumerate(v)]


@dataclass
class _Node:
    id: int
    parent: int | None
    branch_var: int | None
    branch_value: int | None
    fixed_in: list[int]
    fixed_out: list[int]
    status: str
    bound: float | None
    witness: tuple[str, int] | None


@dataclass
class _Parsed:
    loss: str
    k: int
    lambda2: float
    M: float | None
    fit_intercept: bool
    n: int
    p: int
    X_sha256: str
    y_sha256: str
    labels: list[float] | None
    coef: np.ndarray
    intercept: float
    support: list[int]
    objective: float
    lb: float
    ub: float
    abs_gap: float
    rel_gap: float
    rel_tol: float
    abs_tol: float
    status: str
    mu: float
    nodes: list[_Node]
    sidecar_file: str | None
    sidecar_sha256: str


def _parse(doc: Any) -> _Parsed:
    fmt = _field(doc, "format", "certificate")
    if fmt != FORMAT_NAME:
        raise _Malformed(f"format is {fmt!r}, expected {FORMAT_NAME!r}")
    ver = _field(doc, "format_version", "certificate")
    if isinstance(ver, bool) or ver not in SUPPORTED_FORMAT_VERSIONS:
        raise _Malformed(
            f"format_version {ver!r} is not supported "
            f"(supported: {list(SUPPORTED_FORMAT_VERSIONS)})"
        )
    pr = _field(doc, "problem", "certificate")
    loss = _as_str(_field(pr, "loss", "problem"), "problem.loss", LOSSES)
    k = _as_int(_field(pr, "k", "problem"), "problem.k")
    lambda2 = _as_num(_field(pr, "lambda2", "problem"), "problem.lambda2")
    M = _as_num(_field(pr, "max_abs_coef", "problem"), "problem.max_abs_coef", none_ok=True)
    fit_intercept = _as_bool(_field(pr, "fit_intercept", "problem"), "problem.fit_intercept")
    n = _as_int(_field(pr, "n_samples", "problem"), "problem.n_samples")
    p = _as_int(_field(pr, "n_features", "problem"), "problem.n_features")
    xh = _as_str(_field(pr, "X_sha256", "problem"), "problem.X_sha256")
    yh = _as_str(_field(pr, "y_sha256", "problem"), "problem.y_sha256")
    labels_raw = _field(pr, "labels", "problem")
    if n < 1 or p < 1:
        raise _Malformed(f"problem.n_samples = {n} and problem.n_features = {p} must be >= 1")
    if k < 0:
        raise _Malformed(f"problem.k = {k} must be >= 0")
    if lambda2 <= 0:
        raise _Malformed(f"problem.lambda2 = {lambda2} must be > 0")
    if M is not None and M <= 0:
        raise _Malformed(f"problem.max_abs_coef = {M} must be > 0 or null")
    labels = None
    if labels_raw is not None:
        if loss not in CLASSIFICATION_LOSSES:
            raise _Malformed(f"problem.labels must be null for the {loss} loss")
        if not isinstance(labels_raw, list) or len(labels_raw) != 2:
            raise _Malformed("problem.labels must be null or [negative_label, positive_label]")
        labels = [_as_num(v, f"problem.labels[{i}]") for i, v in enumerate(labels_raw)]
        if labels[0] == labels[1]:
            raise _Malformed("problem.labels must be two different values")

    inc = _field(doc, "incumbent", "certificate")
    coef_raw = _field(inc, "coef", "incumbent")
    if not isinstance(coef_raw, list) or len(coef_raw) != p:
        raise _Malformed(f"incumbent.coef must be a list of n_features = {p} numbers")
    coef = np.array([_as_num(v, f"incumbent.coef[{j}]") for j, v in enumerate(coef_raw)],
                    dtype=np.float64)
    intercept = _as_num(_field(inc, "intercept", "incumbent"), "incumbent.intercept")
    support = _as_int_list(_field(inc, "support", "incumbent"), "incumbent.support")
    objective = _as_num(_field(inc, "objective", "incumbent"), "incumbent.objective")

    bd = _field(doc, "bounds", "certificate")
    lb = _as_num(_field(bd, "lower_bound", "bounds"), "bounds.lower_bound")
    ub = _as_num(_field(bd, "upper_bound", "bounds"), "bounds.upper_bound")
    abs_gap = _as_num(_field(bd, "absolute_gap", "bounds"), "bounds.absolute_gap")
    rel_gap = _as_num(_field(bd, "relative_gap", "bounds"), "bounds.relative_gap")
    rdef = _field(bd, "relative_gap_definition", "bounds")
    if rdef != RELATIVE_GAP_DEFINITION:
        raise _Malformed(
            f"bounds.relative_gap_definition is {rdef!r}, expected {RELATIVE_GAP_DEFINITION!r}"
        )
    rel_tol = _as_num(_field(bd, "rel_gap_tolerance", "bounds"), "bounds.rel_gap_tolerance")
    abs_tol = _as_num(_field(bd, "abs_gap_tolerance", "bounds"), "bounds.abs_gap_tolerance")
    if rel_tol < 0 or abs_tol < 0:
        raise _Malformed("bounds.rel_gap_tolerance and bounds.abs_gap_tolerance must be >= 0")
    status = _as_str(_field(bd, "status", "bounds"), "bounds.status", STATUSES)

    rx = _field(doc, "relaxation", "certificate")
    mu = _as_num(_field(rx, "eig_shift", "relaxation"), "relaxation.eig_shift")
    if mu < 0:
        raise _Malformed(f"relaxation.eig_shift = {mu} must be >= 0")

    tree = _field(doc, "tree", "certificate")
    nodes_raw = _field(tree, "nodes", "tree")
    if not isinstance(nodes_raw, list) or not nodes_raw:
        raise _Malformed("tree.nodes must be a non-empty list")
    nodes = []
    for i, nd in enumerate(nodes_raw):
        w = f"tree.nodes[{i}]"
        wit_raw = _field(nd, "witness", w)
        wit = None
        if wit_raw is not None:
            kind = _as_str(_field(wit_raw, "kind", w + ".witness"), w + ".witness.kind",
                           WITNESS_KINDS)
            slot = _as_int(_field(wit_raw, "slot", w + ".witness"), w + ".witness.slot")
            if slot < 0:
                raise _Malformed(f"{w}.witness.slot = {slot} must be >= 0")
            wit = (kind, slot)
        bv = _as_int(_field(nd, "branch_value", w), w + ".branch_value", none_ok=True)
        if bv not in (None, 0, 1):
            raise _Malformed(f"{w}.branch_value must be 0, 1 or null, got {bv!r}")
        nodes.append(_Node(
            id=_as_int(_field(nd, "id", w), w + ".id"),
            parent=_as_int(_field(nd, "parent", w), w + ".parent", none_ok=True),
            branch_var=_as_int(_field(nd, "branch_var", w), w + ".branch_var", none_ok=True),
            branch_value=bv,
            fixed_in=_as_int_list(_field(nd, "fixed_in", w), w + ".fixed_in"),
            fixed_out=_as_int_list(_field(nd, "fixed_out", w), w + ".fixed_out"),
            status=_as_str(_field(nd, "status", w), w + ".status", NODE_STATUSES),
            bound=_as_num(_field(nd, "bound", w), w + ".bound", none_ok=True),
            witness=wit,
        ))

    arr = _field(doc, "arrays", "certificate")
    sfile = _field(arr, "file", "arrays")
    if sfile is not None:
        sfile = _as_str(sfile, "arrays.file")
    ssha = _as_str(_field(arr, "sha256", "arrays"), "arrays.sha256")
    return _Parsed(loss, k, lambda2, M, fit_intercept, n, p, xh, yh, labels, coef, intercept,
                   support, objective, lb, ub, abs_gap, rel_gap, rel_tol, abs_tol, status, mu,
                   nodes, sfile, ssha)


def _load_sidecar(data: bytes, c: _Parsed) -> dict[str, np.ndarray]:
    """Load and check the sidecar arrays (shapes, dtypes, offsets, indices). Raises _Malformed."""
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            arrays = {name: z[name] for name in z.files}
    except Exception as exc:  # any decoding problem of untrusted bytes is a failed check
        raise _Malformed(f"sidecar is not a readable .npz file ({exc})") from None
    for name, dt in SIDECAR_ARRAYS.items():
        if name not in arrays:
            raise _Malformed(f"sidecar has no array {name!r}")
        if arrays[name].dtype != np.dtype(dt):
            raise _Malformed(f"sidecar array {name} has dtype {arrays[name].dtype}, expected {dt}")
    off, idx, val, dual = (arrays[k] for k in SIDECAR_ARRAYS)
    if off.ndim != 1 or off.size < 1 or off[0] != 0 or (np.diff(off) < 0).any():
        raise _Malformed("sidecar point_offsets must be 1-D, start at 0 and be non-decreasing")
    if idx.ndim != 1 or val.ndim != 1 or idx.size != val.size or off[-1] != idx.size:
        raise _Malformed("sidecar point_indices/point_values must be 1-D of length "
                         "point_offsets[-1]")
    if idx.size and (idx.min() < 0 or idx.max() >= c.p):
        raise _Malformed(f"sidecar point_indices must lie in [0, {c.p})")
    for s in range(off.size - 1):
        seg = idx[off[s]:off[s + 1]]
        if seg.size > 1 and (np.diff(seg) <= 0).any():
            raise _Malformed(f"sidecar point witness {s}: indices are not strictly increasing")
    if dual.ndim != 2 or dual.shape[1] != c.n:
        raise _Malformed(f"sidecar dual_values has shape {dual.shape}, expected (m, {c.n})")
    if not np.isfinite(val).all() or not np.isfinite(dual).all():
        raise _Malformed("sidecar arrays contain NaN or infinity")
    n_point, n_dual = off.size - 1, dual.shape[0]
    for nd in c.nodes:
        if nd.witness is not None:
            kind, slot = nd.witness
            lim = n_point if kind == "point" else n_dual
            if slot >= lim:
                raise _Malformed(
                    f"node {nd.id}: {kind} witness slot {slot} out of range ({lim} stored)"
                )
    return arrays


# ----------------------------------------------------------------------------------------------
# The verifier
# ----------------------------------------------------------------------------------------------


def _obtain(certificate: Any, sidecar: Any) -> tuple[Any, bytes | None, str]:
    """Return (json document or parse error string, sidecar bytes or None, sidecar description)."""
    base = os.getcwd()
    if isinstance(certificate, (str, os.PathLike)):
        path = os.fspath(certificate)
        with open(path, "rb") as fh:  # OSError propagates: an unreadable file is an input error
            raw = fh.read()
        base = os.path.dirname(os.path.abspath(path))
        try:
            doc = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
        except (ValueError, UnicodeDecodeError) as exc:
            return f"{path} is not valid JSON ({exc})", None, ""
    elif isinstance(certificate, dict):
        doc = certificate
    elif hasattr(certificate, "to_dict") and hasattr(certificate, "sidecar_bytes"):
        doc = json.loads(json.dumps(certificate.to_dict(), allow_nan=False))
        if sidecar is None:
            return doc, certificate.sidecar_bytes(), "in-memory sidecar"
    else:
        raise TypeError(
            "certificate must be a path, a dict or a Certificate, got "
            f"{type(certificate).__name__}"
        )
    if isinstance(sidecar, (bytes, bytearray)):
        return doc, bytes(sidecar), "given sidecar bytes"
    if sidecar is not None:
        spath = os.fspath(sidecar)
    else:
        arr = doc.get("arrays") if isinstance(doc, dict) else None
        fname = arr.get("file") if isinstance(arr, dict) else None
        if not isinstance(fname, str) or not fname:
            return doc, None, "no sidecar file named in arrays.file"
        if os.path.basename(fname) != fname or fname in (".", ".."):
            return doc, None, (f"arrays.file = {fname!r} must be a plain file name (the sidecar "
                               "lives next to the certificate)")
        spath = os.path.join(base, fname)
    try:
        with open(spath, "rb") as fh:
            return doc, fh.read(), spath
    except OSError as exc:
        return doc, None, f"sidecar {spath} cannot be read ({exc.strerror or exc})"


def _check_data(X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    X = np.asarray(X)
    y = np.asarray(y)
    if X.dtype.kind not in "biuf" or y.dtype.kind not in "biuf":
        raise TypeError(f"X and y must be numeric arrays, got dtypes {X.dtype} and {y.dtype}")
    X = X.astype(np.float64, copy=False)
    y = y.astype(np.float64, copy=False)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got shape {X.shape}")
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D, got shape {y.shape}")
    if not np.isfinite(X).all() or not np.isfinite(y).all():
        raise ValueError("X and y must not contain NaN or infinity")
    return X, y


def _list(items: list, fmt=str) -> str:
    more = f" (and {len(items) - _MAX_LISTED} more)" if len(items) > _MAX_LISTED else ""
    return ", ".join(fmt(x) for x in items[:_MAX_LISTED]) + more


def verify_certificate(
    certificate: Any,
    X: Any,
    y: Any,
    rel_gap: float | None = None,
    *,
    sidecar: Any = None,
) -> VerificationReport:
    """Verify a certificate against the data, recomputing everything with numpy only.

    Parameters
    ----------
    certificate : path to the JSON file, the parsed JSON dict, or a ``Certificate``.
        A path's sidecar is found next to it (``arrays.file``); a dict's relative to the current
        directory unless ``sidecar`` is given.
    X : array_like of shape (n_samples, n_features)
        The data exactly as given to the solver.
    y : array_like of shape (n_samples,)
        The targets / raw labels exactly as given to the solver.
    rel_gap : float, optional
        Relative-gap tolerance for ``gap_within_tolerance`` (default: the certificate's own
        criterion, relative gap <= rel_gap_tolerance or absolute gap <= abs_gap_tolerance).
    sidecar : path or bytes, optional
        Override where the sidecar arrays come from.

    Returns
    -------
    VerificationReport

    Raises
    ------
    OSError
        The certificate file cannot be read.
    ValueError, TypeError
        X or y is not a finite numeric matrix / vector, or rel_gap is negative.
    """
    with np.errstate(all="ignore"):  # overflow etc. become inf/nan and fail the checks
        return _verify(certificate, X, y, rel_gap, sidecar)


def _verify(certificate, X, y, rel_gap, sidecar) -> VerificationReport:
    X, y = _check_data(X, y)
    if rel_gap is not None and not (rel_gap >= 0 and math.isfinite(rel_gap)):
        raise ValueError(f"rel_gap must be a finite number >= 0, got {rel_gap!r}")
    rep = VerificationReport()
    doc, side, side_desc = _obtain(certificate, sidecar)

    # 1. format, required fields, types
    if isinstance(doc, str):
        rep.add("format", False, doc)
        return rep
    try:
        c = _parse(doc)
    except _Malformed as exc:
        rep.add("format", False, str(exc))
        return rep
    rep.add("format", True, f"{FORMAT_NAME} version {doc['format_version']}, all fields present")
    rep.summary.update(loss=c.loss, n=c.n, p=c.p, k=c.k, lambda2=c.lambda2,
                       max_abs_coef=c.M, fit_intercept=c.fit_intercept, upper_bound=c.ub,
                       lower_bound=c.lb, relative_gap=c.rel_gap, status=c.status,
                       n_nodes=len(c.nodes))

    # 1b. sidecar
    if side is None:
        rep.add("sidecar", False, side_desc)
        return rep
    digest = sha256_bytes(side)
    if digest != c.sidecar_sha256:
        rep.add("sidecar", False, f"SHA-256 of the sidecar ({side_desc}) is {digest}, the "
                                  f"certificate records {c.sidecar_sha256}")
        return rep
    try:
        arrays = _load_sidecar(side, c)
    except _Malformed as exc:
        rep.add("sidecar", False, str(exc))
        return rep
    rep.add("sidecar", True, f"SHA-256 matches, {arrays['point_offsets'].size - 1} point and "
                             f"{arrays['dual_values'].shape[0]} dual witnesses")

    # 2. data
    if X.shape != (c.n, c.p) or y.shape != (c.n,):
        rep.add("data_shape", False, f"data has X {X.shape}, y {y.shape}; the certificate is for "
                                     f"n_samples={c.n}, n_features={c.p}")
        return rep
    rep.add("data_shape", True, f"n={c.n}, p={c.p}")
    bad = [name for name, arr, h in (("X", X, c.X_sha256), ("y", y, c.y_sha256))
           if array_sha256(arr) != h]
    rep.add("data_hash", not bad,
            "SHA-256 of X and y match" if not bad else
            f"SHA-256 of {' and '.join(bad)} differ{'s' if len(bad) == 1 else ''} from the "
            "certificate: the data is not the data that was certified")
    try:
        Xr, yr, Xd, yd = prepare_data(X, y, c.loss, c.labels, c.fit_intercept)
    except ValueError as exc:
        rep.add("labels", False, str(exc))
        return rep
    rep.add("labels", True, "labels valid for the loss" + (
        f" (mapped {c.labels[0]:g} -> -1, {c.labels[1]:g} -> +1)" if c.labels else ""))

    # 3. incumbent
    nz = np.flatnonzero(c.coef).tolist()
    rep.add("incumbent_sparsity", len(nz) <= c.k, f"||coef||_0 = {len(nz)}, k = {c.k}")
    rep.add("incumbent_support", c.support == nz,
            "support equals the nonzero coefficients" if c.support == nz else
            f"support field {c.support} differs from the nonzero coefficients {nz}")
    if c.M is not None:
        over = np.flatnonzero(np.abs(c.coef) > c.M).tolist()
        rep.add("incumbent_box", not over, f"|coef_j| <= {c.M:g}" if not over else
                f"|coef_j| > max_abs_coef = {c.M:g} for j = {_list(over)}")
    rep.add("incumbent_intercept", c.fit_intercept or c.intercept == 0.0,
            "intercept allowed (fit_intercept)" if c.fit_intercept else
            "intercept is 0 (fit_intercept is false)" if c.intercept == 0.0 else
            f"intercept is {c.intercept!r} but fit_intercept is false")
    u = Xr @ c.coef + (c.intercept if c.fit_intercept else 0.0)
    obj = float(loss_value(c.loss, u, yr).sum() + c.lambda2 * float(c.coef @ c.coef))
    tol = OBJECTIVE_REL_TOL * max(1.0, abs(c.objective))
    rep.add("incumbent_objective", abs(obj - c.objective) <= tol,
            f"recomputed objective {obj:.15g} vs claimed {c.objective:.15g} "
            f"(allowed difference {tol:.3e})")
    tol_ub = OBJECTIVE_REL_TOL * max(1.0, abs(c.ub))
    rep.add("upper_bound", abs(c.ub - c.objective) <= tol_ub,
            f"upper_bound {c.ub:.15g} vs incumbent objective {c.objective:.15g}")

    # 6. eigenvalue shift
    if c.mu > 0:
        if c.loss != "squared":
            rep.add("eig_shift", False, f"eig_shift = {c.mu} > 0 is only valid for the squared "
                                        f"loss, not {c.loss}")
        else:
            G = Xd.T @ Xd - c.mu * np.eye(c.p)
            try:
                np.linalg.cholesky(G)
                rep.add("eig_shift", True, f"cholesky(Xc^T Xc - {c.mu:.6g} I) succeeded")
            except np.linalg.LinAlgError:
                rep.add("eig_shift", False, f"cholesky(Xc^T Xc - {c.mu:.6g} I) failed: the "
                                            "shifted matrix is not positive definite")
    else:
        rep.add("eig_shift", True, "no eigenvalue shift (mu = 0)")

    # 4. tree
    tree = _check_tree(rep, c)
    if tree is not None:
        # 5. leaf bounds
        _check_leaves(rep, c, arrays, Xd, yd, *tree)

    # 7. bounds arithmetic and status
    exp_abs = c.ub - c.lb
    exp_rel = exp_abs / max(1.0, abs(c.ub))
    t_abs = ARITHMETIC_REL_TOL * max(1.0, abs(c.ub))
    ok_abs = abs(c.abs_gap - exp_abs) <= t_abs
    ok_rel = abs(c.rel_gap - exp_rel) <= ARITHMETIC_REL_TOL * max(1.0, abs(exp_rel))
    rep.add("gap_arithmetic", ok_abs and ok_rel,
            f"absolute_gap {c.abs_gap:.6e} (UB - LB = {exp_abs:.6e}), relative_gap "
            f"{c.rel_gap:.6e} ({RELATIVE_GAP_DEFINITION} = {exp_rel:.6e})")
    own = c.rel_gap <= c.rel_tol or c.abs_gap <= c.abs_tol
    if c.status == "optimal":
        rep.add("status", own, f"status optimal: relative gap {c.rel_gap:.3e} <= "
                               f"{c.rel_tol:.3e} or absolute gap {c.abs_gap:.3e} <= "
                               f"{c.abs_tol:.3e}" + ("" if own else " is FALSE"))
    else:
        rep.add("status", True, f"status {c.status} (no optimality claimed)")
    if rel_gap is None:
        rep.gap_within_tolerance = own
        rep.rel_gap_tolerance = c.rel_tol
    else:
        rep.gap_within_tolerance = c.rel_gap <= rel_gap
        rep.rel_gap_tolerance = float(rel_gap)
    rep.complete = True
    return rep


def _check_tree(
    rep: VerificationReport, c: _Parsed
) -> tuple[list[_Node], dict[int, _Node]] | None:
    """Checks 4 (structure, fixings). Returns (leaves in id order, nodes by id) or None."""
    by_id: dict[int, _Node] = {}
    dup = []
    for nd in c.nodes:
        if nd.id in by_id:
            dup.append(nd.id)
        by_id[nd.id] = nd
    problems: list[str] = []
    if dup:
        problems.append(f"duplicate node ids {_list(dup)}")
    roots = [nd for nd in c.nodes if nd.parent is None]
    if len(roots) != 1:
        problems.append(f"{len(roots)} nodes without a parent (exactly one root required)")
    else:
        r = roots[0]
        if r.branch_var is not None or r.branch_value is not None or r.fixed_in or r.fixed_out:
            problems.append(f"root node {r.id} must have no branching variable and no fixing")
    children: dict[int, list[_Node]] = {nd.id: [] for nd in c.nodes}
    for nd in c.nodes:
        if nd.parent is None:
            continue
        if nd.parent not in by_id:
            problems.append(f"node {nd.id}: parent {nd.parent} does not exist")
            continue
        if nd.branch_var is None or nd.branch_value is None:
            problems.append(f"node {nd.id}: non-root node without branch_var/branch_value")
        elif not 0 <= nd.branch_var < c.p:
            problems.append(f"node {nd.id}: branch_var {nd.branch_var} not in [0, {c.p})")
        children[nd.parent].append(nd)
    if problems:
        rep.add("tree_structure", False, "; ".join(problems[:_MAX_LISTED]))
        return None
    # connected and acyclic: every node reached from the root exactly once
    order, seen, stack = [], set(), [roots[0].id]
    while stack:
        i = stack.pop()
        if i in seen:
            continue
        seen.add(i)
        order.append(i)
        stack.extend(ch.id for ch in children[i])
    missing = sorted(set(by_id) - seen)
    if missing:
        rep.add("tree_structure", False, f"nodes not connected to the root (cycle or orphan): "
                                         f"{_list(missing)}")
        return None
    for i in order:
        nd, ch = by_id[i], children[i]
        if ch:
            vars_ = {x.branch_var for x in ch}
            vals = sorted(x.branch_value for x in ch)
            if nd.status != "branched":
                problems.append(f"node {i} has children but status {nd.status!r}")
            if len(ch) != 2 or len(vars_) != 1 or vals != [0, 1]:
                problems.append(
                    f"node {i} must have exactly two children fixing the same variable to 0 and "
                    f"1, has {[(x.id, x.branch_var, x.branch_value) for x in ch]}"
                )
        elif nd.status == "branched":
            problems.append(f"node {i} has status 'branched' but no children (a leaf is missing)")
    if problems:
        rep.add("tree_structure", False, "; ".join(problems[:_MAX_LISTED]))
        return None
    leaves = sorted((by_id[i] for i in order if not children[i]), key=lambda x: x.id)
    rep.add("tree_structure", True, f"{len(c.nodes)} nodes, {len(leaves)} leaves, one root, "
                                    "every branched node has children z_j = 0 and z_j = 1")
    # fixings
    fix: dict[int, tuple[frozenset, frozenset]] = {roots[0].id: (frozenset(), frozenset())}
    for i in order:
        nd = by_id[i]
        if nd.parent is not None:
            pin, pout = fix[nd.parent]
            j = nd.branch_var
            if j in pin or j in pout:
                problems.append(f"node {i}: branch_var {j} is already fixed at parent {nd.parent}")
            fix[i] = (pin | {j}, pout) if nd.branch_value == 1 else (pin, pout | {j})
        fin, fout = fix[i]
        if nd.fixed_in != sorted(fin) or nd.fixed_out != sorted(fout):
            problems.append(f"node {i}: recorded fixed_in/fixed_out differ from the parent's "
                            "fixings plus (branch_var, branch_value)")
        if len(fin) > c.k:
            problems.append(f"node {i}: |fixed_in| = {len(fin)} > k = {c.k}")
    if problems:
        rep.add("tree_fixings", False, "; ".join(problems[:_MAX_LISTED]))
        return None
    rep.add("tree_fixings", True, "fixings follow the branching, |fixed_in| <= k: the leaves "
                                  "partition {z in {0,1}^p : sum z <= k}")
    rep.summary["n_leaves"] = len(leaves)
    return leaves, by_id


def _check_leaves(rep, c: _Parsed, arrays, Xd, yd, leaves: list[_Node],
                  by_id: dict[int, _Node]) -> None:
    """Check 5: recompute every leaf's bound from its witness (own or nearest ancestor's)."""
    zero_sum = c.fit_intercept and c.loss != "squared"
    problems: list[str] = []
    jobs: dict[tuple[str, int], list[_Node]] = {}
    inherited = 0
    for nd in leaves:
        cur = nd
        while cur.witness is None and cur.parent is not None:
            cur = by_id[cur.parent]
        if cur.witness is None:
            problems.append(f"leaf {nd.id} has no witness (nor any ancestor)")
            continue
        inherited += cur is not nd
        if cur.witness[0] == "point" and c.fit_intercept and c.loss != "squared":
            problems.append(f"leaf {nd.id}: a point witness cannot certify the unpenalised "
                            f"intercept of the {c.loss} loss (a dual witness with exact zero sum "
                            "is required)")
            continue
        jobs.setdefault(cur.witness, []).append(nd)
    bounds: dict[int, float] = {}
    off, idx, val = arrays["point_offsets"], arrays["point_indices"], arrays["point_values"]
    dual = arrays["dual_values"]
    lamp = c.lambda2 + c.mu
    chunk = max(1, min(256, 4_000_000 // max(1, c.n + c.p)))
    keys = sorted(jobs)
    for start in range(0, len(keys), chunk):
        block = keys[start:start + chunk]
        pts = [s for kind, s in block if kind == "point"]
        dls = [s for kind, s in block if kind == "dual"]
        if pts:
            B = np.zeros((len(pts), c.p))
            for r, s in enumerate(pts):
                B[r, idx[off[s]:off[s + 1]]] = val[off[s]:off[s + 1]]
            F, G, gb = _point_terms(Xd, yd, c.loss, c.mu, B)
            for r, s in enumerate(pts):
                a = -G[r] / (2.0 * lamp)
                for nd in jobs[("point", s)]:
                    fin = np.asarray(nd.fixed_in, dtype=np.int64)
                    fout = np.asarray(nd.fixed_out, dtype=np.int64)
                    bounds[nd.id] = float(F[r] - gb[r] - 2.0 * lamp * g_star_node(
                        a, fin, fout, c.k - fin.size, c.M))
        if dls:
            Z = dual[dls]
            C, ok, A = _dual_terms(Xd, yd, c.loss, c.lambda2, Z)
            for r, s in enumerate(dls):
                if not ok[r]:
                    _, dom = loss_conjugate(c.loss, Z[r], yd)
                    i = int(np.flatnonzero(~dom)[0])
                    users = _list([x.id for x in jobs[("dual", s)]])
                    problems.append(f"dual witness {s} (leaves {users}): "
                                    f"zeta[{i}] = {Z[r, i]!r} is outside the domain of the "
                                    f"{c.loss} conjugate")
                    continue
                if zero_sum and math.fsum(Z[r].tolist()) != 0.0:
                    problems.append(f"dual witness {s}: math.fsum(zeta) = "
                                    f"{math.fsum(Z[r].tolist())!r} != 0 (required exactly with an "
                                    "unpenalised intercept)")
                    continue
                for nd in jobs[("dual", s)]:
                    fin = np.asarray(nd.fixed_in, dtype=np.int64)
                    fout = np.asarray(nd.fixed_out, dtype=np.int64)
                    bounds[nd.id] = float(-C[r] - 2.0 * c.lambda2 * g_star_node(
                        A[r], fin, fout, c.k - fin.size, c.M))
    rep.add("leaf_witnesses", not problems,
            f"every leaf has a usable witness ({inherited} inherited from an ancestor)"
            if not problems else "; ".join(problems[:_MAX_LISTED]))
    values = [bounds.get(nd.id, -math.inf) for nd in leaves]
    values = [v if not math.isnan(v) else -math.inf for v in values]  # overflow: no bound
    certified = min(values)
    rep.certified_lower_bound = certified
    rep.margin = BOUND_MARGIN_REL * max(1.0, abs(c.ub))
    threshold = c.lb - rep.margin
    bad = [(nd.id, v) for nd, v in zip(leaves, values, strict=True) if not v >= threshold]
    if bad:
        msg = (f"recomputed bound below the claimed lower bound {c.lb:.15g} - margin "
               f"{rep.margin:.3e} at leaves " + _list(bad, lambda t: f"{t[0]} ({t[1]:.15g})"))
    else:
        msg = (f"min over {len(leaves)} leaves of the recomputed bounds = {certified:.15g} >= "
               f"claimed lower bound {c.lb:.15g} - margin {rep.margin:.3e}")
    rep.add("leaf_bounds", not bad, msg)


def _main(argv: list[str] | None = None) -> int:
    """``python -m sparsecert.certificate.verify CERT.json DATA.npz [--rel-gap G]``.

    ``DATA.npz`` holds the arrays ``X`` and ``y``.
    """
    import argparse

    ap = argparse.ArgumentParser(prog="python -m sparsecert.certificate.verify",
                                 description="Standalone numpy-only certificate verifier.")
    ap.add_argument("certificate")
    ap.add_argument("data", help=".npz file with arrays X and y")
    ap.add_argument("--rel-gap", type=float, default=None)
    args = ap.parse_args(argv)
    try:
        with np.load(args.data, allow_pickle=False) as z:
            X, y = z["X"], z["y"]
        report = verify_certificate(args.certificate, X, y, rel_gap=args.rel_gap)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(report)
    return report.exit_code


if __name__ == "__main__":
    sys.exit(_main())
