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
helpers and the parameter constraint table, :mod:`sparsecert._constraints`, numpy only), so the
names are cheap to read (argument parsers, the certificate writer); the loss names and the
targets (two labels, counts) are checked through that table.
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

Adding a loss: a subclass of :class:`Loss` (the interface, :mod:`sparsecert.solvers.loss_base`)
here (its maths, capabilities, target rule and rigorous enclosures, built from
:mod:`sparsecert.solvers.loss_enclosures`) in :data:`REGISTRY`, a branch in each kernel of
:mod:`sparsecert.solvers.loss_kernels` under a new integer id, and the same maths in the verifier
(``sparsecert/certificate/verify.py``); ``tests/glm/solvers/test_losses.py`` then checks the
three against each other and against closed forms.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from sparsecert._constraints import CONSTRAINTS, check
from sparsecert.proof.rounding import U, elem_err, sum_hi
from sparsecert.proof.rounding import dn as _dn
from sparsecert.proof.rounding import up as _up
from sparsecert.solvers.loss_base import Loss, LossParameter, LossSpec
from sparsecert.solvers.loss_enclosures import entropy_hi, inward, xlogx_minus_x_hi

__all__ = [
    "SQUARED", "LOGISTIC", "SQUARED_HINGE", "POISSON", "HUBER", "DEFAULT_LOSS",
    "Loss", "LossSpec", "LossParameter", "REGISTRY", "LOSS_NAMES", "LOSS_IDS",
    "LOSS_PARAMETERS", "CLASSIFICATION_LOSSES", "LOSS_DEFINITIONS",
    "get_loss", "check_loss", "check_loss_params", "check_loss_param_values", "binary_codes",
]

#: integer ids of the numba kernels (one compiled solver serves every loss)
SQUARED, LOGISTIC, SQUARED_HINGE, POISSON, HUBER = 0, 1, 2, 3, 4


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
    return check("y", y, CONSTRAINTS["labels"])


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

    def loss_terms_upper(self, r, y):
        return r.mid * r.mid, _up(r.mag * r.mag), False


class _BinaryLoss(Loss):
    target = "binary"

    def encode_target(self, y):
        codes, classes = check(f"the {self.name} loss: y", y, CONSTRAINTS["labels"])
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
        hi = np.maximum(entropy_hi(ends[0]), entropy_hi(ends[1]))
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

    def loss_terms_upper(self, u, y):
        m = 1.0 - y * u.mid
        mid = np.maximum(m, 0.0) ** 2
        mh = np.maximum(_up(_up(m + u.rad) + _up(U * np.abs(m))), 0.0)
        return mid, _up(mh * mh), False


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
        return check(f"the {self.name} loss", y, CONSTRAINTS["counts"]), None

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
        hi = np.maximum(xlogx_minus_x_hi(np.maximum(_dn(w), 0.0)), xlogx_minus_x_hi(_up(w)))
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
        hi = np.maximum(xlogx_minus_x_hi(lo_end), xlogx_minus_x_hi(hi_end))
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
            hi = 2.0 * np.maximum(inward(w, np.full(np.shape(y), self.delta), up=False), 0.0)
        hi = np.where(w == 0, 0.0, hi)
        return -hi, hi

    def initial_intercept(self, y, weights=None, offset=None):
        return float(np.median(y if offset is None else y - offset))

    def loss_terms_upper(self, r, y):
        d = self.delta
        t = r.mag  # h is nondecreasing in |r|
        quad = _up(t * t)
        lin = _up(_up(2.0 * d * t) - max(float(_dn(d * d)), 0.0))
        return self._h(r.mid), np.where(t <= d, quad, lin), False


_CLASSES: dict[str, type[Loss]] = {c.name: c for c in (SquaredLoss, LogisticLoss,
                                                        SquaredHingeLoss, PoissonLoss,
                                                        HuberLoss)}
#: every loss parameter of the registry, by name
LOSS_PARAMETERS: dict[str, LossParameter] = {p.name: p for c in _CLASSES.values()
                                             for p in c.parameters}
_OWNER = {p.name: c.name for c in _CLASSES.values() for p in c.parameters}


def check_loss(loss) -> str:
    """Check a loss name (TypeError if not a string, ValueError if unknown)."""
    return check("loss", loss, _LOSS_NAME)


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


#: The loss of the package's entry points when none is named (least squares).
DEFAULT_LOSS: str = SquaredLoss.name

#: Every loss with its default parameters, by name (the one list of loss names of the solver
#: side).
REGISTRY: dict[str, Loss] = {name: c() for name, c in _CLASSES.items()}
LOSS_NAMES: tuple[str, ...] = tuple(REGISTRY)
LOSS_IDS: dict[str, int] = {name: loss.loss_id for name, loss in REGISTRY.items()}
CLASSIFICATION_LOSSES: tuple[str, ...] = tuple(n for n, ls in REGISTRY.items()
                                               if ls.needs_binary_labels)
LOSS_DEFINITIONS: dict[str, str] = {name: loss.definition for name, loss in REGISTRY.items()}
#: the table's loss-name entry with the registry's names as its choices
_LOSS_NAME = replace(CONSTRAINTS["loss"], choices=lambda: LOSS_NAMES)


def get_loss(name: str, params: Mapping[str, Any] | None = None) -> Loss:
    """The :class:`Loss` called ``name``, with its parameters ``params`` (defaults if None)."""
    if not params:
        return REGISTRY[check_loss(name)]
    return _CLASSES[name](**check_loss_params(name, params))
