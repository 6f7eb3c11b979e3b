"""Validated data of a perspective relaxation: :class:`RelaxationProblem`.

Everything that depends on the data only (validation, label conversion, centring, the Lipschitz
constant, the eigenvalue shift) is done once here, so that branch and bound can call
:func:`~sparsecert.solvers.perspective.solve_node` thousands of times without repeating it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sparsecert._validation import PreparedProblem, prepare_problem
from sparsecert.solvers.losses import DEFAULT_LOSS, Loss, LossSpec, get_loss
from sparsecert.solvers.perspective._coef_bounds import CoefBounds, coef_bounds
from sparsecert.solvers.perspective._linalg import (
    Design,
    c_transpose,
    dense_design,
    lanczos_norm_sq,
    sparse_design,
    spectral_norm_sq,
    xb,
    xtz,
)
from sparsecert.solvers.perspective.centring import Centring
from sparsecert.solvers.perspective.samples import Samples
from sparsecert.solvers.rigorous import proves_eig_shift
from sparsecert.sparse import SparseDesign

__all__ = ["RelaxationProblem", "safe_eig_shift", "check_eig_shift"]

#: safety factor on the Lanczos estimate of ||X||^2 (backtracking covers the rest)
LIPSCHITZ_SAFETY = 1.02


def _gram(X: np.ndarray) -> np.ndarray:
    return X.T @ X


def check_eig_shift(X: np.ndarray, mu: float, centred: bool = False) -> bool:
    """``True`` iff ``X^T P X - mu I`` is proven positive definite in floating point
    (:func:`sparsecert.solvers.rigorous.proves_eig_shift`; ``X`` centred by ``X - X.mean(0)``
    when ``centred``, P the centring projector then), with a little room to spare so that an
    independent verifier's test passes too."""
    return proves_eig_shift(X, mu * (1.0 + 2.0 ** -20), centred)


def _extreme_eigenvalues(G: np.ndarray, dense_max: int = 2000) -> tuple[float, float]:
    """``(lambda_min, lambda_max)`` of a symmetric positive semidefinite ``G``.

    Small matrices: LAPACK, all eigenvalues in one call (one tridiagonal reduction; two calls
    for the two ends would reduce twice, 1.5-2x the time at p = 1000-2000). Larger ones:
    Lanczos on ``G`` for the top and on ``G^{-1}`` (through one Cholesky factorisation) for
    the bottom, which is several times cheaper than a dense eigensolver at p in the
    thousands. Only an estimate is needed: the caller proves the shift
    it derives with a Cholesky factorisation of ``G - mu I``.
    """
    import scipy.linalg  # here: the process that compiles kernels imports this module only

    p = G.shape[0]
    if p <= dense_max:
        w = scipy.linalg.eigvalsh(G, check_finite=False)
        return float(w[0]), float(w[-1])
    from scipy.sparse.linalg import LinearOperator, eigsh

    lam_max = float(eigsh(G, k=1, which="LA", tol=1e-8, return_eigenvectors=False)[0])
    try:
        cf = scipy.linalg.cho_factor(G, check_finite=False)
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgError):
        return 0.0, lam_max
    inv = LinearOperator((p, p), matvec=lambda v: scipy.linalg.cho_solve(cf, v), dtype=float)
    top_inv = float(eigsh(inv, k=1, which="LA", tol=1e-10, return_eigenvectors=False)[0])
    return (1.0 / top_inv if top_inv > 0 else 0.0), lam_max


def safe_eig_shift(X: np.ndarray, centred: bool = False, prove=None) -> float:
    """A shift slightly below ``lambda_min(X^T P X)``, proven by :func:`check_eig_shift` (or
    by ``prove(mu)``, the weighted least squares' proof on the user's data).

    Returns 0.0 when ``p > n`` or when ``X^T X`` is (numerically) singular.
    """
    n, p = X.shape
    if p > n:
        return 0.0
    G = _gram(X)
    lam_min, lam_max = _extreme_eigenvalues(G)
    mu = 0.999 * lam_min - 1e-12 * p * lam_max
    while mu > 1e-12 * lam_max:
        ok = (proves_eig_shift(X, mu * (1.0 + 2.0 ** -20), centred, gram=G) if prove is None
              else prove(mu))
        if ok:
            return float(mu)
        mu *= 0.5
    return 0.0


