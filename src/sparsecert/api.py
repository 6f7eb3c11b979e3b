"""The user-facing entry points: :func:`certify` and :func:`verify`."""

from __future__ import annotations

import concurrent.futures as cf
import math
import time
from dataclasses import dataclass, field
from os import PathLike
from typing import Any

import numpy as np

from sparsecert._validation import check_k, check_options, prepare_problem
from sparsecert._version import __version__

__all__ = ["certify", "verify", "CertifyResult"]


@dataclass
class CertifyResult:
    """A certified k-sparse model.

    Attributes
    ----------
    coef : numpy.ndarray
        Coefficients (length p), at most ``k`` non-zeros.
    intercept : float
        Unpenalised intercept (0 unless ``fit_intercept``).
    support : tuple of int
        Indices of the non-zeros.
    objective : float
        ``sum_i loss(y_i, x_i^T coef + intercept) + lambda2 ||coef||^2`` (the upper bound).
    lower_bound : float
        Proven lower bound on the optimum (min over the tree's leaves).
    gap : float
        Relative gap ``(objective - lower_bound) / max(1, |objective|)``.
    absolute_gap : float
    status : str
        ``"optimal"`` (gap within ``rel_gap``), ``"time_limit"``, ``"node_limit"``,
        ``"interrupted"``, or ``"tree_exhausted"`` (every node closed, but the leaves' bounds,
        computed to the relaxation accuracy, leave a gap above ``rel_gap``; e.g. ``rel_gap=0``).
    n_nodes : int
    time : float
        Wall time in seconds (heuristics, search and certificate).
    certificate : sparsecert.certificate.Certificate
        The independently checkable proof; :meth:`save` writes it.
    search : sparsecert.bnb.SearchResult
        The engine's record (tree, progress history).
    feature_names : tuple of str or None
        The features' names (a DataFrame's columns, a CSV header or ``feature_names=``);
        informational, not part of the proof.
    """

    coef: np.ndarray
    intercept: float
    support: tuple[int, ...]
    objective: float
    lower_bound: float
    gap: float
    absolute_gap: float
    status: str
    n_nodes: int
    time: float
    certificate: Any = field(repr=False)
    search: Any = field(repr=False)
    feature_names: tuple[str, ...] | None = None

    def save(self, path: str | PathLike) -> None:
        """Write the certificate (JSON + ``.npz`` sidecar)."""
        self.certificate.save(path)

    def summary(self) -> str:
        """A few human-readable lines."""
        return (f"status: {self.status}\nobjective (upper bound): {self.objective:.10g}\n"
                f"lower bound: {self.lower_bound:.10g}\nrelative gap: {self.gap:.3e}\n"
                f"support ({len(self.support)}): {list(self.support)}{self._named()}\n"
                f"intercept: {self.intercept:.6g}\nnodes: {self.n_nodes}\n"
                f"time: {self.time:.2f} s")


    def _named(self) -> str:
        if not self.feature_names:
            return ""
        return " (" + ", ".join(self.feature_names[j] or f"b[{j}]" for j in self.support) + ")"


def _feature_names(X, feature_names=None) -> tuple[str, ...] | None:
    """The features' names: ``feature_names`` if given, else a DataFrame's string columns.

    Like scikit-learn's ``feature_names_in_``, columns are used only when every name is a
    string. Raises ``ValueError`` when the number of names is not the number of columns.
    """
    if feature_names is None:
        cols = getattr(X, "columns", None)
        if cols is None or not all(isinstance(c, str) for c in cols):
            return None
        feature_names = list(cols)
    if isinstance(feature_names, str) or not all(isinstance(c, str) for c in feature_names):
        raise TypeError("feature_names must be a sequence of strings")
    names = tuple(feature_names)
    p = np.shape(X)[1] if np.ndim(X) == 2 else None
    if p is not None and len(names) != p:
        raise ValueError(f"feature_names has {len(names)} names for {p} features")
    return names


def _objective_raw(X, y_used, loss, lambda2, coef, intercept) -> float:
    from sparsecert.solvers.losses import get_loss

    return get_loss(loss).value(X @ coef + intercept, y_used) + lambda2 * float(coef @ coef)


