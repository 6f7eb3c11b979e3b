r"""The loss registry: every GLM loss of the package, written once.

Each loss is a subclass of :class:`Loss` that states its name, its value and derivatives, its
per-sample convex conjugate and that conjugate's domain, the curvature bound that gives FISTA its
step, the rule its target follows (real responses, two labels, counts), its parameters, the
rigorous upper enclosures the proof producer claims from, and its *capabilities*: what the rest
of the package may assume about it (:attr:`Loss.has_closed_form_refit`,
:attr:`Loss.takes_shift`, :attr:`Loss.residual_form`, :attr:`Loss.dual_zero_sum`, ...). The
solver, the heuristics, the producer and the front read these attributes, never a loss's name.
The compiled form of the maths is in :mod:`sparsecert.solvers.loss_kernels` (dispatched on the
integer id of :attr:`Loss.spec`). This module imports numpy (and the producer's rounding
helpers, numpy only), so the names are cheap to read (argument parsers, the certificate writer).
The standalone verifier keeps its own independent copy of the maths, and a test checks that the
copies agree.

Convention: the objective is a **sum** of per-sample losses ``f(u_i; y_i)`` with
``u = X b + c`` (plus ``lambda2 ||b||^2`` elsewhere). Classification labels are ``{-1, +1}``
inside the package (see :func:`binary_codes` for the rule that maps the user's labels).

=============  =======================  =====================================  ===============
loss           f(u; y)                  f*(z; y)                               curvature c
=============  =======================  =====================================  ===============
squared        (y - u)^2                z^2/4 + y z                            2
logistic       log(1 + exp(-y u))       t log t + (1-t) log(1-t), t = -y z     1/4
                                        in [0, 1]
squared_hinge  max(0, 1 - y u)^2        y z + z^2/4 if y z <= 0 else +inf      2
poisson        exp(u) - y u             (z+y) log(z+y) - (z+y), z + y >= 0     none
huber          r^2 if abs(r) <= d,      z^2/4 + y z, abs(z) <= 2 d             2
               else 2 d abs(r) - d^2    (r = y - u, d = ``huber_delta``)
=============  =======================  =====================================  ===============

The gradient of ``b -> sum_i f(x_i^T b)`` is Lipschitz with constant ``c ||X||_2^2``; the Poisson
loss has no global constant (solvers use backtracking).

Adding a loss: a subclass of :class:`Loss` here (its maths, capabilities, target rule and
rigorous enclosures) in :data:`REGISTRY`, a branch in each kernel of
:mod:`sparsecert.solvers.loss_kernels` under a new integer id, and the same maths in the verifier
(``sparsecert/certificate/verify.py``); ``tests/glm/solvers/test_losses.py`` then checks the
three against each other and against closed forms.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import numpy as np

from sparsecert.proof.rounding import ETA, Ball, U, elem_err, gamma, pos_sum_hi, sum_hi, sumsq_hi
from sparsecert.proof.rounding import dn as _dn
from sparsecert.proof.rounding import up as _up

__all__ = [
    "SQUARED", "LOGISTIC", "SQUARED_HINGE", "POISSON", "HUBER",
    "Loss", "LossSpec", "LossParameter", "REGISTRY", "LOSS_NAMES", "LOSS_IDS",
    "LOSS_PARAMETERS", "CLASSIFICATION_LOSSES", "LOSS_DEFINITIONS",
    "get_loss", "check_loss", "check_loss_params", "check_loss_param_values", "binary_codes",
]

#: integer ids of the numba kernels (one compiled solver serves every loss)
SQUARED, LOGISTIC, SQUARED_HINGE, POISSON, HUBER = 0, 1, 2, 3, 4


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


def _xlogx(t: np.ndarray) -> np.ndarray:
    """``t log t`` with ``0 log 0 = 0`` (``t >= 0``)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(t > 0.0, t * np.log(np.where(t > 0.0, t, 1.0)), 0.0)


