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

__all__ = ["certify", "certify_prepared", "verify", "CertifyResult", "assemble_result",
           "run_info"]

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
    certificate_bytes : int
        Its size: the JSON document and the proof file.
    assembly_time : float
        Seconds spent on the certificate after the search (the open nodes' claims, the proof
        file, the document); the closed nodes' claims were computed during the search
        (``proof_stats.claim_seconds``).
    peak_memory : int or None
        The process's peak resident memory in bytes when the certificate was done (None where
        the platform does not say).
    verification_time : float or None
        Seconds the standalone verifier took, once :meth:`verify` ran (or the command line's
        check after it wrote the files).
    proof_stats : sparsecert.proof.producer.ProofStats
        All of the certificate's costs.
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
    certificate_bytes: int = 0
    assembly_time: float = 0.0
    peak_memory: int | None = None
    verification_time: float | None = None
    proof_stats: Any = field(default=None, repr=False)

    def save(self, path: str | PathLike, overwrite: bool = False) -> None:
        """Write the certificate (``path`` ends in ``.json``; the ``.proof`` file of the same
        name goes next to it). Only a certificate of the same problem on the same data is
        replaced; any other file (a certificate of another problem included) is kept
        (``FileExistsError``) unless ``overwrite=True``."""
        self.certificate.save(path, overwrite=overwrite)

    def verify(self, X, y, **kwargs):
        """Check the certificate with the standalone verifier on the data (:func:`verify`'s
        keywords); records :attr:`verification_time`. Returns the
        :class:`~sparsecert.certificate.VerificationReport`."""
        report = verify(self, X, y, **kwargs)
        self.verification_time = report.seconds
        return report

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
            loss_params: dict | None = _D.loss_params, fit_intercept: bool = _D.fit_intercept,
            max_abs_coef: float | None = _D.max_abs_coef,
            eig_shift: float | str | None = _D.eig_shift, sample_weight=_D.sample_weight,
            offset=_D.offset, coef_bounds=_D.coef_bounds, positive: bool = _D.positive,
            always_select=_D.always_select, exclude=_D.exclude, rel_gap: float = _D.rel_gap,
            abs_gap: float = _D.abs_gap, time_limit: float | None = _D.time_limit,
            node_limit: int | None = _D.node_limit, n_jobs: int = _D.n_jobs,
            batch_size: int = _D.batch_size,
            batch_overlap: int | None = _D.batch_overlap, backend: str = _D.backend,
            executor: cf.Executor | None = _D.executor, node_selection: str = _D.node_selection,
            branching: str = _D.branching, verbose: int = _D.verbose,
            log: Callable[[str], None] | None = _D.log, feature_names=None) -> CertifyResult:
    """Solve a k-sparse GLM to certified optimality.

    Minimises ``sum_i loss(y_i, x_i^T b + c) + lambda2 ||b||^2`` subject to ``||b||_0 <= k``
    (and ``|b_j| <= max_abs_coef``), by branch and bound over the perspective relaxation, and
    returns the model with a certificate that :func:`verify` re-checks without the solver.

    Parameters
    ----------
    X : array-like or scipy.sparse matrix of shape (n_samples, n_features)
        A sparse X (CSR, CSC, ...) is never densified (:mod:`sparsecert.sparse`; a positive
        ``eig_shift`` needs a dense X).
    y : array-like of shape (n_samples,)
        Targets: real responses (``"squared"``); for ``"logistic"``/``"squared_hinge"`` any two
        distinct numeric labels, the smaller coded -1 and the larger +1 (the label rule of the
        user guide); for ``"poisson"`` non-negative counts.
    k
        ``1 <= k <= n_features``.
    lambda2, loss, loss_params, fit_intercept, max_abs_coef, eig_shift
    sample_weight, offset, coef_bounds, positive, always_select, exclude, rel_gap, abs_gap
    time_limit
        Bounds the whole call: heuristics, search, and the certificate (the nodes' rigorous
        claims are computed as they close; the search keeps a reserve, estimated from the tree
        as it grows, for the open nodes and the proof file). Compiling is not counted: the
        first run's, and any kernel numba's cache missed during the search
        (``search.compile_time``).
    node_limit
    n_jobs
        With the default threads, this thread and ``n_jobs - 1`` more. The default
        ``batch_size`` (16) keeps two of them busy (on two cores the search of a 10,000-node
        tree ran 1.75x-1.78x as fast at 16); give more workers 8 nodes a batch each or more.
    batch_size, batch_overlap, backend, executor, node_selection, branching, verbose, log
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
    from sparsecert.solvers.perspective import RelaxationProblem

    t0 = time.perf_counter() if t0 is None else t0
    if feature_names is not None:
        feature_names = _feature_names(prepared.X, feature_names)
    spec = prepared.spec
    if spec.k is None:
        raise ValueError("the prepared problem has no k")
    from sparsecert.proof.producer import Annotations, start

    prob = RelaxationProblem.from_prepared(prepared)  # the expensive setup, after every check
    recorder = start(prob, prepared)  # the proof, recorded as the nodes close
    engine = BranchAndBound(prob, spec.k, options, proof=recorder)
    info = Annotations(producer=run_info(options), feature_names=feature_names)
    _, result = search_and_assemble(engine, prepared, options, t0, info)
    engine.progress.message(result.proof_stats.line())
    result.feature_names = feature_names
    return result


def search_and_assemble(engine, prepared: PreparedProblem, options: SearchOptions, t0: float,
                        annotations, *, first_run: bool = True):
    """Run ``engine``'s search (saying so and compiling first when ``first_run``) and complete
    its result with the certificate: ``(search result, CertifyResult)``, the step
    :func:`certify_prepared` and every point of :func:`~sparsecert.path.certify_path` share.

    ``engine`` is a :class:`~sparsecert.bnb.BranchAndBound` over ``prepared`` whose ``proof``
    is the recorder of this problem's proof (discarded if the search raises); ``t0`` is when
    the problem's clock started."""
    from sparsecert.bnb.interrupts import deferred_interrupt
    from sparsecert.firstrun import compile_first_run

    recorder = engine.proof
    try:
        if first_run:  # a first run says so and compiles, once
            engine.announce()
            engine.compile_time = compile_first_run(engine.problem, engine.progress)
        res = engine.run(started=t0)
    except BaseException:
        recorder.discard()
        raise
    # a second Ctrl-C here would lose the result (see interrupts); the log keeps ticking
    with deferred_interrupt(), engine.after_search("certificate") as note:
        result = assemble_result(res, engine.problem, prepared, options, t0,
                                 annotations=annotations, note=note, recorder=recorder)
    return res, result