def certify(X, y, k: int, lambda2: float, loss: str = "squared", max_abs_coef: float | None = None,
            fit_intercept: bool = True, rel_gap: float = 1e-4, time_limit: float | None = None,
            n_jobs: int = 1, verbose: int = 1, *, node_limit: int | None = None,
            abs_gap: float = 1e-9, eig_shift: float | str | None = "auto",
            executor: cf.Executor | None = None, backend: str = "threads",
            node_selection: str | None = None, branching: str | None = None,
            batch_size: int | None = None, log=None,
            feature_names=None) -> CertifyResult:
    """Solve a k-sparse GLM to certified optimality.

    Minimises ``sum_i loss(y_i, x_i^T b + c) + lambda2 ||b||^2`` subject to ``||b||_0 <= k``
    (and ``|b_j| <= max_abs_coef``), by branch and bound over the perspective relaxation, and
    returns the model with a certificate that :func:`verify` re-checks without the solver.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
        Targets: real responses (``"squared"``); for ``"logistic"``/``"squared_hinge"`` any two
        distinct numeric labels, the smaller coded -1 and the larger +1 (the label rule of the
        user guide); for ``"poisson"`` non-negative counts.
    k : int
        Maximum number of non-zero coefficients (1 <= k <= n_features).
    lambda2 : float
        Ridge weight, > 0.
    loss : {"squared", "logistic", "squared_hinge", "poisson"}
        A name of the loss registry :mod:`sparsecert.solvers.losses`.
    max_abs_coef : float, optional
        Box ``|b_j| <= M``.
    fit_intercept : bool, default=True
        Unpenalised intercept, not counted in ``k`` (least squares: exact by centring).
    rel_gap : float
        Target relative gap ``(UB - LB) / max(1, |UB|)`` (default 1e-4).
    time_limit : float, optional
        Seconds; on expiry the best model is returned with status ``"time_limit"`` and a
        certificate of the bound reached.
    n_jobs : int
        Parallel node evaluations (threads by default; -1 for all cores).
    verbose : int
        0 silent; 1 a progress line every 5 seconds.
    node_limit : int, optional
        Maximum number of evaluated nodes.
    abs_gap : float
        Absolute gap tolerance.
    eig_shift : float, "auto" or None
        Least squares only: the eigenvalue shift of the stronger relaxation ("auto": a safe
        value below the smallest eigenvalue of ``X^T X``, proven by a Cholesky factorisation).
    executor : concurrent.futures.Executor, optional
        Evaluate nodes on this executor (processes, MPI, Dask); the certificate is the same.
    backend : {"threads", "processes", "mpi"}
        The engine's own executor when ``n_jobs > 1`` (``"mpi"``: an
        ``mpi4py.futures.MPIPoolExecutor`` with ``n_jobs`` workers).
    node_selection, branching, batch_size : optional
        Engine settings (see :class:`sparsecert.bnb.BnBSettings`).
    log : callable, optional
        Receives the progress lines (default: standard output).
    feature_names : sequence of str, optional
        Names of the columns of ``X`` (default: the columns of a pandas DataFrame, when they are
        all strings). Kept in the result and the certificate for display only.

    Returns
    -------
    CertifyResult

    Raises
    ------
    TypeError, ValueError
        Bad argument types / values (checked before any expensive setup).
    """
    from sparsecert.bnb import BnBSettings, BranchAndBound
    from sparsecert.solvers.perspective import RelaxationProblem

    t0 = time.perf_counter()
    names = _feature_names(X, feature_names)
    pp = prepare_problem(X, y, lambda2, loss=loss, max_abs_coef=max_abs_coef,
                         fit_intercept=fit_intercept, eig_shift=eig_shift)
    k = check_k(k, pp.X.shape[1])
    settings = BnBSettings.from_options(
        rel_gap=rel_gap, abs_gap=abs_gap, time_limit=time_limit, node_limit=node_limit,
        node_selection=node_selection, branching=branching, batch_size=batch_size)
    check_options(n_jobs=n_jobs, verbose=verbose)
    prob = RelaxationProblem.from_prepared(pp)  # the expensive setup, after every check
    engine = BranchAndBound(prob, k, settings, n_jobs=n_jobs, executor=executor,
                            backend=backend, verbose=verbose, log=log)
    res = engine.run()
    result = assemble_result(res, prob, pp.X, pp.y, pp.y_used, pp.labels, k, pp.lambda2,
                             pp.loss, pp.max_abs_coef, pp.fit_intercept, rel_gap, abs_gap,
                             n_jobs, executor, backend, t0)
    result.feature_names = names
    return result


