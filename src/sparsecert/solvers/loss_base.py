"""What a GLM loss states: the :class:`Loss` interface, its kernels' view (:class:`LossSpec`)
and its numeric parameters (:class:`LossParameter`).

The losses themselves, and the registry of them, are in :mod:`sparsecert.solvers.losses`;
numpy (and the producer's rounding helpers, numpy only) only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import numpy as np

from sparsecert.proof.rounding import Ball, pos_sum_hi, sum_hi
from sparsecert.proof.rounding import up as _up
from sparsecert.solvers.loss_enclosures import (
    inward,
    quadratic_conjugate_upper,
    quadratic_conjugate_upper_weighted,
)

__all__ = ["Loss", "LossSpec", "LossParameter"]


#: the kernels' "none" of the per-sample arrays (no weights, no offsets)
_NONE = np.zeros(0)
_NONE.setflags(write=False)


class LossSpec(NamedTuple):
    """The loss as the compiled kernels see it: its integer id, its one numeric parameter
    (0.0 for a loss without one), and the problem's per-sample weights ``w`` and offsets ``o``
    (empty arrays when there are none: the loss is then ``sum_i f(u_i; y_i)`` exactly as
    without them; see :mod:`sparsecert.solvers.loss_kernels`)."""

    id: int
    param: float
    w: np.ndarray = _NONE
    o: np.ndarray = _NONE

    def with_samples(self, weights: np.ndarray | None = None,
                     offsets: np.ndarray | None = None) -> LossSpec:
        """The same loss with per-sample weights and offsets (float64, C-contiguous)."""
        return self._replace(w=_as_samples(weights), o=_as_samples(offsets))


def _as_samples(v: np.ndarray | None) -> np.ndarray:
    return _NONE if v is None else np.ascontiguousarray(v, dtype=np.float64)


@dataclass(frozen=True)
class LossParameter:
    """A numeric parameter of a loss: part of the certified problem (written into the
    certificate's ``problem`` under ``name``, taken from the user by the verifier).

    ``name`` is unique over the registry (the loss's name is its prefix), ``default`` is used
    when the user gives none, ``doc`` is one line for help texts.
    """

    name: str
    default: float
    doc: str

    def check(self, value: Any) -> float:
        """The value as a float: a finite number > 0 that float64 holds exactly."""
        if isinstance(value, np.ndarray) and value.ndim == 0:
            value = value[()]
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer,
                                                             np.floating)):
            raise TypeError(f"{self.name} must be a number, got {type(value).__name__}")
        f = float(value)
        if not (math.isfinite(f) and f > 0.0):
            raise ValueError(f"{self.name} must be a finite number > 0, got {value!r}")
        if isinstance(value, (int, np.integer)) and int(f) != int(value):
            raise ValueError(f"{self.name} = {value} is not exactly a float64")
        return f


class Loss:
    """A GLM loss ``sum_i f(u_i; y_i)``; subclasses hold the maths of one loss each.

    Instances are immutable; :func:`get_loss` gives the registry's loss with its parameters.

    Attributes
    ----------
    name : str
        The name users pass (``loss="..."``).
    loss_id : int
        The integer id of the numba kernels.
    curvature : float or None
        Upper bound on ``f''``; ``None`` when there is none (Poisson).
    target : str
        ``"real"`` (any finite response), ``"binary"`` (two labels, coded by
        :func:`~sparsecert.solvers.losses.binary_codes`) or ``"counts"`` (non-negative responses).
    definition : str
        ``f(u, y)`` in words, as written into certificates.
    parameters : tuple of LossParameter
        The loss's numeric parameters (part of the certified problem).
    has_closed_form_refit : bool
        ``f`` is the squared residual: the problem on a support is a ridge regression solved in
        closed form, and an intercept is exact by centring ``X`` and ``y`` (no intercept
        variable, no zero-sum dual).
    takes_shift : bool
        ``sum_i f(x_i^T b) - mu ||b||^2`` stays convex for ``mu <= lambda_min(X^T X)``: the
        eigenvalue-shifted relaxation and its *shifted* witnesses apply.
    residual_form : bool
        ``f`` depends on ``y - u`` only: the incumbent's objective is bounded from the residual,
        summed error-free.
    predictor : str
        What the linear predictor ``x^T b + c`` is for this loss, as a summary writes it
        (``{positive}``: the label coded +1).
    neg_log_likelihood : bool
        The loss is a negative log-likelihood (its fit is reported as a deviance).
    quadratic_conjugate : bool
        The conjugate is ``z^2/4 + y z`` on its domain (an offset ``o`` then joins the linear
        coefficient, ``y - o``).
    takes_offset : bool
        The loss accepts a fixed per-sample offset in its linear predictor, ``f(x_i^T b + c +
        o_i; y_i)`` (every loss here: ``f(. + o)`` is convex with the conjugate ``f*(z) - z
        o``).
    dual_zero_sum : str
        How a dual point is made zero-sum (an unpenalised intercept) inside the conjugate's
        domain: ``"signs"`` (the domain of every ``f*(.; y_i)`` is an interval containing 0:
        the larger of the positive and the negative parts is scaled down) or ``"shifted"``
        (``zeta = e - y`` with ``e >= 0``: ``e`` is scaled to ``sum(e) = sum(y)``).
    """

    name: ClassVar[str]
    loss_id: ClassVar[int]
    curvature: ClassVar[float | None]
    target: ClassVar[str]
    definition: ClassVar[str]
    parameters: ClassVar[tuple[LossParameter, ...]] = ()
    has_closed_form_refit: ClassVar[bool] = False
    takes_shift: ClassVar[bool] = False
    residual_form: ClassVar[bool] = False
    takes_offset: ClassVar[bool] = True
    quadratic_conjugate: ClassVar[bool] = False
    dual_zero_sum: ClassVar[str] = "signs"
    predictor: ClassVar[str] = "y"
    neg_log_likelihood: ClassVar[bool] = False

    def __init__(self, **params: Any) -> None:
        # the values are checked by the registry (get_loss: check_loss_params); the defaults
        # fill in the parameters not given
        own = {p.name: p for p in self.parameters}
        assert set(params) <= set(own), f"not parameters of {self.name}: {sorted(params)}"
        self.params: dict[str, float] = {name: float(params.get(name, p.default))
                                         for name, p in own.items()}

    @property
    def needs_binary_labels(self) -> bool:
        """Two labels, coded -1/+1 by :func:`~sparsecert.solvers.losses.binary_codes`."""
        return self.target == "binary"

    @property
    def smooth(self) -> bool:
        """The gradient of the loss is globally Lipschitz (a fixed FISTA step exists)."""
        return self.curvature is not None

    @property
    def spec(self) -> LossSpec:
        """The kernels' view of the loss (id and parameter)."""
        values = [self.params[p.name] for p in self.parameters]
        return LossSpec(int(self.loss_id), float(values[0]) if values else 0.0)

    # -- the maths (per sample; labels already coded) -------------------------------------------
    def derivatives(self, u: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """``(sum_i f(u_i; y_i), f'(u; y), f''(u; y))``, the last two per sample.

        Where ``f`` is not twice differentiable (the hinge, the Huber threshold) its generalised
        second derivative is used (Newton on it is the standard semismooth method).
        """
        raise NotImplementedError  # pragma: no cover - interface

    def _value(self, u: np.ndarray, y: np.ndarray) -> float:
        raise NotImplementedError  # pragma: no cover - interface

    def _hessian(self, u: np.ndarray, y: np.ndarray) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover - interface

    def _conjugate_inside(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover - interface

    def dual_domain(self, y) -> tuple[np.ndarray, np.ndarray]:
        """``dom f*(.; y_i)`` per sample as ``[lower, upper]`` (the solver side's one copy)."""
        raise NotImplementedError  # pragma: no cover - interface

    def in_dual_domain(self, z, y) -> np.ndarray:
        """Boolean mask: is ``z_i`` in the domain of ``f*(.; y_i)``?"""
        lo, hi = self.dual_domain(y)
        z = np.asarray(z, dtype=np.float64)
        return (z >= lo) & (z <= hi)

    def conjugate(self, z, y) -> np.ndarray:
        """Per-sample conjugates ``f*(z_i; y_i)`` (``+inf`` outside the domain)."""
        z, y = _as_pair(z, y)
        return np.where(self.in_dual_domain(z, y), self._conjugate_inside(z, y), np.inf)

    def encode_target(self, y: np.ndarray) -> tuple[np.ndarray, list[float] | None]:
        """The target as the loss uses it, and the two labels of a classification loss.

        Parameters
        ----------
        y : numpy.ndarray of float64
            Finite responses.

        Returns
        -------
        y_used : numpy.ndarray of float64
            A new array (labels coded -1/+1 for the classification losses).
        labels : list of two floats or None
            ``[label coded -1, label coded +1]`` for a classification loss, else None.
        """
        return np.array(y, dtype=np.float64, copy=True), None

    def initial_intercept(self, y: np.ndarray, weights: np.ndarray | None = None,
                          offset: np.ndarray | None = None) -> float:
        """A good first value of an intercept carried as a variable (about the intercept-only
        optimum, with the per-sample weights and offsets if given)."""
        return 0.0

    # -- rigorous upper enclosures (the proof producer's; labels already coded) -----------------
    def conjugate_sum_upper(self, z: np.ndarray, y: Ball) -> tuple[float, float]:
        """``(computed, upper bound)`` of ``sum_i f*(z_i; y_i)`` at exact floats ``z`` inside
        the domain, with ``y`` a ball around the targets (a centred ``y`` carries a radius).
        A :attr:`quadratic_conjugate` loss has it from its capability."""
        if self.quadratic_conjugate:
            return quadratic_conjugate_upper(z, y)
        raise NotImplementedError  # pragma: no cover - interface

    def loss_terms_upper(self, u: Ball, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
        """``(computed terms, upper bounds of the terms, signed)`` of ``f(u_i; y_i)`` for ``u``
        in the ball (for a :attr:`residual_form` loss, ``u`` is the ball of the residual
        ``y - u``); ``signed``: the terms may be negative."""
        raise NotImplementedError  # pragma: no cover - interface

    def loss_sum_upper(self, u: Ball, y: np.ndarray,
                       weights: np.ndarray | None = None) -> tuple[float, float]:
        """``(computed, upper bound)`` of ``sum_i w_i f(u_i; y_i)`` for ``u`` in the ball (see
        :meth:`loss_terms_upper`; ``weights`` None: all 1, a zero weight's term is 0)."""
        mid, hi, signed = self.loss_terms_upper(u, y)
        if weights is not None:
            pos = weights > 0
            mid = np.where(pos, weights * mid, 0.0)
            hi = np.where(pos, _up(weights * hi), 0.0)
        return float(mid.sum()), float(sum_hi(hi) if signed else pos_sum_hi(hi))

    def weighted_dual_domain(self, y: np.ndarray, w: np.ndarray) -> tuple[np.ndarray,
                                                                       np.ndarray]:
        """An interval inside the domain of ``z -> w_i f*(z / w_i; y_i)`` per sample (``{0}``
        for ``w_i = 0``), with ends the verifier accepts: ``w_i`` times the domain's ends,
        rounded inward where the product is not exact."""
        lo, hi = self.dual_domain(y)
        with np.errstate(all="ignore"):
            lo_w = np.where(np.isfinite(lo), inward(w, lo, up=True), -np.inf)
            hi_w = np.where(np.isfinite(hi), inward(w, hi, up=False), np.inf)
        zero = w == 0
        return np.where(zero, 0.0, lo_w), np.where(zero, 0.0, hi_w)

    def weighted_conjugate_sum_upper(self, z: np.ndarray, y: Ball, w: np.ndarray
                                     ) -> tuple[float, float]:
        """``(computed, upper bound)`` of ``sum_i w_i f*(z_i / w_i; y_i)`` at exact floats ``z``
        inside the weighted domain (``z_i = 0`` where ``w_i = 0``, a term of 0). A
        :attr:`quadratic_conjugate` loss has it from its capability."""
        if self.quadratic_conjugate:
            return quadratic_conjugate_upper_weighted(z, y, w)
        raise NotImplementedError  # pragma: no cover - interface

    # -- derived quantities ---------------------------------------------------------------------
    def value(self, u, y) -> float:
        """``sum_i f(u_i; y_i)``."""
        return self._value(*_as_pair(u, y))

    def terms(self, u, y) -> np.ndarray:
        """The per-sample losses ``f(u_i; y_i)``."""
        return self._terms(*_as_pair(u, y))

    def _terms(self, u: np.ndarray, y: np.ndarray) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover - interface

    def gradient(self, u, y) -> np.ndarray:
        """Per-sample derivatives ``f'(u_i; y_i)`` (the gradient of the sum w.r.t. ``u``)."""
        return self.derivatives(*_as_pair(u, y))[1]

    def hessian(self, u, y) -> np.ndarray:
        """Per-sample (generalised) second derivatives ``f''(u_i; y_i)``."""
        return self._hessian(*_as_pair(u, y))

    def conjugate_sum(self, z, y) -> float:
        """``sum_i f*(z_i; y_i)`` (``+inf`` if any ``z_i`` is outside the domain)."""
        return float(np.sum(self.conjugate(z, y)))

    def lipschitz(self, X) -> float | None:
        """Lipschitz constant ``c ||X||_2^2`` of ``b -> grad sum_i f(x_i^T b)`` (None: Poisson)."""
        if self.curvature is None:
            return None
        return self.curvature * float(np.linalg.norm(np.asarray(X, dtype=float), 2) ** 2)

    def __repr__(self) -> str:
        extra = "".join(f", {k}={v!r}" for k, v in self.params.items())
        return f"<loss {self.name!r}{extra}>"


def _as_pair(a, y) -> tuple[np.ndarray, np.ndarray]:
    a = np.ascontiguousarray(a, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    if a.ndim != 1 or a.shape != y.shape:
        raise ValueError(f"expected two 1-D arrays of equal length, got shapes {a.shape} and "
                         f"{y.shape}")
    return a, y
