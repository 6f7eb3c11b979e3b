"""The records of a certification: the problem posed and the options of its search.

:class:`ProblemSpec` is the problem (the loss, ``k``, ``lambda2``, the bounds, the intercept),
:class:`SearchOptions` how it is searched (the gap targets, the limits, the engine's choices,
where and how loudly it runs). Both are frozen and check every field when they are built, by
the rows of the parameter table (:mod:`sparsecert._params`), so a record in hand is valid and
its values are converted (floats, ints, ``math.inf`` for "no bound"). The entry points build
them once from their keywords (:func:`build_records`) and hand them down: the prepare step, the
engine's settings and the proof producer read the records, not loose arguments.

"No bound" has one encoding inside the package, ``math.inf``; ``None`` is accepted at the edge
(the public keywords, the command line) and becomes ``inf`` in the record. The certificate
writes ``null`` for it, as its format says.

The module imports numpy and the loss registry only (the command line builds the records before
the solver is imported).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np

from sparsecert._checks import check_eig_shift
from sparsecert._params import PARAMS, defaults
from sparsecert.solvers.losses import check_loss_params, get_loss

__all__ = ["ProblemSpec", "SearchOptions", "EXECUTION_FIELDS", "build_records", "NO_BOUND"]

#: "No bound" (the box ``max_abs_coef``), inside the package.
NO_BOUND = math.inf

_D = defaults()


def _check_fields(record, names) -> None:
    """Check and convert the record's fields that are table parameters (frozen: set in place
    once, while the record is being built)."""
    for name in names:
        value = getattr(record, name)
        if name == "k" and value is None:
            continue
        object.__setattr__(record, name, PARAMS[name].validate(value))


@dataclass(frozen=True, eq=False)
class ProblemSpec:
    """The problem: ``min sum_i w_i loss(y_i, x_i^T b + c + o_i) + lambda2 ||b||^2`` subject to
    ``||b||_0 <= k``, ``|b_j| <= max_abs_coef``, ``lower_j <= b_j <= upper_j`` (and ``b_j >= 0``
    with ``positive``), the features of ``always_select`` in the support (counted in ``k``) and
    those of ``exclude`` out of it (``c = 0`` unless ``fit_intercept``; ``w_i = 1`` and ``o_i =
    0`` unless given).

    Parameters
    ----------
    k : int or None
        Maximum number of non-zero coefficients; None while it is not fixed (the relaxation on
        its own, a path before its points: :meth:`with_k`). Checked against the data's number
        of features by the prepare step.
    lambda2 : float
    loss : str
    fit_intercept : bool
    max_abs_coef : float
        ``math.inf`` for no box (None is accepted and converted).
    eig_shift : float, "auto" or None
        The eigenvalue shift of the least-squares relaxation ("auto" becomes None for the
        other losses, which have no shift).
    loss_params : dict or None
        The loss's parameters; in the record, every parameter of the loss, the defaults filled
        in (an empty dict for a loss without any).
    sample_weight, offset : numpy.ndarray or None
        Per-sample weights (``>= 0``, not all zero) and offsets, read-only float64 copies; their
        length is checked against the data by the prepare step.
    coef_bounds : tuple or None
        ``(lower, upper)``, each a float (``-inf`` / ``inf`` for none) or a read-only array of
        one bound per feature, ``lower <= 0 <= upper``.
    positive : bool
        ``b_j >= 0`` for every coefficient (the lower bounds become ``max(lower, 0)``).
    always_select, exclude : tuple of int
        Sorted feature indices forced into (``z_j = 1``, counted in ``k``) and kept out of
        (``z_j = 0``) the support; disjoint, at most ``k`` forced in.

    Raises
    ------
    TypeError, ValueError
        A field has a bad type or value (the parameter table's checks).
    """

    k: int | None
    lambda2: float
    loss: str = _D.loss
    fit_intercept: bool = _D.fit_intercept
    max_abs_coef: float | None = _D.max_abs_coef
    eig_shift: float | str | None = _D.eig_shift
    loss_params: Any = field(default=_D.loss_params)
    sample_weight: Any = _D.sample_weight
    offset: Any = _D.offset
    coef_bounds: Any = _D.coef_bounds
    positive: bool = _D.positive
    always_select: tuple[int, ...] = _D.always_select
    exclude: tuple[int, ...] = _D.exclude

    def __post_init__(self) -> None:
        _check_fields(self, ("k", "lambda2", "loss", "loss_params", "fit_intercept",
                             "max_abs_coef", "eig_shift", "sample_weight", "offset",
                             "coef_bounds", "positive", "always_select", "exclude"))
        object.__setattr__(self, "eig_shift", check_eig_shift(self.eig_shift, self.loss))
        object.__setattr__(self, "loss_params", check_loss_params(self.loss, self.loss_params))
        loss = get_loss(self.loss)
        if self.offset is not None and not loss.takes_offset:
            raise ValueError(f"offset: the {self.loss} loss does not take an offset")
        both = sorted(set(self.always_select) & set(self.exclude))
        if both:
            raise ValueError(f"always_select and exclude overlap on feature(s) {both[:5]}")
        if self.k is not None and len(self.always_select) > self.k:
            raise ValueError(f"always_select holds {len(self.always_select)} features, more "
                             f"than k = {self.k} (they count in k)")

    # -- equality: the arrays by value ---------------------------------------------------------
    def _key(self) -> tuple:
        def norm(v):
            if isinstance(v, np.ndarray):
                return ("array", v.shape, v.tobytes())
            if isinstance(v, tuple):
                return tuple(norm(x) for x in v)
            if isinstance(v, dict):
                return tuple(sorted(v.items()))
            return v
        return tuple(norm(getattr(self, f.name)) for f in fields(self))

    def __eq__(self, other) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    # -- derived -------------------------------------------------------------------------------
    @property
    def has_box(self) -> bool:
        """Whether the coefficients are boxed (``max_abs_coef`` finite)."""
        return self.max_abs_coef < math.inf

    @property
    def has_coef_bounds(self) -> bool:
        """Whether the coefficients have bounds other than the symmetric box (``coef_bounds``
        or ``positive``)."""
        return self.coef_bounds is not None or self.positive

    @property
    def is_weighted(self) -> bool:
        """Whether per-sample weights are given."""
        return self.sample_weight is not None

    def coef_limits(self, n_features: int) -> tuple[np.ndarray, np.ndarray]:
        """``(lower, upper)``: every coefficient's bounds, of length ``n_features``: the box,
        ``coef_bounds`` and ``positive`` together (``-inf`` / ``inf`` where there is none).

        Raises
        ------
        ValueError
            A per-feature bound of ``coef_bounds`` does not have ``n_features`` entries.
        """
        p = int(n_features)
        lo = np.full(p, -self.max_abs_coef)
        hi = np.full(p, self.max_abs_coef)
        if self.coef_bounds is not None:
            for side, v in zip(("lower", "upper"), self.coef_bounds, strict=True):
                if np.ndim(v) and np.size(v) != p:
                    raise ValueError(f"coef_bounds: {side} has {np.size(v)} entries, the data "
                                     f"have {p} features")
            lo = np.maximum(lo, self.coef_bounds[0])
            hi = np.minimum(hi, self.coef_bounds[1])
        if self.positive:
            lo = np.maximum(lo, 0.0)
        return lo, hi

    def with_k(self, k: int) -> ProblemSpec:
        """The same problem with the sparsity level ``k``."""
        return replace(self, k=k)


#: The options that say where and how loudly the search runs: they do not change the tree, so
#: the certificate does not record them among the engine's settings.
EXECUTION_FIELDS = ("n_jobs", "backend", "executor", "verbose", "log")


@dataclass(frozen=True)
class SearchOptions:
    """How the problem is searched: the gap targets, the limits, the engine's choices, and
    where and how loudly it runs.

    The fields are the search parameters of :func:`sparsecert.certify` (see there, or the
    parameter table :mod:`sparsecert._params`); None for ``node_selection``, ``branching`` or
    ``batch_size`` means the default. The engine's settings
    (:class:`sparsecert.bnb.BnBSettings`) are these options and the engine's tuning.

    Raises
    ------
    TypeError, ValueError
        A field has a bad type or value (the parameter table's checks).
    """

    rel_gap: float = _D.rel_gap
    abs_gap: float = _D.abs_gap
    time_limit: float | None = _D.time_limit
    node_limit: int | None = _D.node_limit
    node_selection: str = _D.node_selection
    branching: str = _D.branching
    batch_size: int = _D.batch_size
    batch_overlap: int | None = _D.batch_overlap
    n_jobs: int = _D.n_jobs
    backend: str = _D.backend
    executor: Any = _D.executor
    verbose: int = _D.verbose
    log: Callable[[str], None] | None = _D.log

    def __post_init__(self) -> None:
        _check_fields(self, [f.name for f in fields(SearchOptions)])


def build_records(params: Mapping[str, Any]) -> tuple[ProblemSpec, SearchOptions]:
    """The two records from an entry point's keywords (the table says which record each goes
    to; the names of no record are ignored). ``k`` may be missing (None)."""
    problem = {n: v for n, v in params.items() if n in PARAMS and PARAMS[n].record == "problem"}
    search = {n: v for n, v in params.items() if n in PARAMS and PARAMS[n].record == "search"}
    problem.setdefault("k", None)
    return ProblemSpec(**problem), SearchOptions(**search)