def run_info(options: SearchOptions, **extra) -> dict:
    """The informational ``producer`` fields of a certificate: how the search ran."""
    executor = ("user" if options.executor is not None else
                "serial" if options.n_jobs == 1 else options.backend)
    return dict(n_jobs=int(options.n_jobs), executor=executor, package_version=__version__,
                **extra)


def assemble_result(search, relaxation, prepared: PreparedProblem, options: SearchOptions,
                    t0: float, *, annotations=None, note=None, recorder=None) -> CertifyResult:
    """The engine's record -> a :class:`CertifyResult` with its certificate.

    The proof producer (:func:`sparsecert.proof.producer.produce`) maps the engine's model back
    to the user's coordinates and builds the certificate of the problem ``prepared`` (its
    ``spec.k`` set) with claims the standalone verifier proves, the status ``options``' gap
    targets allow; ``annotations`` (:class:`sparsecert.proof.producer.Annotations`) are the
    certificate's informational fields (default: :func:`run_info`'s producer fields, no
    feature names), ``t0`` the start of the whole call (the result's time). Shared by
    :func:`certify` and :func:`sparsecert.path.certify_path`. ``note``, if given, is called
    with how far the assembly has got (the progress log's phase); ``recorder`` is the proof
    recorder the search streamed its closed nodes to.
    """
    from sparsecert.proof.producer import Annotations, produce

    if annotations is None:
        annotations = Annotations(producer=run_info(options))
    proof = produce(search, relaxation, prepared, options, recorder=recorder,
                    annotations=annotations, note=note)
    return CertifyResult(coef=proof.coef, intercept=proof.intercept,
                         support=tuple(search.support), objective=proof.objective,
                         lower_bound=proof.lower_bound, gap=proof.gap,
                         absolute_gap=proof.absolute_gap, status=proof.status,
                         n_nodes=search.n_nodes, time=time.perf_counter() - t0,
                         certificate=proof.certificate, search=search,
                         certificate_bytes=proof.stats.total_bytes,
                         assembly_time=proof.stats.assembly_seconds,
                         peak_memory=proof.stats.peak_memory, proof_stats=proof.stats)