def _sigmoid(t: np.ndarray) -> np.ndarray:
    """``1 / (1 + exp(-t))`` without overflow."""
    out = np.empty_like(t)
    pos = t >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-t[pos]))
    e = np.exp(t[~pos])
    out[~pos] = e / (1.0 + e)
    return out


def binary_codes(y) -> tuple[np.ndarray, np.ndarray]:
    """The label rule of the classification losses.

    ``y`` must hold exactly two distinct values (numbers, or any labels numpy can sort); the
    smaller in numpy's sort order (``numpy.unique``) is coded -1 and the larger +1.

    Parameters
    ----------
    y : array-like of shape (n_samples,)

    Returns
    -------
    codes : numpy.ndarray of float64 in {-1, +1}
    classes : numpy.ndarray of shape (2,)
        The two labels, sorted: ``classes[0]`` is coded -1, ``classes[1]`` is coded +1.

    Raises
    ------
    ValueError
        If ``y`` does not hold exactly two distinct values.
    """
    y = np.asarray(y)
    classes = np.unique(y)
    if classes.size != 2:
        shown = ", ".join(str(v) for v in classes[:5].tolist())
        more = " ..." if classes.size > 5 else ""
        raise ValueError(f"y must hold binary labels (exactly two distinct values), got "
                         f"{classes.size}: {shown}{more}")
    return np.where(y == classes[1], 1.0, -1.0), classes


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
        :func:`binary_codes`) or ``"counts"`` (non-negative responses).
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
        self.params: dict[str, float] = check_loss_params(self.name, params)

    @property
    def needs_binary_labels(self) -> bool:
        """Two labels, coded -1/+1 by :func:`binary_codes`."""
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
        the domain, with ``y`` a ball around the targets (a centred ``y`` carries a radius)."""
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
            lo_w = np.where(np.isfinite(lo), _inward(w, lo, up=True), -np.inf)
            hi_w = np.where(np.isfinite(hi), _inward(w, hi, up=False), np.inf)
        zero = w == 0
        return np.where(zero, 0.0, lo_w), np.where(zero, 0.0, hi_w)

    def weighted_conjugate_sum_upper(self, z: np.ndarray, y: Ball, w: np.ndarray
                                     ) -> tuple[float, float]:
        """``(computed, upper bound)`` of ``sum_i w_i f*(z_i / w_i; y_i)`` at exact floats ``z``
        inside the weighted domain (``z_i = 0`` where ``w_i = 0``, a term of 0)."""
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


def _quadratic_conjugate_upper(z: np.ndarray, y: Ball) -> tuple[float, float]:
    """``(computed, upper bound)`` of ``sum_i z_i^2 / 4 + y_i z_i`` (a sum that is not finite
    gives no bound)."""
    n = z.size
    zz = float(z @ z)
    quad_hi = float(_up(0.25 * float(sumsq_hi(zz, n))))
    lin = float(z @ y.mid)
    absdot = float(pos_sum_hi(_up(np.abs(z) * np.abs(y.mid))))
    lin_err = _up(_up(_up(gamma(n) * absdot) + n * ETA) + pos_sum_hi(_up(np.abs(z) * y.rad)))
    return 0.25 * zz + lin, float(_up(quad_hi + float(_up(lin + lin_err))))


def _inward(w: np.ndarray, e: np.ndarray, up: bool) -> np.ndarray:
    """``w e`` (``w >= 0``, ``e`` a finite end of a domain), moved one float inward when the
    product is not exact (Dekker's error term), so that ``w e`` rounded this way is inside."""
    p = w * e
    sa = 134217729.0 * w
    ah = sa - (sa - w)
    al = w - ah
    sb = 134217729.0 * e
    bh = sb - (sb - e)
    bl = e - bh
    err = al * bl - (((p - ah * bh) - al * bh) - ah * bl)
    exact = (w == 0) | (e == 0) | ((err == 0) & (np.abs(p) >= 2.0 ** -968)
                                   & (np.abs(w) < 2.0 ** 995) & (np.abs(e) < 2.0 ** 995))
    return np.where(exact, p, _up(p) if up else _dn(p))


def _quadratic_conjugate_upper_weighted(z: np.ndarray, y: Ball, w: np.ndarray
                                        ) -> tuple[float, float]:
    """``(computed, upper bound)`` of ``sum_i z_i^2 / (4 w_i) + y_i z_i`` (terms with ``w_i =
    0`` have ``z_i = 0``)."""
    n = z.size
    pos = w > 0
    ws = np.where(pos, w, 1.0)
    q_mid = np.where(pos, 0.25 * z * z / ws, 0.0)
    q_hi = np.where(pos, _up(_up(0.25 * _up(z * z)) / ws), 0.0)
    lin = float(z @ y.mid)
    absdot = float(pos_sum_hi(_up(np.abs(z) * np.abs(y.mid))))
    lin_err = _up(_up(_up(gamma(n) * absdot) + n * ETA) + pos_sum_hi(_up(np.abs(z) * y.rad)))
    return float(q_mid.sum()) + lin, float(_up(float(pos_sum_hi(q_hi))
                                              + float(_up(lin + lin_err))))


def _entropy_hi(t: np.ndarray) -> np.ndarray:
    """Upper bound of ``t log t + (1 - t) log(1 - t)`` at exact floats ``t`` in [0, 1]."""
    with np.errstate(divide="ignore", invalid="ignore"):
        lt, l1 = np.log(t), np.log1p(-t)
    w = 1.0 - t
    l1_hi = _up(l1 + elem_err(l1))
    p1 = np.where(t > 0, _up(t * _up(lt + elem_err(lt))), 0.0)
    p2 = np.where(t < 1, np.maximum(_up(np.maximum(_dn(w), 0.0) * l1_hi), _up(_up(w) * l1_hi)),
                  0.0)
    return _up(p1 + p2)


class SquaredLoss(Loss):
    name, loss_id, curvature, target = "squared", SQUARED, 2.0, "real"
    definition = "f(u, y) = (y - u)^2"
    has_closed_form_refit = takes_shift = residual_form = quadratic_conjugate = True

    def _value(self, u, y):
        r = u - y
        return float(r @ r)

    def _terms(self, u, y):
        return (u - y) ** 2

    def _hessian(self, u, y):
        return np.full_like(u, 2.0)

    def derivatives(self, u, y):
        r = u - y
        return float(r @ r), 2.0 * r, self._hessian(u, y)

    def _conjugate_inside(self, z, y):
        return 0.25 * z * z + y * z

    def dual_domain(self, y):
        n = np.shape(y)
        return np.full(n, -np.inf), np.full(n, np.inf)

    def initial_intercept(self, y, weights=None, offset=None):
        r = y if offset is None else y - offset
        return float(np.average(r, weights=weights))

    def conjugate_sum_upper(self, z, y):
        return _quadratic_conjugate_upper(z, y)

    def weighted_conjugate_sum_upper(self, z, y, w):
        return _quadratic_conjugate_upper_weighted(z, y, w)

    def loss_terms_upper(self, r, y):
        return r.mid * r.mid, _up(r.mag * r.mag), False


class _BinaryLoss(Loss):
    target = "binary"

    def encode_target(self, y):
        try:
            codes, classes = binary_codes(y)
        except ValueError as exc:
            raise ValueError(f"the {self.name} loss: {exc}") from None
        return codes, [float(classes[0]), float(classes[1])]


class LogisticLoss(_BinaryLoss):
    name, loss_id, curvature = "logistic", LOGISTIC, 0.25
    definition = "f(u, y) = log(1 + exp(-y u)), y in {-1, +1}"
    predictor, neg_log_likelihood = "log-odds(y = {positive})", True

    def _value(self, u, y):
        return float(np.sum(np.logaddexp(0.0, -y * u)))

    def _terms(self, u, y):
        return np.logaddexp(0.0, -y * u)

    def initial_intercept(self, y, weights=None, offset=None):
        # the log-odds: the intercept-only optimum (less the mean offset, roughly)
        w = np.ones_like(y) if weights is None else weights
        n_pos = float(np.sum(w[y > 0]))
        n_neg = float(np.sum(w[y <= 0]))
        c = float(np.log(n_pos / n_neg)) if n_pos > 0 and n_neg > 0 else 0.0
        return c if offset is None else c - float(np.average(offset, weights=weights))

    def _hessian(self, u, y):
        s = _sigmoid(-y * u)
        return s * (1.0 - s)

    def derivatives(self, u, y):
        m = -y * u
        s = _sigmoid(m)
        return float(np.sum(np.logaddexp(0.0, m))), -y * s, s * (1.0 - s)

    def _conjugate_inside(self, z, y):
        t = np.clip(-y * z, 0.0, 1.0)
        return _xlogx(t) + _xlogx(1.0 - t)

    def dual_domain(self, y):  # t = -y z in [0, 1]
        return np.where(y > 0, -1.0, 0.0), np.where(y > 0, 0.0, 1.0)

    def conjugate_sum_upper(self, z, y):
        t = -y.mid * z
        with np.errstate(divide="ignore", invalid="ignore"):
            lt, l1 = np.log(t), np.log1p(-t)
            mid = np.where(t > 0, t * lt, 0.0) + np.where(t < 1, (1.0 - t) * l1, 0.0)
        w = 1.0 - t
        l1_hi = _up(l1 + elem_err(l1))
        p1 = np.where(t > 0, _up(t * _up(lt + elem_err(lt))), 0.0)
        p2 = np.where(t < 1, np.maximum(_up(np.maximum(_dn(w), 0.0) * l1_hi),
                                        _up(_up(w) * l1_hi)), 0.0)
        return float(mid.sum()), sum_hi(_up(p1 + p2))

    def weighted_conjugate_sum_upper(self, z, y, w):
        # w phi(t), t = -y z / w in [0, 1] (phi convex: its maximum at an end of t's interval)
        pos = w > 0
        ws = np.where(pos, w, 1.0)
        t = np.clip((-y.mid * z) / ws, 0.0, 1.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            mid = np.where(t > 0, t * np.log(t), 0.0) + np.where(t < 1, (1 - t) * np.log1p(-t),
                                                                  0.0)
        ends = (np.clip(_dn(t), 0.0, 1.0), np.clip(_up(t), 0.0, 1.0))
        hi = np.maximum(_entropy_hi(ends[0]), _entropy_hi(ends[1]))
        return (float(np.where(pos, w * mid, 0.0).sum()),
                sum_hi(np.where(pos, _up(w * hi), 0.0)))

    def loss_terms_upper(self, u, y):
        mid = np.logaddexp(0.0, -y * u.mid)
        z = _up(-y * u.mid + u.rad)  # softplus is nondecreasing
        e = np.exp(-np.abs(z))
        lg = np.log1p(_up(e + elem_err(e)))
        return mid, _up(np.maximum(z, 0.0) + _up(lg + elem_err(lg))), False


class SquaredHingeLoss(_BinaryLoss):
    name, loss_id, curvature = "squared_hinge", SQUARED_HINGE, 2.0
    definition = "f(u, y) = max(0, 1 - y u)^2, y in {-1, +1}"
    predictor = "score (> 0: y = {positive})"
    quadratic_conjugate = True

    def _value(self, u, y):
        r = np.maximum(0.0, 1.0 - y * u)
        return float(r @ r)

    def _terms(self, u, y):
        return np.maximum(0.0, 1.0 - y * u) ** 2

    def _hessian(self, u, y):
        return 2.0 * (1.0 - y * u > 0.0)

    def derivatives(self, u, y):
        r = np.maximum(0.0, 1.0 - y * u)
        return float(r @ r), -2.0 * y * r, 2.0 * (r > 0)

    def _conjugate_inside(self, z, y):
        return y * z + 0.25 * z * z

    def dual_domain(self, y):  # y z <= 0
        return np.where(y > 0, -np.inf, 0.0), np.where(y > 0, 0.0, np.inf)

    def conjugate_sum_upper(self, z, y):
        return _quadratic_conjugate_upper(z, y)

    def weighted_conjugate_sum_upper(self, z, y, w):
        return _quadratic_conjugate_upper_weighted(z, y, w)

    def loss_terms_upper(self, u, y):
        m = 1.0 - y * u.mid
        mid = np.maximum(m, 0.0) ** 2
        mh = np.maximum(_up(_up(m + u.rad) + _up(U * np.abs(m))), 0.0)
        return mid, _up(mh * mh), False


def _xlogx_minus_x_hi(x: np.ndarray) -> np.ndarray:
    """Upper bound of ``x log x - x`` at exact floats ``x >= 0`` (0 at 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        lx = np.log(x)
        return np.where(x > 0, _up(_up(x * _up(lx + elem_err(lx))) - x), 0.0)


class PoissonLoss(Loss):
    name, loss_id, curvature, target = "poisson", POISSON, None, "counts"
    definition = "f(u, y) = exp(u) - y u, y >= 0"
    dual_zero_sum = "shifted"
    predictor, neg_log_likelihood = "log E[y]", True

    def _value(self, u, y):
        return float(np.sum(np.exp(u) - y * u))

    def _terms(self, u, y):
        return np.exp(u) - y * u

    def _hessian(self, u, y):
        # f'' = exp(u), capped where exp overflows (the value is +inf there anyway)
        return np.exp(np.minimum(u, 700.0))

    def derivatives(self, u, y):
        e = np.exp(u)
        return float(np.sum(e - y * u)), e - y, self._hessian(u, y)

    def _conjugate_inside(self, z, y):
        w = np.maximum(z + y, 0.0)
        return _xlogx(w) - w

    def dual_domain(self, y):  # z + y >= 0
        y = np.asarray(y, dtype=np.float64)
        return -y, np.full(y.shape, np.inf)

    def encode_target(self, y):
        y = np.array(y, dtype=np.float64, copy=True)
        if np.any(y < 0):
            raise ValueError(f"the poisson loss needs non-negative counts; y has "
                             f"{int(np.sum(y < 0))} negative value(s) (min {y.min():g})")
        return y, None

    def initial_intercept(self, y, weights=None, offset=None):
        if offset is None:
            return float(np.log(max(np.average(y, weights=weights), 1e-3)))
        # the intercept-only optimum: log(sum w y / sum w exp(o))
        e = np.average(np.exp(np.minimum(offset, 700.0)), weights=weights)
        return float(np.log(max(np.average(y, weights=weights), 1e-3)) - np.log(e))

    def conjugate_sum_upper(self, z, y):
        # w log w - w at w = z + y (convex: its maximum on an interval is at an end)
        w = z + y.mid
        with np.errstate(divide="ignore", invalid="ignore"):
            mid = np.where(w > 0, w * np.log(w) - w, 0.0)
        hi = np.maximum(_xlogx_minus_x_hi(np.maximum(_dn(w), 0.0)), _xlogx_minus_x_hi(_up(w)))
        return float(mid.sum()), sum_hi(hi)

    def weighted_conjugate_sum_upper(self, z, y, w):
        # w psi(x), x = z / w + y >= 0, psi(x) = x log x - x convex: at an end of x's interval
        pos = w > 0
        ws = np.where(pos, w, 1.0)
        q = z / ws
        x = np.maximum(q + y.mid, 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            mid = np.where(x > 0, x * np.log(x) - x, 0.0)
        lo_end = np.maximum(_dn(_dn(q) + y.mid), 0.0)
        hi_end = np.maximum(_up(_up(q) + y.mid), 0.0)
        hi = np.maximum(_xlogx_minus_x_hi(lo_end), _xlogx_minus_x_hi(hi_end))
        return (float(np.where(pos, w * mid, 0.0).sum()),
                sum_hi(np.where(pos, _up(w * hi), 0.0)))

    def loss_terms_upper(self, u, y):
        mid = np.exp(u.mid) - y * u.mid
        hi = None
        for x in (u.lo, u.hi):  # convex: the maximum is at an end
            ex = np.exp(x)
            val = _up(_up(ex + elem_err(ex)) + _up(-y * x))
            hi = val if hi is None else np.maximum(hi, val)
        return mid, hi, True


class HuberLoss(Loss):
    """Robust regression: ``f(u; y) = h(y - u)`` with ``h(r) = r^2`` for ``|r| <= d`` and
    ``2 d |r| - d^2`` beyond (``d = huber_delta``; the squared loss inside the threshold, as
    cvxpy's ``huber``). Its conjugate is the squared loss's, ``z^2/4 + y z``, on ``|z| <= 2 d``.
    """

    name, loss_id, curvature, target = "huber", HUBER, 2.0, "real"
    definition = ("f(u, y) = h(y - u), h(r) = r^2 if |r| <= huber_delta else "
                  "2 huber_delta |r| - huber_delta^2")
    parameters = (LossParameter("huber_delta", 1.0, "the Huber loss's threshold on |y - u| "
                                "(> 0): quadratic below, linear above"),)
    residual_form = quadratic_conjugate = True

    @property
    def delta(self) -> float:
        return self.params["huber_delta"]

    def _h(self, r):
        a, d = np.abs(r), self.delta
        return np.where(a <= d, r * r, 2.0 * d * a - d * d)

    def _value(self, u, y):
        return float(np.sum(self._h(y - u)))

    def _terms(self, u, y):
        return self._h(y - u)

    def _hessian(self, u, y):
        return 2.0 * (np.abs(y - u) <= self.delta)

    def derivatives(self, u, y):
        r = y - u
        g = -2.0 * np.clip(r, -self.delta, self.delta)
        return float(np.sum(self._h(r))), g, self._hessian(u, y)

    def _conjugate_inside(self, z, y):
        return 0.25 * z * z + y * z

    def dual_domain(self, y):  # |z| <= 2 delta
        n = np.shape(y)
        return np.full(n, -2.0 * self.delta), np.full(n, 2.0 * self.delta)

    def weighted_dual_domain(self, y, w):
        """``|z_i| <= 2 delta w_i``: ``delta w_i`` rounded inward, then doubled (exact in
        binary; an overflow to inf is above every float), as the verifier checks it. Not
        ``fl(2 delta) w_i``: 2 delta overflows for delta above half the largest float, and the
        domain would have no ends whatever the weights."""
        with np.errstate(all="ignore"):
            hi = 2.0 * np.maximum(_inward(w, np.full(np.shape(y), self.delta), up=False), 0.0)
        hi = np.where(w == 0, 0.0, hi)
        return -hi, hi

    def initial_intercept(self, y, weights=None, offset=None):
        return float(np.median(y if offset is None else y - offset))

    def conjugate_sum_upper(self, z, y):
        return _quadratic_conjugate_upper(z, y)

    def weighted_conjugate_sum_upper(self, z, y, w):
        return _quadratic_conjugate_upper_weighted(z, y, w)

    def loss_terms_upper(self, r, y):
        d = self.delta
        t = r.mag  # h is nondecreasing in |r|
        quad = _up(t * t)
        lin = _up(_up(2.0 * d * t) - max(float(_dn(d * d)), 0.0))
        return self._h(r.mid), np.where(t <= d, quad, lin), False


def _as_pair(a, y) -> tuple[np.ndarray, np.ndarray]:
    a = np.ascontiguousarray(a, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    if a.ndim != 1 or a.shape != y.shape:
        raise ValueError(f"expected two 1-D arrays of equal length, got shapes {a.shape} and "
                         f"{y.shape}")
    return a, y


_CLASSES: dict[str, type[Loss]] = {c.name: c for c in (SquaredLoss, LogisticLoss,
                                                        SquaredHingeLoss, PoissonLoss,
                                                        HuberLoss)}
#: every loss parameter of the registry, by name
LOSS_PARAMETERS: dict[str, LossParameter] = {p.name: p for c in _CLASSES.values()
                                             for p in c.parameters}
_OWNER = {p.name: c.name for c in _CLASSES.values() for p in c.parameters}


def check_loss(loss) -> str:
    """Check a loss name (TypeError if not a string, ValueError if unknown)."""
    if not isinstance(loss, str):
        raise TypeError(f"loss must be a string, one of {LOSS_NAMES}, got {type(loss).__name__}")
    if loss not in _CLASSES:
        raise ValueError(f"unknown loss {loss!r}; expected one of {LOSS_NAMES}")
    return loss


def check_loss_params(loss: str, params: Mapping[str, Any] | None) -> dict[str, float]:
    """The parameters of the loss ``loss``: every one, the defaults filled in, each checked.

    Raises
    ------
    TypeError
        ``params`` is not a mapping, or a value is not a number.
    ValueError
        A name is not a parameter of this loss (of another loss, or of none), or a value is not
        a finite number > 0.
    """
    cls = _CLASSES[check_loss(loss)]
    if params is None:
        params = {}
    if not isinstance(params, Mapping):
        raise TypeError(f"loss_params must be a mapping of parameter names to numbers, got "
                        f"{type(params).__name__}")
    own = {p.name: p for p in cls.parameters}
    for key in params:
        if key not in own:
            where = (f"a parameter of the {_OWNER[key]} loss" if key in _OWNER else
                     f"not a loss parameter (known: {sorted(LOSS_PARAMETERS) or 'none'})")
            raise ValueError(f"loss_params: {key!r} is {where}, not of loss={loss!r}")
    return {name: p.check(params[name]) if name in params else float(p.default)
            for name, p in own.items()}


def check_loss_param_values(params: Mapping[str, Any] | None) -> dict[str, float] | None:
    """Loss parameters checked by name alone (which loss they belong to is checked with the
    loss, :func:`check_loss_params`): None, or a mapping of the registry's parameter names to
    valid values. Returns a new dict (or None)."""
    if params is None:
        return None
    if not isinstance(params, Mapping):
        raise TypeError(f"loss_params must be a mapping of parameter names to numbers, got "
                        f"{type(params).__name__}")
    out = {}
    for key, value in params.items():
        if key not in LOSS_PARAMETERS:
            raise ValueError(f"loss_params: {key!r} is not a loss parameter (known: "
                             f"{sorted(LOSS_PARAMETERS) or 'none'})")
        out[key] = LOSS_PARAMETERS[key].check(value)
    return out


#: Every loss with its default parameters, by name (the one list of loss names of the solver
#: side).
REGISTRY: dict[str, Loss] = {name: c() for name, c in _CLASSES.items()}
LOSS_NAMES: tuple[str, ...] = tuple(REGISTRY)
LOSS_IDS: dict[str, int] = {name: loss.loss_id for name, loss in REGISTRY.items()}
CLASSIFICATION_LOSSES: tuple[str, ...] = tuple(n for n, ls in REGISTRY.items()
                                               if ls.needs_binary_labels)
LOSS_DEFINITIONS: dict[str, str] = {name: loss.definition for name, loss in REGISTRY.items()}


def get_loss(name: str, params: Mapping[str, Any] | None = None) -> Loss:
    """The :class:`Loss` called ``name``, with its parameters ``params`` (defaults if None)."""
    if not params:
        return REGISTRY[check_loss(name)]
    return _CLASSES[check_loss(name)](**params)
