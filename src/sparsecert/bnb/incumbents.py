"""The search's start: the root's fixings (the problem's forced-in and excluded features) and
the incumbents found before the first node (beam search, then swap search from its model and
from each support the caller offers)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sparsecert._validation import check_index_set
from sparsecert.solvers.heuristics import SubsetModel, SupportRefitter, beam_search, swap_search

__all__ = ["root_fixings", "checked_support", "start_models"]


def root_fixings(problem) -> tuple[np.ndarray, np.ndarray]:
    """The problem's features forced in and kept out (the root's fixings: the tree covers
    exactly the supports the problem allows), as fresh boolean masks."""
    p = problem.n_features
    fi = getattr(problem, "forced_in", None)
    fo = getattr(problem, "forced_out", None)
    return (np.zeros(p, bool) if fi is None else np.asarray(fi, dtype=bool).copy(),
            np.zeros(p, bool) if fo is None else np.asarray(fo, dtype=bool).copy())


def checked_support(problem, k: int, support: Sequence[int]) -> tuple[int, ...]:
    """``support`` as sorted indices, checked: valid indices, no excluded feature, at most ``k``
    features with the forced-in ones."""
    mask = check_index_set(support, problem.n_features, "start_supports entry")
    forced, excluded = root_fixings(problem)
    if (mask & excluded).any():
        raise ValueError(f"a start support holds the excluded feature(s) "
                         f"{np.flatnonzero(mask & excluded)[:5].tolist()}")
    if (mask | forced).sum() > k:
        raise ValueError(f"a start support has {int((mask | forced).sum())} features (with "
                         f"the forced-in ones), more than k = {k}")
    return tuple(int(j) for j in np.flatnonzero(mask))


def start_models(refitter: SupportRefitter, problem, k: int, settings,
                 start_supports: Sequence[tuple[int, ...]]) -> list[SubsetModel]:
    """Beam search's model and each start support's refit (with the forced-in features), each
    improved by swap search (which never returns a worse model than its start)."""
    forced, excluded = root_fixings(problem)
    fixed = np.flatnonzero(forced).tolist()
    allowed = ~(excluded | forced)
    starts = [beam_search(refitter, k, beam_width=settings.beam_width,
                          n_candidates=settings.n_candidates, fixed_in=fixed, allowed=allowed)]
    starts += [refitter.fit(tuple(sorted(set(support) | set(fixed))))
               for support in start_supports]
    return [swap_search(refitter, model, k, n_candidates=settings.n_candidates, fixed_in=fixed,
                        allowed=allowed) for model in starts]