def verify(path, X, y, *, loss: str | None = None, k: int | None = None,
           lambda2: float | None = None, max_abs_coef=_NOT_GIVEN,
           fit_intercept: bool | None = None, rel_gap: float | None = None,
           loss_params: dict | None = None, sample_weight=None, offset=None,
           coef_bounds=_NOT_GIVEN, positive: bool | None = None, always_select=None,
           exclude=None):
    """Re-check a certificate against the data with the standalone verifier.

    Parameters
    ----------
    path : str, path-like, Certificate, CertifyResult or dict
        The certificate (JSON path; its ``.proof`` file is the file of the same name next to
        it), or the result of :func:`certify` (its ``certificate``).
    X, y : array-like
        The data the certificate claims to be about (raw labels: the verifier maps the smaller
        of two label values to -1, the larger to +1).
    loss, k, lambda2, max_abs_coef, fit_intercept : optional
        The problem as you pose it: a value that differs from the certificate's fails the
        verification (``max_abs_coef=None`` or ``inf``: no box). Not given: the certificate's.
    rel_gap : float, optional
        Relative-gap tolerance to judge against (default 1e-4, never the certificate's own).
    loss_params : dict, optional
        The loss's parameters as you pose them (a value that differs from the certificate's
        fails the verification). Not given: the certificate's.
    sample_weight, offset : array-like of shape (n_samples,), optional
        The per-sample weights and offsets of the certified problem, data like ``X`` and ``y``
        (the certificate holds their hashes). Not given: all 1 and all 0, so a certificate of
        weighted or offset data fails without them.
    coef_bounds, positive, always_select, exclude : optional
        The coefficients' bounds and the features forced in and kept out, as you pose them (a
        value that differs from the certificate's fails the verification). Not given: the
        certificate's.

    Returns
    -------
    sparsecert.certificate.VerificationReport
        ``.ok``, ``.checks``, ``.failures``, ``.exit_code``, ``.parameters``.
    """
    from sparsecert.certificate.verify import DEFAULT_REL_GAP, verify_certificate

    if isinstance(path, CertifyResult):
        path = path.certificate
    kwargs = {} if max_abs_coef is _NOT_GIVEN else {"max_abs_coef": max_abs_coef}
    if coef_bounds is not _NOT_GIVEN:
        kwargs["coef_bounds"] = coef_bounds
    if loss_params:
        from sparsecert.solvers.losses import LOSS_PARAMETERS

        if not isinstance(loss_params, dict):
            raise TypeError(f"loss_params must be a dict, got {type(loss_params).__name__}")
        unknown = sorted(set(loss_params) - set(LOSS_PARAMETERS))
        if unknown:
            raise ValueError(f"loss_params: {unknown[0]!r} is not a loss parameter (known: "
                             f"{sorted(LOSS_PARAMETERS) or 'none'})")
        kwargs.update(loss_params)
    return verify_certificate(path, X, y,
                              loss=loss, k=k, lambda2=lambda2, fit_intercept=fit_intercept,
                              rel_gap=DEFAULT_REL_GAP if rel_gap is None else rel_gap,
                              sample_weight=sample_weight, offset=offset, positive=positive,
                              always_select=always_select, exclude=exclude, **kwargs)
