"""Upper bounds for the k-sparse problem: beam search, swaps, rounding, over exact refits.

Every model produced here is *feasible* (at most ``k`` non-zeros, inside the box) and its
objective is computed exactly on the data (by :mod:`sparsecert.solvers.support_refit`), so it is
a valid upper bound; how good it is only affects speed, never correctness.

* :class:`SupportRefitter` (in :mod:`~sparsecert.solvers.support_refit`, named here too) solves
  the problem restricted to a support exactly, with a cache keyed by the support.
* :func:`beam_search` is forward selection keeping the ``beam_width`` best supports of each size;
  candidates are screened by the second-order decrease ``grad_j^2 / (2 h_j)`` and refitted exactly.
* :func:`swap_search` is best-improvement-first local search over one-for-one swaps.
* :func:`round_relaxation` turns a relaxed solution into a support (the fixed-in variables plus
  the largest free coefficients) and refits it.
"""

from __future__ import annotations

import numpy as np

from sparsecert.solvers.support_refit import (
    SampleTerms,
    SparseSupportRefitter,
    SubsetModel,
    SupportRefitter,
)

__all__ = ["SubsetModel", "SampleTerms", "SupportRefitter", "SparseSupportRefitter",
           "beam_search", "swap_search", "round_relaxation"]


def _top(scores: np.ndarray, m: int) -> np.ndarray:
    """Indices of the ``m`` largest finite scores, ties to the lower index (deterministic)."""
    ok = np.flatnonzero(np.isfinite(scores))
    if ok.size == 0:
        return ok
    order = ok[np.lexsort((ok, -scores[ok]))]
    return order[:m]


def beam_search(refitter: SupportRefitter, k: int, *, beam_width: int = 5,
                n_candidates: int = 10, fixed_in=(), allowed: np.ndarray | None = None
                ) -> SubsetModel:
    """Forward selection with a beam, exact refits at every step.

    Parameters
    ----------
    refitter : SupportRefitter
    k : int
        Support size to reach.
    beam_width : int
        Supports kept at each size.
    n_candidates : int
        Screened additions refitted per support.
    fixed_in : sequence of int
        Coordinates every support contains.
    allowed : numpy.ndarray of bool, optional
        Coordinates that may enter (default: all).

    Returns
    -------
    SubsetModel
        The best model of the final beam.
    """
    p = refitter.p
    allowed = np.ones(p, bool) if allowed is None else allowed
    beam = [refitter.fit(tuple(fixed_in))]
    best = beam[0]
    for _ in range(len(beam[0].support), k):
        cands: dict[tuple[int, ...], SubsetModel] = {}
        for m in beam:
            sc = refitter.screening_scores(m)
            sc[~allowed] = -np.inf
            for j in _top(sc, n_candidates):
                mod = refitter.fit(m.support + (int(j),))
                cands[mod.support] = mod
        if not cands:
            break
        beam = sorted(cands.values(), key=lambda m: (m.objective, m.support))[:beam_width]
        if beam[0].objective < best.objective:
            best = beam[0]
    return best


def swap_search(refitter: SupportRefitter, model: SubsetModel, k: int, *, fixed_in=(),
                allowed: np.ndarray | None = None, n_candidates: int = 10,
                max_rounds: int = 100) -> SubsetModel:
    """One-for-one swap local search (first improvement), then fill up to ``k`` if possible."""
    p = refitter.p
    allowed = np.ones(p, bool) if allowed is None else allowed
    fixed = set(int(j) for j in fixed_in)
    cur = model
    for _ in range(max_rounds):
        sc = refitter.screening_scores(cur)
        sc[~allowed] = -np.inf
        cands = _top(sc, n_candidates)
        if len(cur.support) < k and cands.size:
            nxt = refitter.fit(cur.support + (int(cands[0]),))
            if nxt.objective < cur.objective:
                cur = nxt
                continue
        removable = [j for j in cur.support if j not in fixed]
        # try removing the coordinates with the smallest coefficients first
        mags = {j: abs(c) for j, c in zip(cur.support, cur.coef, strict=True)}
        removable.sort(key=lambda j: (mags[j], j))
        improved = False
        cand_list = cands.tolist()
        for i in removable:
            base = tuple(j for j in cur.support if j != i)
            for j in cand_list:
                mod = refitter.fit(base + (j,))
                if mod.objective < cur.objective * (1 - 1e-12) - 1e-12:
                    cur, improved = mod, True
                    break
            if improved:
                break
        if not improved:
            break
    return cur


def round_relaxation(refitter: SupportRefitter, relaxed_coef: np.ndarray, k: int,
                     fixed_in: np.ndarray, fixed_out: np.ndarray) -> SubsetModel:
    """Support = fixed-in coordinates + the largest free relaxed coefficients; exact refit."""
    budget = k - int(np.count_nonzero(fixed_in))
    mag = np.abs(relaxed_coef)
    # the free coordinates with a finite magnitude, largest first, ties to the lower index
    ok = (~(fixed_in | fixed_out) & np.isfinite(mag)).nonzero()[0]
    take = ok[np.lexsort((ok, -mag[ok]))][:budget]
    take = take[mag[take] > 0]
    return refitter.fit(fixed_in.nonzero()[0].tolist() + take.tolist())