@dataclass(eq=False)
class RelaxationProblem:
    """The data of a (node) perspective relaxation, validated once.

    Build it with :meth:`from_data`. Attributes are read-only by convention.

    Attributes
    ----------
    X : ndarray (n, p) or SparseDesign
        Design matrix as used internally: dense (float64, C-contiguous; columns centred if
        ``fit_intercept``), or the user's sparse matrix in canonical compressed-column form
        (:class:`sparsecert.sparse.SparseDesign`, never centred: the kernels centre it
        implicitly, see ``design``).
    design : Design
        The design as the compiled kernels read it (``_linalg.Design``; a sparse one carries
        the column means as its implicit centre when ``fit_intercept``).
    sparse : bool
        Whether the design is sparse.
    y : ndarray (n,)
        Response as used internally (labels in {-1, +1} for logistic / squared hinge; centred for
        squared loss with intercept).
    n_samples, n_features : int
    loss : str
    loss_params : dict
        The loss's parameters (empty for a loss without any).
    loss_fn : Loss
        The registry's loss with these parameters (:mod:`sparsecert.solvers.losses`); the
        solver reads its capabilities, never its name.
    loss_id : int
    loss_spec : LossSpec
        The loss as the compiled kernels take it (id and parameter).
    lambda2 : float
    M : float
        Box ``|b_j| <= M`` (``np.inf`` when there is none).
    mu : float
        Eigenvalue shift (a loss that ``takes_shift``; 0.0 otherwise).
    fit_intercept : bool
    lipschitz : float or None
        Lipschitz constant of the gradient of the loss part, ``c ||X||^2`` (None for Poisson).
    norm_sq : float
        ``||X||_2^2`` (power iteration).
    centring : Centring
        The intercept by centring (its means, ``x_mean`` and ``y_mean``, are also attributes):
        the reduction that made ``X`` and ``y`` and its inverse to the user's intercept.
    XT : ndarray (p, n) or None
        ``X.T`` as a C-contiguous copy (used by the kernels; None for a sparse design).
    samples : Samples
        How the relaxation's samples relate to the user's (the samples of positive weight;
        least squares: the weights folded into the data), and the map of a dual back.
    sample_weight, offset : ndarray (n,) or None
        The weights and offsets of the losses' kernels (in ``loss_spec``): a loss without a
        closed-form refit; None for least squares, which folds them into ``X`` and ``y``.
    coef_bounds : CoefBounds or None
        Every coefficient's bounds (with the box) when the problem has bounds other than the
        symmetric box ``M``; the kernels take the box alone when None.
    forced_in, forced_out : ndarray of bool (p,) or None
        The problem's features forced into and kept out of the support (the search's root).
    """

    X: np.ndarray | SparseDesign
    y: np.ndarray
    loss: str
    lambda2: float
    M: float
    mu: float
    fit_intercept: bool
    norm_sq: float
    lipschitz: float | None
    centring: Centring
    XT: np.ndarray | None = field(default=None, repr=False)
    loss_params: dict = field(default_factory=dict)
    samples: Samples | None = field(default=None, repr=False)
    sample_weight: np.ndarray | None = field(default=None, repr=False)
    offset: np.ndarray | None = field(default=None, repr=False)
    coef_bounds: CoefBounds | None = field(default=None, repr=False)
    forced_in: np.ndarray | None = field(default=None, repr=False)
    forced_out: np.ndarray | None = field(default=None, repr=False)
    loss_fn: Loss = field(init=False, repr=False)
    loss_id: int = field(init=False)
    loss_spec: LossSpec = field(init=False, repr=False)
    icpt: bool = field(init=False)
    Xty: np.ndarray = field(init=False, repr=False)
    design: Design = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.loss_fn = get_loss(self.loss, self.loss_params)
        self.loss_id = self.loss_fn.loss_id
        self.loss_spec = self.loss_fn.spec.with_samples(self.sample_weight, self.offset)
        if self.samples is None:
            self.samples = Samples(int(self.X.shape[0]))
        # an intercept that FISTA carries as an extra variable (no closed form by centring)
        self.icpt = bool(self.fit_intercept and not self.loss_fn.has_closed_form_refit)
        if self.sparse:  # never densified: the kernels centre it implicitly
            centre = self.centring.x_mean if self.fit_intercept else None
            self.design = sparse_design(self.X, centre)
            self.XT = None
        else:
            # X^T stored C-contiguous for the single-threaded X @ b kernel (see _linalg)
            if self.XT is None:
                self.XT = np.ascontiguousarray(self.X.T)
            self.design = dense_design(self.X, self.XT)
        # X^T (w y), for a zero-sum dual of the form zeta = e - w y (loss_kernels.zero_sum_parts)
        if self.loss_fn.dual_zero_sum != "shifted":
            self.Xty = np.zeros(self.n_features)
        else:
            wy = self.y if self.sample_weight is None else self.sample_weight * self.y
            self.Xty = xtz(self.design, wy) if self.sparse else self.X.T @ wy

    @property
    def x_mean(self) -> np.ndarray:
        """The column means the centring removed (zeros without an intercept)."""
        return self.centring.x_mean

    @property
    def y_mean(self) -> float:
        """The response mean the centring removed (least squares with an intercept)."""
        return self.centring.y_mean

    @property
    def sparse(self) -> bool:
        """Whether the design is sparse (:class:`sparsecert.sparse.SparseDesign`)."""
        return isinstance(self.X, SparseDesign)

    @property
    def n_samples(self) -> int:
        return int(self.X.shape[0])

    def raw_dual(self, zeta: np.ndarray) -> np.ndarray:
        """A dual point of the relaxation on the user's samples (:meth:`Samples.raw_dual`)."""
        return self.samples.raw_dual(zeta)

    def dual_of_point(self, b: np.ndarray) -> np.ndarray:
        """The dual point at ``b`` (the weighted loss's gradient at ``X b``, on the relaxation's
        data), on the user's samples."""
        from sparsecert.solvers.loss_kernels import loss_value_grad

        u = xb(self.design, np.asarray(b, dtype=np.float64))
        g = np.empty(u.shape[0])
        loss_value_grad(self.loss_spec, u, self.y, g)
        return self.raw_dual(g)

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    @property
    def lam_eff(self) -> float:
        """``lambda2 + mu``: the weight the perspective acts on."""
        return self.lambda2 + self.mu

    @classmethod
    def from_data(cls, X, y, lambda2, loss: str = DEFAULT_LOSS, max_abs_coef=None,
                  eig_shift=None, fit_intercept: bool = False) -> RelaxationProblem:
        """Validate the data and precompute what the node solver needs.

        Parameters
        ----------
        X : array-like (n, p)
        y : array-like (n,)
            Real responses (squared), two labels (logistic, squared hinge; the smaller is coded
            -1, see :func:`sparsecert.solvers.losses.binary_codes`), non-negative counts
            (Poisson).
        lambda2 : float
            Ridge weight, > 0.
        loss : str
            A name of the loss registry :mod:`sparsecert.solvers.losses`.
        max_abs_coef : float or None
            Box ``|b_j| <= M``; None for no box.
        eig_shift : None, float or "auto"
            A loss that ``takes_shift`` (least squares) only: None -> 0.0 (the plain
            perspective relaxation); a float -> that shift after checking ``X^T X - mu I`` is
            positive definite (Cholesky); "auto" -> a safe value slightly below
            ``lambda_min(X^T X)`` (0.0 if ``p > n`` or singular).
        fit_intercept : bool
            Unpenalised intercept: exact by centring for a loss with a closed-form refit (least
            squares); for the other losses an extra smooth variable of FISTA, and the bound is
            the Fenchel dual at a zero-sum projection of ``zeta`` (rounded to a dyadic grid so
            that ``math.fsum(dual) == 0.0`` exactly).
        """
        return cls.from_prepared(prepare_problem(X, y, lambda2, loss=loss,
                                                 max_abs_coef=max_abs_coef,
                                                 fit_intercept=fit_intercept,
                                                 eig_shift=eig_shift, strict_shift=True))

    @classmethod
    def from_prepared(cls, prepared: PreparedProblem) -> RelaxationProblem:
        """Precompute what the node solver needs from checked data (see :meth:`from_data`;
        :func:`sparsecert._validation.prepare_problem` makes ``prepared``).

        With sample weights only the samples of positive weight are kept (a zero weight drops
        its sample). Least squares folds its weights and offsets into the data: with the
        weighted means (an intercept) ``X <- sqrt(w) (X - 1 m_w^T)``, ``y <- sqrt(w) (y - o -
        m_y)``, an unweighted least-squares problem whose intercept is exact; the other losses
        keep them in their kernels' ``LossSpec``."""
        Xc, yc, loss = prepared.X, prepared.y_used, prepared.loss
        lam, fit_intercept, eig_shift = prepared.lambda2, prepared.fit_intercept, prepared.eig_shift
        params = dict(getattr(prepared, "loss_params", None) or {})
        closed_form = get_loss(loss, params).has_closed_form_refit
        M = np.inf if prepared.max_abs_coef is None else prepared.max_abs_coef
        w = getattr(prepared, "sample_weight", None)
        o = getattr(prepared, "offset", None)
        samples, Xc, yc, w, o = Samples.reduce(Xc, yc, w, o, fold=closed_form)
        # (with a carried intercept a zero-sum dual gives the same X^T zeta on centred columns;
        # a loss with a closed-form refit has its intercept exact by centring the targets too)
        centring, Xc, yc = Centring.apply(Xc, yc, fit_intercept, centre_y=closed_form,
                                          weights=samples.weights)
        if isinstance(Xc, SparseDesign):
            if samples.scale is not None:  # least squares: the weights folded into the data
                Xc = Xc.scale_rows(samples.scale)  # (no intercept: refused by the centring)
                yc = samples.scale * yc
            mu = _resolve_sparse_shift(eig_shift)
            XT = None
            centre = centring.x_mean if fit_intercept else None
            if w is None:
                norm_sq = lanczos_norm_sq(sparse_design(Xc, centre))
            elif centre is None:  # ||W^(1/2) X||^2 on the rows scaled (a copy of the values)
                norm_sq = lanczos_norm_sq(sparse_design(Xc.scale_rows(np.sqrt(w))))
            else:  # ||W^(1/2) (X - 1 m^T)||^2 <= max(w) ||X - 1 m^T||^2 (the step size only)
                norm_sq = float(w.max()) * lanczos_norm_sq(sparse_design(Xc, centre))
            norm_sq *= LIPSCHITZ_SAFETY
        else:
            if samples.scale is not None:  # least squares: the weights folded into the data
                Xc = np.ascontiguousarray(samples.scale[:, None] * Xc)
                yc = samples.scale * yc
            mu = _resolve_shift(Xc, loss, eig_shift, fit_intercept,
                                weighted=_weighted_prover(prepared, fit_intercept)
                                if samples.scale is not None else None)
            XT = c_transpose(Xc)
            Xn = Xc if w is None else np.ascontiguousarray(np.sqrt(w)[:, None] * Xc)
            XnT = XT if w is None else c_transpose(Xn)
            if min(Xn.shape) <= 64:
                norm_sq = spectral_norm_sq(Xn) * LIPSCHITZ_SAFETY
            else:
                norm_sq = lanczos_norm_sq(Xn, XnT) * LIPSCHITZ_SAFETY
        if fit_intercept and not closed_form:
            # the intercept is an extra smooth variable: ||[X, 1]||_W^2 <= ||X||_W^2 + sum w
            norm_sq = norm_sq + (Xc.shape[0] if w is None else float(w.sum()))
        curv = get_loss(loss, params).curvature
        lip = None if curv is None else curv * norm_sq
        lower = getattr(prepared, "coef_lower", None)
        bounds = None if lower is None else coef_bounds(lower, prepared.coef_upper)
        out = cls(X=Xc, y=yc, loss=loss, lambda2=lam, M=M, mu=mu, fit_intercept=fit_intercept,
                  norm_sq=norm_sq, lipschitz=lip, centring=centring, XT=XT,
                  loss_params=params, samples=samples, sample_weight=w, offset=o,
                  coef_bounds=bounds, forced_in=getattr(prepared, "forced_in", None),
                  forced_out=getattr(prepared, "forced_out", None))
        return out


