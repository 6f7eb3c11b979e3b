"""Reduced-cost fixing during the search: the variables a node's witness fixes.

A witness bounds the two regions ``z_j = 1`` and ``z_j = 0`` of every free variable j of a node
from one sort of its terms (:mod:`sparsecert.proof.regions`). If the region ``z_j = 1`` has a
bound at or above the cutoff, no better support puts j in: j is fixed to 0 (a bound fixing
``[j, 0]``); symmetrically, region ``z_j = 0`` gives ``[j, 1]``. The regions and the remainder
partition the node, so the certificate carries each fixing and the verifier recomputes the
region's bound with the node's witness (docs/certificate-format.md, "bound fixings"). Only
variables outside the top beta can be fixed to 0, and only variables in it can be fixed to 1,
so the node's own bound is unchanged by its fixings.

Rigour: the bounds are computed from the witness's *safe* parts (``k_lo`` a lower bound of K,
``h_hi`` upper bounds of the terms; the producer's evaluation,
:class:`sparsecert.proof.bounds.SafeEvaluator`), the sums rounded upward
(:mod:`sparsecert.proof.rounding`), and a fixing is made only when the *claimable* bound of its
region (the value the producer may claim, which the verifier can prove) reaches the cutoff.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import repeat

import numpy as np

from sparsecert.proof.bounds import SafeEvaluator, SampleAndBounds, bounded_terms, box_terms
from sparsecert.proof.claims import CLAIM_FACTOR, claim_lower_array
from sparsecert.proof.regions import TermBound, region_bounds

__all__ = ["apply_fixings", "FixingPlan", "WitnessTerms", "plan_fixings", "fixing_plan",
           "dual_terms",
           "root_fixing_counts", "DECIDE_FACTOR", "FIX_SLACK"]


#: a fixing is decided on ``value - DECIDE_FACTOR * (value - lower)``: with the radius r of the
#: engine's evaluation and r' of the certificate's (same error model, other rounding), the exact
#: bound is >= value - r >= cutoff + 7 r, so the certificate's claim value' - 4 r' >= exact - 5 r'
#: still reaches the cutoff while r' <= 1.4 r (the two radii agree to a few ulps in practice)
DECIDE_FACTOR = 2.0 * CLAIM_FACTOR
#: ... and against the cutoff raised by ``FIX_SLACK * max(1, |cutoff|)``, which covers the
#: difference between the engine's incumbent objective and the certificate's claimed upper
#: bound (a few rounding radii of the objective): when in doubt, a variable is not fixed
FIX_SLACK = 1e-9


@dataclass
class FixingPlan:
    """The bound fixings of one node: ``fixings`` as ``(j, v)`` pairs and the claimable bound of
    the region each one cuts off; ``covers_node`` when the fixed-in variables exceed the budget
    (every support of the node lies in a cut-off region: the node is closed)."""

    fixings: list[tuple[int, int]]
    region_bounds: list[float]
    covers_node: bool = False
    remainder_bound: float = -math.inf  # with covers_node: the region the remainder lies in

    @property
    def n_out(self) -> int:
        return sum(1 for _, v in self.fixings if v == 0)

    @property
    def n_in(self) -> int:
        return sum(1 for _, v in self.fixings if v == 1)


def plan_fixings(wb: TermBound, fixed_in: np.ndarray, fixed_out: np.ndarray, k: int,
                 cutoff: float) -> FixingPlan:
    """The variables a node's witness fixes against ``cutoff``.

    Variables are fixed to 0 when their region ``z_j = 1`` has a claimable bound >= cutoff, to 1
    when their region ``z_j = 0`` has. If more variables must be in than the budget allows, the
    first ``beta`` of them are kept and ``covers_node`` is set: the node's remainder (budget 0,
    every other free variable out) lies inside the cut-off region ``z_j = 0`` of the next one, so
    its bound with the extended fixings is at least that region's.
    """
    regions = region_bounds(wb, fixed_in, fixed_out, k)
    plan = FixingPlan([], [])
    if regions is None or not math.isfinite(cutoff):
        return plan
    b_in = claim_lower_array(regions.in_value, regions.in_lower)
    b_out = claim_lower_array(regions.out_value, regions.out_lower)
    d_in = claim_lower_array(regions.in_value, regions.in_lower, DECIDE_FACTOR)
    d_out = claim_lower_array(regions.out_value, regions.out_lower, DECIDE_FACTOR)
    fix_in = np.flatnonzero(d_out >= cutoff)  # region z_j = 0 cut off: j is in
    fix_out = np.flatnonzero(d_in >= cutoff)  # region z_j = 1 cut off: j is out
    if fix_in.size > regions.beta:
        fix_in = fix_in[:regions.beta + 1]
        plan.covers_node = True
        plan.remainder_bound = float(b_out[fix_in[regions.beta]])
    # (as Python ints and floats, in one pass each: deep nodes fix thousands of variables)
    kept = fix_in[:regions.beta]
    plan.fixings.extend(zip(regions.free[kept].tolist(), repeat(1)))
    plan.region_bounds.extend(b_out[kept].tolist())
    if plan.covers_node:
        return plan
    out = np.setdiff1d(fix_out, fix_in, assume_unique=True)
    plan.fixings.extend(zip(regions.free[out].tolist(), repeat(0)))
    plan.region_bounds.extend(b_in[out].tolist())
    return plan


@dataclass
class _PlainTerms:
    k_mid: float
    k_lo: float
    lam: float
    h_mid: np.ndarray
    h_hi: np.ndarray


def dual_terms(problem, zeta: np.ndarray) -> tuple[float, np.ndarray]:
    """K and the terms h of a dual witness in plain floating point (no eigen shift).

    ``K = -sum_i f*(zeta_i; y_i)``, ``h_j = H_M(a_j)`` with ``a = -X^T zeta / (2 lambda2)``.
    """
    if problem.mu != 0.0:
        raise ValueError("dual_terms: the problem has an eigen shift (use its shifted witness)")
    from sparsecert.solvers.perspective._linalg import xtz

    K = -problem.loss_fn.conjugate_sum(zeta, problem.y)
    a = np.abs(xtz(problem.design, zeta) if problem.sparse else problem.X.T @ zeta)
    a /= 2.0 * problem.lambda2
    return float(K), _box_terms(a, problem.M)


def root_fixing_counts(problem, k: int, result, upper_bound: float, rel_gap: float = 1e-4
                       ) -> tuple[int, int]:
    """How many variables a root relaxation's dual fixes to 0 and to 1 (research and reports:
    plain floating point, least squares without shift or intercept, or any loss's dual)."""
    k_val, h = dual_terms(problem, np.asarray(result.dual, dtype=float))
    wb = _PlainTerms(k_val, k_val, problem.lambda2, h, h)
    p = problem.n_features
    cut = upper_bound - rel_gap * max(1.0, abs(upper_bound))
    plan = plan_fixings(wb, np.zeros(p, bool), np.zeros(p, bool), k, cut)
    return plan.n_out, plan.n_in