def assemble_result(res, prob, X_raw: np.ndarray, y_raw: np.ndarray, y_used: np.ndarray,
                    labels, k: int, lambda2: float, loss: str, max_abs_coef, fit_intercept: bool,
                    rel_gap: float, abs_gap: float, n_jobs: int, executor, backend: str,
                    t0: float, **producer_extra) -> CertifyResult:
    """The engine's record -> a :class:`CertifyResult` with its certificate.

    Maps the engine's model back to the user's coordinates (intercept of centred least
    squares), recomputes the objective on the raw data, and builds the certificate. Shared by
    :func:`certify` and :func:`sparsecert.path.certify_path`.
    """
    from sparsecert.certificate import Certificate

    coef = res.coef.copy()
    intercept = float(res.intercept)
    if fit_intercept and loss == "squared":
        intercept = float(prob.y_mean - prob.x_mean @ coef)
    elif fit_intercept:  # the engine works on centred columns
        intercept = float(intercept - prob.x_mean @ coef)
    objective = _objective_raw(X_raw, y_used, loss, float(lambda2), coef, intercept)
    lower = min(float(res.lower_bound), objective)
    abs_gap_v = max(0.0, objective - lower)
    gap = abs_gap_v / max(1.0, abs(objective))
    nodes = []
    for nd in res.nodes:
        bound = nd.lower_bound if math.isfinite(nd.lower_bound) else None
        is_leaf = not nd.children
        nodes.append(dict(id=nd.id, parent=nd.parent, branch_var=nd.branch_var,
                          branch_value=nd.branch_value, status=nd.status,
                          bound=bound if is_leaf else None,
                          witness=nd.witness if is_leaf else None))
    cert = Certificate.build(
        X_raw, y_raw,
        problem=dict(loss=loss, k=int(k), lambda2=float(lambda2),
                     max_abs_coef=None if max_abs_coef is None else float(max_abs_coef),
                     fit_intercept=bool(fit_intercept), labels=labels),
        incumbent=dict(coef=coef, intercept=intercept, objective=objective),
        bounds=dict(lower_bound=lower, upper_bound=objective, status=res.status,
                    rel_gap_tol=float(rel_gap), abs_gap_tol=float(abs_gap)),
        eig_shift=float(prob.mu),
        nodes=nodes,
        producer=dict(settings=res.settings, elapsed=res.time, n_jobs=int(n_jobs),
                      executor="user" if executor is not None else
                      ("serial" if n_jobs == 1 else backend),
                      package_version=__version__, **producer_extra))
    return CertifyResult(coef=coef, intercept=intercept, support=tuple(res.support),
                         objective=objective, lower_bound=lower, gap=gap,
                         absolute_gap=abs_gap_v, status=res.status, n_nodes=res.n_nodes,
                         time=time.perf_counter() - t0, certificate=cert, search=res)


def verify(path, X, y, rel_gap: float | None = None):
    """Re-check a certificate against the data with the standalone verifier.

    Parameters
    ----------
    path : str, path-like, Certificate or dict
        The certificate (JSON path with its ``.npz`` sidecar beside it).
    X, y : array-like
        The data the certificate claims to be about.
    rel_gap : float, optional
        Gap tolerance to judge against (default: the certificate's own).

    Returns
    -------
    sparsecert.certificate.VerificationReport
        ``.ok``, ``.checks``, ``.failures``, ``.exit_code``.
    """
    from sparsecert.certificate.verify import verify_certificate

    return verify_certificate(path, np.asarray(X, dtype=float), np.asarray(y, dtype=float),
                              rel_gap=rel_gap)