def _resolve_sparse_shift(eig_shift) -> float:
    """The shift of a sparse design: none (``"auto"`` gives 0.0; its proof would form the dense
    p x p matrix ``X^T X``). A positive shift is refused by the prepare step."""
    if eig_shift is None or eig_shift == "auto":
        return 0.0
    mu = float(eig_shift)
    if mu > 0.0:
        raise ValueError("eig_shift > 0 needs a dense X (its proof forms X^T X); use "
                         "eig_shift='auto' or None with a sparse X")
    return 0.0


def _resolve_shift(X: np.ndarray, loss: str, eig_shift, centred: bool = False,
                   weighted=None) -> float:
    """The shift of an option checked by :func:`sparsecert._validation.check_eig_shift`
    (``centred``: ``X`` is the centred design of a model with an intercept; ``weighted``: the
    proof of a shift of the weighted least squares, whose ``X`` has the weights folded in)."""
    if eig_shift is None:
        return 0.0
    if eig_shift == "auto":
        return safe_eig_shift(X, centred, prove=weighted)
    mu = float(eig_shift)
    proven = check_eig_shift(X, mu, centred) if weighted is None else weighted(mu)
    if mu > 0.0 and not proven:
        raise ValueError(f"eig_shift = {mu} is not a valid shift: X^T X - eig_shift * I is not "
                         f"positive definite (use eig_shift='auto' for a safe value)")
    return mu


def _weighted_prover(prepared, fit_intercept: bool):
    """The proof of a shift of the weighted least squares on the user's data (the verifier's:
    X centred by the weighted means over every sample, with their weights), with room."""
    X, w = prepared.X, prepared.sample_weight
    Xd = X - (w @ X) / w.sum() if fit_intercept else X

    def prove(mu: float) -> bool:
        return proves_eig_shift(Xd, mu * (1.0 + 2.0 ** -20), fit_intercept, weights=w)

    return prove
