r"""The loss registry: every GLM loss of the package, written once.

Each loss states its name, its value and derivatives, its per-sample convex conjugate and that
conjugate's domain, the curvature bound that gives FISTA its step, and the rule its target
follows (real responses, two labels, counts). Everything on the solver side reads it: the
relaxation (through the integer ids of the numba kernels in
:mod:`sparsecert.solvers.loss_kernels`), the heuristics, the API, the estimators and the command
line. This module imports numpy only, so the names are cheap to read (argument parsers, the
certificate writer). The standalone verifier keeps its own independent copy of the maths, and a
test checks that the two agree.

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
=============  =======================  =====================================  ===============

The gradient of ``b -> sum_i f(x_i^T b)`` is Lipschitz with constant ``c ||X||_2^2``; the Poisson
loss has no global constant (solvers use backtracking).

Adding a loss: a subclass of :class:`Loss` here (its maths and target rule), a branch in each
kernel of :mod:`sparsecert.solvers.loss_kernels` under a new integer id, and the same maths in
the verifier (``sparsecert/certificate/verify.py``); ``tests/glm/solvers/test_losses.py`` then
checks the three against each other and against closed forms.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

__all__ = [
    "SQUARED", "LOGISTIC", "SQUARED_HINGE", "POISSON",
    "Loss", "REGISTRY", "LOSS_NAMES", "LOSS_IDS", "CLASSIFICATION_LOSSES", "LOSS_DEFINITIONS",
    "get_loss", "check_loss", "binary_codes", "loss_hessian_diag",
]

#: integer ids of the numba kernels (one compiled solver serves every loss)
SQUARED, LOGISTIC, SQUARED_HINGE, POISSON = 0, 1, 2, 3


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
    """

    name: ClassVar[str]
    loss_id: ClassVar[int]
    curvature: ClassVar[float | None]
    target: ClassVar[str]
    definition: ClassVar[str]

    # -- the maths (per sample; labels already coded) -------------------------------------------
    def derivatives(self, u: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """``(sum_i f(u_i; y_i), f'(u; y), f''(u; y))``, the last two per sample.

        The squared hinge is not twice differentiable at the hinge: its generalised second
        derivative ``2 [1 - y u > 0]`` is used (Newton on it is the standard semismooth method).
        """
        raise NotImplementedError  # pragma: no cover - interface

    def _value(self, u: np.ndarray, y: np.ndarray) -> float:
        raise NotImplementedError  # pragma: no cover - interface

    def _hessian(self, u: np.ndarray, y: np.ndarray) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover - interface

    def conjugate(self, z, y) -> np.ndarray:
        """Per-sample conjugates ``f*(z_i; y_i)`` (``+inf`` outside the domain)."""
        z, y = _as_pair(z, y)
        return np.where(self.in_dual_domain(z, y), self._conjugate_inside(z, y), np.inf)

    def _conjugate_inside(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover - interface

    def in_dual_domain(self, z, y) -> np.ndarray:
        """Boolean mask: is ``z_i`` in the domain of ``f*(.; y_i)``?"""
        raise NotImplementedError  # pragma: no cover - interface

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

    # -- derived quantities ---------------------------------------------------------------------
    def value(self, u, y) -> float:
        """``sum_i f(u_i; y_i)``."""
        return self._value(*_as_pair(u, y))

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
        return f"<loss {self.name!r}>"


class SquaredLoss(Loss):
    name, loss_id, curvature, target = "squared", SQUARED, 2.0, "real"
    definition = "f(u, y) = (y - u)^2"

    def _value(self, u, y):
        r = u - y
        return float(r @ r)

    def _hessian(self, u, y):
        return np.full_like(u, 2.0)

    def derivatives(self, u, y):
        r = u - y
        return float(r @ r), 2.0 * r, self._hessian(u, y)

    def _conjugate_inside(self, z, y):
        return 0.25 * z * z + y * z

    def in_dual_domain(self, z, y):
        return np.ones(np.shape(z), dtype=bool)


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

    def _value(self, u, y):
        return float(np.sum(np.logaddexp(0.0, -y * u)))

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

    def in_dual_domain(self, z, y):
        t = -np.asarray(y) * np.asarray(z)
        return (t >= 0.0) & (t <= 1.0)


class SquaredHingeLoss(_BinaryLoss):
    name, loss_id, curvature = "squared_hinge", SQUARED_HINGE, 2.0
    definition = "f(u, y) = max(0, 1 - y u)^2, y in {-1, +1}"

    def _value(self, u, y):
        r = np.maximum(0.0, 1.0 - y * u)
        return float(r @ r)

    def _hessian(self, u, y):
        return 2.0 * (1.0 - y * u > 0.0)

    def derivatives(self, u, y):
        r = np.maximum(0.0, 1.0 - y * u)
        return float(r @ r), -2.0 * y * r, 2.0 * (r > 0)

    def _conjugate_inside(self, z, y):
        return y * z + 0.25 * z * z

    def in_dual_domain(self, z, y):
        return np.asarray(y) * np.asarray(z) <= 0.0


class PoissonLoss(Loss):
    name, loss_id, curvature, target = "poisson", POISSON, None, "counts"
    definition = "f(u, y) = exp(u) - y u, y >= 0"

    def _value(self, u, y):
        return float(np.sum(np.exp(u) - y * u))

    def _hessian(self, u, y):
        # f'' = exp(u), capped where exp overflows (the value is +inf there anyway)
        return np.exp(np.minimum(u, 700.0))

    def derivatives(self, u, y):
        e = np.exp(u)
        return float(np.sum(e - y * u)), e - y, self._hessian(u, y)

    def _conjugate_inside(self, z, y):
        w = np.maximum(z + y, 0.0)
        return _xlogx(w) - w

    def in_dual_domain(self, z, y):
        return np.asarray(z) + np.asarray(y) >= 0.0

    def encode_target(self, y):
        y = np.array(y, dtype=np.float64, copy=True)
        if np.any(y < 0):
            raise ValueError(f"the poisson loss needs non-negative counts; y has "
                             f"{int(np.sum(y < 0))} negative value(s) (min {y.min():g})")
        return y, None


def _as_pair(a, y) -> tuple[np.ndarray, np.ndarray]:
    a = np.ascontiguousarray(a, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    if a.ndim != 1 or a.shape != y.shape:
        raise ValueError(f"expected two 1-D arrays of equal length, got shapes {a.shape} and "
                         f"{y.shape}")
    return a, y


#: Every loss, by name (the one list of loss names of the solver side).
REGISTRY: dict[str, Loss] = {c.name: c() for c in (SquaredLoss, LogisticLoss, SquaredHingeLoss,
                                                    PoissonLoss)}
LOSS_NAMES: tuple[str, ...] = tuple(REGISTRY)
LOSS_IDS: dict[str, int] = {name: loss.loss_id for name, loss in REGISTRY.items()}
CLASSIFICATION_LOSSES: tuple[str, ...] = tuple(n for n, ls in REGISTRY.items()
                                               if ls.target == "binary")
LOSS_DEFINITIONS: dict[str, str] = {name: loss.definition for name, loss in REGISTRY.items()}
_BY_ID = {loss.loss_id: loss for loss in REGISTRY.values()}


def check_loss(loss) -> str:
    """Check a loss name (TypeError if not a string, ValueError if unknown)."""
    if not isinstance(loss, str):
        raise TypeError(f"loss must be a string, one of {LOSS_NAMES}, got {type(loss).__name__}")
    if loss not in REGISTRY:
        raise ValueError(f"unknown loss {loss!r}; expected one of {LOSS_NAMES}")
    return loss


def get_loss(name: str) -> Loss:
    """The :class:`Loss` called ``name``."""
    return REGISTRY[check_loss(name)]


def loss_hessian_diag(loss_id: int, u: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per-sample second derivatives ``f''(u_i; y_i)`` of the loss with kernel id ``loss_id``
    (``u``, ``y``: float64 arrays of one shape; no copy, no check: a hot path)."""
    return _BY_ID[loss_id]._hessian(u, y)
