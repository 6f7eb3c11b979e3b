"""The user-facing entry points: :func:`certify` and :func:`verify`."""

from __future__ import annotations

import concurrent.futures as cf
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from os import PathLike
from typing import Any

import numpy as np

from sparsecert._params import defaults, document
from sparsecert._validation import PreparedProblem, prepare
from sparsecert._version import __version__
from sparsecert.problem import SearchOptions, build_records
from sparsecert.statuses import BRANCHED, OPTIMAL, PRECISION_LIMITED

__all__ = ["certify", "certify_prepared", "verify", "CertifyResult"]

_D = defaults("certify")


class _NotGiven:
    """The default of a keyword whose ``None`` means something (shown in ``help()``)."""

    def __repr__(self) -> str:
        return "<not given>"


_NOT_GIVEN: Any = _NotGiven()


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
        ``"interrupted"``, ``"tree_exhausted"`` (every node closed, but the leaves' bounds,
        computed to the relaxation accuracy, leave a gap above ``rel_gap``; e.g. ``rel_gap=0``)
        or ``"precision_limited"`` (the search closed the gap, but the rounding errors of the
        proof, bounded rigorously, keep the provable gap above ``rel_gap``).
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

    def save(self, path: str | PathLike, overwrite: bool = False) -> None:
        """Write the certificate (``path`` ends in ``.json``; the ``.npz`` sidecar of the same
        name goes next to it). Only a certificate of the same problem on the same data is
        replaced; any other file (a certificate of another problem included) is kept
        (``FileExistsError``) unless ``overwrite=True``."""
        self.certificate.save(path, overwrite=overwrite)

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