def _box_terms(a: np.ndarray, M: float) -> np.ndarray:
    """H_M(a) in plain floating point (``M = inf``: no box)."""
    return box_terms(a, None if not np.isfinite(M) else M)


class WitnessTerms:
    """The terms of the engine's witnesses for one problem.

    ``plain(witness)`` gives ``(bound, lam, h)`` in plain floating point, for the screening
    test of :func:`fixing_plan`; ``safe(witness)`` the rigorous terms (a :class:`TermBound`)
    that fixings are decided on, from the same safe evaluation as the certificate's bounds
    (:class:`sparsecert.proof.bounds.SafeEvaluator` on the engine's data; ``None`` when the
    witness gives no bound).
    """

    def __init__(self, problem) -> None:
        self.problem = problem
        self._ev = None
        self._loss = problem.loss_fn
        spec = problem.loss_spec
        # the engine's data may carry weights and offsets (in the loss's compiled form) and
        # every coefficient's bounds
        self._samples = spec.w.shape[0] > 0 or spec.o.shape[0] > 0
        bounds = getattr(problem, "coef_bounds", None)
        self._lower = None if bounds is None else bounds.lower
        self._upper = None if bounds is None else bounds.upper
        # the squared residual (a closed-form refit): its gradient and conjugate inline
        self._squared = self._loss.has_closed_form_refit and not self._samples
        # least squares without a box: the screen's terms from the residual (below)
        self._plain_ls = (self._squared and not np.isfinite(problem.M)
                          and self._lower is None)
        self._two_y = 2.0 * problem.y

    def _terms(self, g: np.ndarray, lam: float) -> np.ndarray:
        """The terms of the gradient part ``g`` (``X^T zeta``, or ``s``): ``H_j(-g_j / 2 lam)``
        (the box's Huber terms, or the per-coefficient bounds')."""
        if self._lower is None:
            return _box_terms(np.abs(g) / (2.0 * lam), self.problem.M)
        return bounded_terms(-g / (2.0 * lam), self._lower, self._upper)

    def _gradient(self, u: np.ndarray) -> np.ndarray:
        """``f'(u)``: least squares ``2 (u - y)`` (the loss's own operations, without its
        checks), else the loss's gradient (with the weights and offsets: the compiled
        kernel's)."""
        if self._squared:
            return 2.0 * (u - self.problem.y)
        if self._samples:
            from sparsecert.solvers.loss_kernels import loss_value_grad

            g = np.empty(u.shape[0])
            loss_value_grad(self.problem.loss_spec, np.ascontiguousarray(u), self.problem.y, g)
            return g
        return self._loss.gradient(u, self.problem.y)

    def _zeta(self, witness) -> np.ndarray:
        if witness.kind == "dual":
            return np.asarray(witness.vector, dtype=float)
        prob = self.problem
        if prob.sparse:
            from sparsecert.solvers.perspective._linalg import xb

            return self._gradient(xb(prob.design, witness.vector))
        return self._gradient(prob.X @ witness.vector)

    def _conjugate_sum(self, zeta: np.ndarray) -> float:
        """``sum_i f*(zeta_i; y_i)`` (least squares: ``f*(z) = z^2 / 4 + y z``, every z in its
        domain; the loss's own operations, without its checks)."""
        y = self.problem.y
        if self._squared:
            return float(np.sum(0.25 * zeta * zeta + y * zeta))
        if self._samples:
            from sparsecert.solvers.loss_kernels import conjugate_sum

            return float(conjugate_sum(self.problem.loss_spec, np.ascontiguousarray(zeta), y))
        return self._loss.conjugate_sum(zeta, y)

    def plain(self, witness, cols: np.ndarray | None = None) -> tuple[float, float, np.ndarray]:
        """``(bound constant K, weight lam, terms h)`` of a witness, plain floating point.

        With ``cols`` (the columns not fixed out at the node) the terms of the other columns are
        not computed when that saves work (they are then ``inf``: no node region reads them).
        The products with ``X`` run in the solver's compiled matrix-vector kernels (they
        release the GIL; their sums are ordered otherwise than BLAS's, so the values may differ
        from :meth:`safe`'s evaluation in the last bits: the screen that reads them has a
        relative slack of 1e-9 for rounding).
        """
        from sparsecert.solvers.perspective._linalg import xb, xtz

        prob = self.problem
        kind, vec = witness.kind, witness.vector
        if kind == "point" and prob.mu > 0.0:  # the shifted relaxation's tangent at b~
            u = prob.X @ vec
            s = 2.0 * (prob.X.T @ (u - prob.y)) - 2.0 * prob.mu * vec
            lam = prob.lambda2 + prob.mu
            K = float(prob.y @ prob.y - u @ u + prob.mu * (vec @ vec))
            return K, lam, self._terms(s, lam)
        vec = np.ascontiguousarray(vec, dtype=np.float64)
        lam = prob.lambda2
        whole = cols is None or 2 * cols.size >= prob.n_features
        if kind == "point" and self._plain_ls and whole:
            # with the residual w = X b~ - y: zeta = 2 w, sum_i f*(zeta_i) = w^T (w + 2 y) and
            # h_j = a_j^2 / 2 with a_j = |x_j^T zeta| / (2 lam) = |x_j^T w| / lam
            w = xb(prob.design, vec) - prob.y
            v = xtz(prob.design, w)
            h = v * v
            h *= 0.5 / (lam * lam)
            return -float(w @ (w + self._two_y)), lam, h
        zeta = vec if kind == "dual" else self._gradient(xb(prob.design, vec))
        K = -self._conjugate_sum(zeta)
        # X_cols^T zeta: all of X^T zeta when most columns are active (a gather of X's columns
        # costs more than the whole product), else from the contiguous rows of X^T
        if whole or prob.sparse:  # (a sparse product costs its entries: all of them is cheap)
            return float(K), lam, self._terms(xtz(prob.design, zeta), lam)
        h = np.full(prob.n_features, np.inf)
        g = prob.XT[cols] @ zeta
        h[cols] = (_box_terms(np.abs(g) / (2.0 * lam), prob.M) if self._lower is None else
                   bounded_terms(-g / (2.0 * lam), self._lower[cols], self._upper[cols]))
        return float(K), lam, h

    def safe(self, witness, cols: np.ndarray | None = None) -> TermBound | None:
        """The rigorous terms of a witness (as the certificate evaluates it).

        With ``cols`` (the columns not fixed out at the node) a dual witness is evaluated on
        those columns only (the other terms are ``inf``, which no node region reads); a shifted
        witness is always evaluated whole.
        """
        from sparsecert.proof.witnesses import dual_witness

        prob = self.problem
        if self._ev is None:
            M = None if not np.isfinite(prob.M) else float(prob.M)
            spec = prob.loss_spec
            self._ev = SafeEvaluator(prob.X, prob.y, prob.loss_fn, prob.lambda2, M,
                                     prob.fit_intercept, prob.mu,
                                     extras=SampleAndBounds(
                                         spec.w if spec.w.shape[0] else None,
                                         spec.o if spec.o.shape[0] else None,
                                         self._lower, self._upper))
        if witness.kind == "point" and prob.mu > 0.0:
            return self._ev.witness("shifted", np.asarray(witness.vector, dtype=float))
        if cols is not None and cols.size == prob.n_features:
            cols = None
        return self._ev.witness("dual", dual_witness(self._ev, self._zeta(witness)), cols)


