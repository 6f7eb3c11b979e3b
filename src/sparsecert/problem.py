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

from sparsecert._checks import check_eig_shift
from sparsecert._params import PARAMS, defaults
from sparsecert.solvers.losses import check_loss_params

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


@dataclass(frozen=True)
class ProblemSpec:
    """The problem: ``min sum_i loss(y_i, x_i^T b + c) + lambda2 ||b||^2`` subject to
    ``||b||_0 <= k`` and ``|b_j| <= max_abs_coef`` (``c = 0`` unless ``fit_intercept``).

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
    sample_weight, coef_bounds, forced_in, excluded, offset
        Room for per-sample weights, per-coefficient bounds ``(lower, upper)``, features forced
        into or excluded from the support, and a fixed offset in the linear predictor. Not
        supported yet: anything but their neutral defaults (None, None, (), (), None) raises
        ``NotImplementedError``.

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
    loss_params: Any = field(default=_D.loss_params, hash=False)
    # what comes next (per-sample weights, per-coefficient bounds, forced-in and excluded
    # features, offsets): the fields exist with their neutral values
    sample_weight: Any = None
    coef_bounds: Any = None
    forced_in: tuple[int, ...] = ()
    excluded: tuple[int, ...] = ()
    offset: Any = None

    def __post_init__(self) -> None:
        _check_fields(self, ("k", "lambda2", "loss", "loss_params", "fit_intercept",
                             "max_abs_coef", "eig_shift"))
        object.__setattr__(self, "eig_shift", check_eig_shift(self.eig_shift, self.loss))
        object.__setattr__(self, "loss_params", check_loss_params(self.loss, self.loss_params))
        for name, neutral in (("sample_weight", None), ("coef_bounds", None),
                              ("forced_in", ()), ("excluded", ()), ("offset", None)):
            value = getattr(self, name)
            if not (value is neutral or (neutral == () and _is_empty(value))):
                raise NotImplementedError(f"{name} is not supported yet (leave it at its "
                                          f"default, {neutral!r})")

    @property
    def has_box(self) -> bool:
        """Whether the coefficients are boxed (``max_abs_coef`` finite)."""
        return self.max_abs_coef < math.inf

    def with_k(self, k: int) -> ProblemSpec:
        """The same problem with the sparsity level ``k``."""
        return replace(self, k=k)


def _is_empty(value) -> bool:
    try:
        return len(value) == 0
    except TypeError:
        return False


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