@document()
def certify(X, y, k: int, lambda2: float, *, loss: str = _D.loss,
            fit_intercept: bool = _D.fit_intercept, max_abs_coef: float | None = _D.max_abs_coef,
            eig_shift: float | str | None = _D.eig_shift, rel_gap: float = _D.rel_gap,
            abs_gap: float = _D.abs_gap, time_limit: float | None = _D.time_limit,
            node_limit: int | None = _D.node_limit, n_jobs: int = _D.n_jobs,
            batch_size: int = _D.batch_size, backend: str = _D.backend,
            executor: cf.Executor | None = _D.executor, node_selection: str = _D.node_selection,
            branching: str = _D.branching, verbose: int = _D.verbose,
            log: Callable[[str], None] | None = _D.log, feature_names=None) -> CertifyResult:
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
    k
        ``1 <= k <= n_features``.
    lambda2, loss, fit_intercept, max_abs_coef, eig_shift, rel_gap, abs_gap
    time_limit
        Building the certificate after the search adds its own time (rigorous bounds of the
        leaves: about a millisecond per node on riboflavin's 4088 columns).
    node_limit
    n_jobs
        With the default threads, this thread and ``n_jobs - 1`` more; give them a larger
        ``batch_size`` too (16 per thread or more keeps them busy; on two cores the search of a
        10,000-node tree ran 1.8x as fast at 32).
    batch_size, backend, executor, node_selection, branching, verbose, log
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
    t0 = time.perf_counter()
    spec, options = build_records(locals())  # the keywords, checked by the parameter table
    names = _feature_names(X, feature_names)
    return certify_prepared(prepare(X, y, spec), options, feature_names=names, t0=t0)


def certify_prepared(prepared: PreparedProblem, options: SearchOptions, *, feature_names=None,
                     t0: float | None = None) -> CertifyResult:
    """:func:`certify` of a problem already prepared (:func:`sparsecert._validation.prepare`,
    which the command line runs itself before it prints anything): the expensive setup, the
    search and the certificate. ``prepared.spec.k`` must be set; ``feature_names`` as for
    :func:`certify`; ``t0`` is when the caller's clock started (default: now)."""
    from sparsecert.bnb import BranchAndBound
    from sparsecert.bnb.interrupts import deferred_interrupt
    from sparsecert.solvers.perspective import RelaxationProblem

    t0 = time.perf_counter() if t0 is None else t0
    if feature_names is not None:
        feature_names = _feature_names(prepared.X, feature_names)
    spec = prepared.spec
    if spec.k is None:
        raise ValueError("the prepared problem has no k")
    prob = RelaxationProblem.from_prepared(prepared)  # the expensive setup, after every check
    engine = BranchAndBound(prob, spec.k, options)
    res = engine.run()
    # a second Ctrl-C here would lose the result (see interrupts); the log keeps ticking
    with deferred_interrupt(), engine.after_search("certificate") as note:
        result = assemble_result(res, prob, prepared.X, prepared.y, prepared.y_used,
                                 prepared.labels, spec.k, spec.lambda2, spec.loss,
                                 spec.max_abs_coef, spec.fit_intercept, options.rel_gap,
                                 options.abs_gap, options.n_jobs, options.executor,
                                 options.backend, t0, feature_names=feature_names, note=note)
    result.feature_names = feature_names
    return result


def assemble_result(res, prob, X_raw: np.ndarray, y_raw: np.ndarray, y_used: np.ndarray,
                    labels, k: int, lambda2: float, loss: str, max_abs_coef, fit_intercept: bool,
                    rel_gap: float, abs_gap: float, n_jobs: int, executor, backend: str,
                    t0: float, feature_names=None, note=None,
                    **producer_extra) -> CertifyResult:
    """The engine's record -> a :class:`CertifyResult` with its certificate.

    Maps the engine's model back to the user's coordinates, and builds the certificate with
    claims the standalone verifier proves: every leaf's bound, the bound of every region a node's
    reduced-cost fixings cut off (the node's ``fixings``, with its witness) and the incumbent's
    objective are evaluated rigorously on the raw data (:mod:`sparsecert.solvers.rigorous`) and
    claimed with a margin of a few rounding radii. The status ``"optimal"`` is kept only when the
    claimed gap, rounded up, is within the tolerance; when rounding alone keeps it open the
    status is ``"precision_limited"``. Shared by :func:`certify` and
    :func:`sparsecert.path.certify_path`. (``labels`` is unused: the verifier derives the label
    coding from the data.) ``note``, if given, is called with how far the assembly has got
    (the progress log's phase).
    """
    from sparsecert.certificate import Certificate
    from sparsecert.proof.bounds import SafeEvaluator
    from sparsecert.proof.claims import claim_lower, claim_lower_array, claim_upper
    from sparsecert.proof.regions import fixing_regions
    from sparsecert.proof.witnesses import dual_witness

    coef = res.coef.copy()
    intercept = float(res.intercept)
    if fit_intercept and loss == "squared":
        intercept = float(prob.y_mean - prob.x_mean @ coef)
    elif fit_intercept:  # the engine works on centred columns
        intercept = float(intercept - prob.x_mean @ coef)
    mu = float(prob.mu)  # proven by RelaxationProblem.from_data (Rump's test, as the verifier)
    ev = SafeEvaluator(X_raw, y_used, prob.loss_fn, float(lambda2), max_abs_coef, fit_intercept,
                       mu)
    value, upper = ev.objective(coef, intercept if fit_intercept else 0.0)
    ub = claim_upper(value, upper)

    terms: dict[int, tuple] = {}
    p = X_raw.shape[1]
    # the columns each witness's terms are read on: those not fixed out at the nodes using it
    # (at a node with fixings, its base fixings); the other terms are not computed
    used: dict[int, np.ndarray] = {}
    # the tree's structure from the parent links (a Ctrl-C can cut a branching short after
    # the children joined the tree, before their parent was marked: it is branched)
    branched = {nd.parent for nd in res.nodes if nd.parent is not None}
    # a leaf without a witness (a root that a Ctrl-C stopped before its bound) gets the dual
    # point zeta = 0: feasible for every loss, so its bound is weak but proven
    zero = ("dual", np.zeros(X_raw.shape[0]))

    def witness_of(nd):
        return zero if nd.witness is None and nd.id not in branched else nd.witness

    for nd in res.nodes:
        w = witness_of(nd)
        if w is not None and (nd.id not in branched or nd.bound_fixings):
            out = nd.base_fixings()[1] if nd.bound_fixings else nd.fixed_out
            key = id(w[1])
            mask = ~np.asarray(out, dtype=bool).reshape(p)
            used[key] = mask if key not in used else used[key] | mask

    def leaf_witness(w):
        """The certificate's witness for an engine witness, and its safe terms."""
        key = id(w[1])
        if key not in terms:
            kind, vec = w
            vec = np.asarray(vec, dtype=np.float64)
            if kind == "point" and mu > 0:
                cert_w = ("shifted", vec)
            elif kind == "point":  # the dual point of the unshifted relaxation at b~
                cert_w = ("dual", dual_witness(ev, _gradient(prob, vec)))
            else:
                cert_w = ("dual", dual_witness(ev, vec))
            cols = np.flatnonzero(used[key]) if key in used else None
            terms[key] = (cert_w, ev.witness(*cert_w, None if cols is None or cols.size == p
                                             else cols))
        return terms[key]

    nodes = []
    # each leaf's claim, and the smallest claim of the regions a node's fixings cut off
    leaf_claims = []
    n_nodes = len(res.nodes)
    for i, nd in enumerate(res.nodes):
        if note is not None and i % 1000 == 0:
            note(f"certificate: rigorous bounds, node {i:,} of {n_nodes:,}")
        is_leaf = nd.id not in branched
        fixings = [(int(j), int(v)) for j, v in nd.bound_fixings]
        witness, bound, wb = None, None, None
        if (is_leaf or fixings) and witness_of(nd) is not None:  # fixings keep the witness
            witness, wb = leaf_witness(witness_of(nd))
        if is_leaf and wb is not None:
            fin = np.asarray(nd.fixed_in, dtype=bool).reshape(p)
            fout = np.asarray(nd.fixed_out, dtype=bool).reshape(p)
            bound = claim_lower(*wb.node(fin, fout, int(k)))
        if is_leaf:
            leaf_claims.append(-np.inf if bound is None else bound)
        if fixings:  # each cut-off region z_j = 1 - v, bounded with the node's base fixings
            if wb is None:
                leaf_claims.append(-np.inf)
            else:
                values, lowers = fixing_regions(wb, *nd.base_fixings(), int(k), fixings)
                leaf_claims.append(float(claim_lower_array(values, lowers).min()))
        nodes.append(dict(id=nd.id, parent=nd.parent, branch_var=nd.branch_var,
                          branch_value=nd.branch_value,
                          status=nd.status if is_leaf else BRANCHED,
                          bound=bound if bound is not None and np.isfinite(bound) else None,
                          witness=witness, fixings=fixings))
    lower = min(min(leaf_claims, default=-np.inf), ub)
    if not np.isfinite(lower):
        lower = -1e300 if not np.isfinite(ub) else min(ub, -1e300)
    abs_gap_v = max(0.0, float(np.nextafter(ub - lower, np.inf)))
    gap = float(np.nextafter(abs_gap_v / max(1.0, abs(ub)), np.inf))
    status = res.status
    if status == OPTIMAL and not (gap <= rel_gap or abs_gap_v <= abs_gap):
        status = PRECISION_LIMITED  # the search closed the gap; rounding keeps it open
    if note is not None:
        note("certificate: the document")
    cert = Certificate.build(
        X_raw, y_raw,
        problem=dict(loss=loss, k=int(k), lambda2=float(lambda2),
                     max_abs_coef=None if max_abs_coef is None else float(max_abs_coef),
                     fit_intercept=bool(fit_intercept)),
        incumbent=dict(coef=coef, intercept=intercept if fit_intercept else 0.0,
                       objective=value),
        bounds=dict(lower_bound=lower, upper_bound=ub, status=status,
                    rel_gap_tol=float(rel_gap), abs_gap_tol=float(abs_gap)),
        eig_shift=mu,
        nodes=nodes,
        feature_names=feature_names,
        producer=dict(settings=res.settings, elapsed=res.time, n_jobs=int(n_jobs),
                      executor="user" if executor is not None else
                      ("serial" if n_jobs == 1 else backend),
                      package_version=__version__, **producer_extra))
    return CertifyResult(coef=coef, intercept=intercept, support=tuple(res.support),
                         objective=value, lower_bound=lower, gap=gap,
                         absolute_gap=abs_gap_v, status=status, n_nodes=res.n_nodes,
                         time=time.perf_counter() - t0, certificate=cert, search=res)


def _gradient(prob, b: np.ndarray) -> np.ndarray:
    """f'(X b) on the engine's data (centred with an intercept): the dual point at b."""
    return prob.loss_fn.gradient(prob.X @ b, prob.y)


def verify(path, X, y, *, loss: str | None = None, k: int | None = None,
           lambda2: float | None = None, max_abs_coef=_NOT_GIVEN,
           fit_intercept: bool | None = None, rel_gap: float | None = None):
    """Re-check a certificate against the data with the standalone verifier.

    Parameters
    ----------
    path : str, path-like, Certificate, CertifyResult or dict
        The certificate (JSON path; its ``.npz`` sidecar is the file of the same name next to
        it), or the result of :func:`certify` (its ``certificate``).
    X, y : array-like
        The data the certificate claims to be about (raw labels: the verifier maps the smaller
        of two label values to -1, the larger to +1).
    loss, k, lambda2, max_abs_coef, fit_intercept : optional
        The problem as you pose it: a value that differs from the certificate's fails the
        verification (``max_abs_coef=None`` or ``inf``: no box). Not given: the certificate's.
    rel_gap : float, optional
        Relative-gap tolerance to judge against (default 1e-4, never the certificate's own).

    Returns
    -------
    sparsecert.certificate.VerificationReport
        ``.ok``, ``.checks``, ``.failures``, ``.exit_code``, ``.parameters``.
    """
    from sparsecert.certificate.verify import DEFAULT_REL_GAP, verify_certificate

    if isinstance(path, CertifyResult):
        path = path.certificate
    kwargs = {} if max_abs_coef is _NOT_GIVEN else {"max_abs_coef": max_abs_coef}
    return verify_certificate(path, X, y,
                              loss=loss, k=k, lambda2=lambda2, fit_intercept=fit_intercept,
                              rel_gap=DEFAULT_REL_GAP if rel_gap is None else rel_gap,
                              **kwargs)