def fixing_plan(terms: WitnessTerms, witness, fixed_in: np.ndarray, fixed_out: np.ndarray,
                k: int, cutoff: float) -> FixingPlan | None:
    """The fixings a node's witness makes against ``cutoff`` (``None``: none can be made).

    A plain-arithmetic screen first: forcing a variable in raises the node's bound by at most
    ``2 lam h_(beta)`` and forcing one out by at most ``2 lam (h_(1) - h_(beta+1))`` (``h_(m)``
    the m-th largest free term); when neither reaches the cutoff (with a relative slack of
    1e-9 against rounding) no fixing is possible and nothing more is computed. Otherwise the
    plan is made on the safe terms (:func:`plan_fixings`) against the cutoff raised by
    :data:`FIX_SLACK` relative.
    """
    not_out = ~fixed_out
    free = not_out & ~fixed_in
    beta = k - int(np.count_nonzero(fixed_in))
    if beta <= 0 or np.count_nonzero(free) <= beta or not math.isfinite(cutoff):
        return None
    n_cols = np.count_nonzero(not_out)
    # (the columns not fixed out are listed only if the terms are computed on them alone)
    K, lam, h = terms.plain(witness, None if 2 * n_cols >= fixed_out.size else
                            not_out.nonzero()[0])
    hf = h[free]
    top = np.partition(hf, hf.size - beta - 1)[hf.size - beta - 1:]  # the beta + 1 largest
    top.sort()
    h_beta1, h_beta, h_1 = top[0], top[1], top[-1]
    bound = K - 2.0 * lam * (float(h[fixed_in].sum()) + float(top[1:].sum()))
    gain = 2.0 * lam * max(h_beta, h_1 - h_beta1)
    if not bound + gain >= cutoff - 1e-9 * max(1.0, abs(cutoff)):
        return None
    wb = terms.safe(witness, not_out.nonzero()[0])
    if wb is None:
        return None
    plan = plan_fixings(wb, fixed_in, fixed_out, k, cutoff + FIX_SLACK * max(1.0, abs(cutoff)))
    return plan if plan.fixings else None


def apply_fixings(fixed_in: np.ndarray, fixed_out: np.ndarray, plan, k: int):
    """The node's sets after its reduced-cost fixings ``plan``, as the engine applies them:
    ``None`` when it does not (no fixings, or they would leave a leaf problem that the
    witness does not solve), else ``(fixed_in, fixed_out)``."""
    if plan is None or not plan.fixings:
        return None
    fi, fo = fixed_in.copy(), fixed_out.copy()
    for j, v in plan.fixings:
        (fi if v == 1 else fo)[j] = True
    budget = k - int(fi.sum())
    if not plan.covers_node and (budget == 0 or int((~(fi | fo)).sum()) <= budget):
        return None
    return fi, fo
