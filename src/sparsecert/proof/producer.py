"""The proof producer: a finished search becomes certified claims and their certificate.

:func:`produce` reads the engine's record (:class:`sparsecert.bnb.SearchResult`) beside the
relaxation's data it was searched on, the problem as the user posed it (the prepared problem,
whose record :class:`sparsecert.problem.ProblemSpec` holds ``k``) and the search's options
(:class:`sparsecert.problem.SearchOptions`: the gap targets of the status ``optimal``). It maps
the engine's model back to the user's coordinates, rebuilds the tree
(:mod:`~sparsecert.proof.tree`), translates every witness it needs
(:mod:`~sparsecert.proof.witnesses`), evaluates every region's bound and the incumbent's
objective rigorously on the raw data (:mod:`~sparsecert.proof.bounds`, the fixing regions by
:mod:`~sparsecert.proof.regions`), claims them with a margin of a few rounding radii
(:mod:`~sparsecert.proof.claims`), sets the status the claims allow
(:mod:`~sparsecert.proof.status`) and writes the certificate. It imports nothing of the
standalone verifier, which checks its claims independently.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from sparsecert.proof.bounds import SafeEvaluator
from sparsecert.proof.claims import claim_lower, claim_lower_array, claim_upper
from sparsecert.proof.regions import fixing_regions
from sparsecert.proof.status import certified_lower, demote, proven_gaps
from sparsecert.proof.tree import columns_read, reconstruct
from sparsecert.proof.witnesses import WitnessTranslator, ZeroWitness
from sparsecert.statuses import BRANCHED

__all__ = ["Proof", "produce", "extensions"]


@dataclass(frozen=True, eq=False)
class Proof:
    """What the producer claims, with the certificate that proves it.

    ``objective`` is the computed objective of the model (``upper_bound`` its claimed upper
    bound), ``gap``/``absolute_gap`` the claimed gaps rounded up, ``status`` the certificate's.
    """

    coef: np.ndarray
    intercept: float
    objective: float
    upper_bound: float
    lower_bound: float
    gap: float
    absolute_gap: float
    status: str
    certificate: Any


def user_model(search, relaxation) -> tuple[np.ndarray, float]:
    """The engine's model in the user's coordinates: the centring's inverse
    (``relaxation.centring``) of the engine's coefficients and intercept (the one it carries
    as a variable; 0 where the centring made the intercept exact)."""
    coef = search.coef.copy()
    return coef, relaxation.centring.user_intercept(coef, float(search.intercept))


def extensions(prepared) -> dict:
    """The problem's optional parts as the certificate writes them
    (:func:`sparsecert.certificate.document.encode_extensions`): the sample weights and offsets
    (their hashes), every coefficient's bounds (with the box), the features forced in and
    kept out; empty for the plain problem."""
    spec = prepared.spec
    return dict(sample_weight=prepared.sample_weight, offset=prepared.offset,
                coef_lower=prepared.coef_lower, coef_upper=prepared.coef_upper,
                always_select=spec.always_select, exclude=spec.exclude)


def produce(search, relaxation, prepared, options, *,
            producer: Mapping[str, Any] | None = None, feature_names=None,
            note: Callable[[str], None] | None = None) -> Proof:
    """The certified claims of a finished (or stopped) search, and their certificate.

    Parameters
    ----------
    search : sparsecert.bnb.SearchResult
        The engine's record (its tree and its incumbent).
    relaxation : sparsecert.solvers.perspective.RelaxationProblem
        The data the engine searched on (centring, eigenvalue shift) and its loss (with the
        loss's parameters).
    prepared : sparsecert._validation.PreparedProblem
        The problem as the user posed it (``prepared.spec``, with ``k``) on the raw data (``X``,
        ``y`` as given and hashed, ``y_used`` as the loss reads it).
    options : sparsecert.problem.SearchOptions
        The gap targets (``rel_gap``, ``abs_gap``) an ``optimal`` status is judged by.
    producer : dict, optional
        Informational fields of the certificate's ``producer`` section.
    feature_names : sequence of str, optional
        Informational, written into the certificate.
    note : callable, optional
        Called with how far the production has got (the progress log's phase).

    Returns
    -------
    Proof
    """
    spec = prepared.spec
    k = int(spec.k)
    box = None if spec.max_abs_coef is None or math.isinf(spec.max_abs_coef) \
        else float(spec.max_abs_coef)
    coef, intercept = user_model(search, relaxation)
    if not spec.fit_intercept:
        intercept = 0.0
    mu = float(relaxation.mu)  # proven when the relaxation was built (Rump's test)
    loss = relaxation.loss_fn  # the registry's loss with its parameters
    ext = extensions(prepared)
    ev = SafeEvaluator(prepared.X, prepared.y_used, loss, spec.lambda2, box, spec.fit_intercept,
                       mu, sample_weight=prepared.sample_weight, offset=prepared.offset,
                       coef_lower=prepared.coef_lower, coef_upper=prepared.coef_upper)
    value, upper = ev.objective(coef, intercept)
    ub = claim_upper(value, upper)

    n, p = prepared.X.shape
    tree = reconstruct(search.nodes, ZeroWitness(np.zeros(n)))
    translator = WitnessTranslator(ev, relaxation, columns_read(tree, p))
    docs, claims = [], []
    for i, tn in enumerate(tree):
        if note is not None and i % 1000 == 0:
            note(f"certificate: rigorous bounds, node {i:,} of {len(tree):,}")
        nd, fixings = tn.node, tn.fixings
        cert_w, wb, bound = None, None, None
        if tn.witness is not None:  # a leaf, or a node whose fixings keep its witness
            cert_w, wb = translator.translate(tn.witness)
        if tn.leaf:
            if wb is not None:
                fin = np.asarray(nd.fixed_in, dtype=bool).reshape(p)
                fout = np.asarray(nd.fixed_out, dtype=bool).reshape(p)
                bound = claim_lower(*wb.node(fin, fout, k))
            claims.append(-np.inf if bound is None else bound)
        if fixings:  # each cut-off region z_j = 1 - v, bounded with the node's base fixings
            if wb is None:
                claims.append(-np.inf)
            else:
                values, lowers = fixing_regions(wb, *nd.base_fixings(), k, fixings)
                claims.append(float(claim_lower_array(values, lowers).min()))
        docs.append(dict(id=nd.id, parent=nd.parent, branch_var=nd.branch_var,
                         branch_value=nd.branch_value,
                         status=nd.status if tn.leaf else BRANCHED,
                         bound=bound if bound is not None and np.isfinite(bound) else None,
                         witness=cert_w, fixings=fixings))
    lower = certified_lower(claims, ub)
    abs_gap, rel_gap = proven_gaps(ub, lower)
    status = demote(search.status, abs_gap, rel_gap, options.abs_gap, options.rel_gap)
    if note is not None:
        note("certificate: the document")
    from sparsecert.certificate import Certificate

    cert = Certificate.build(
        prepared.X, prepared.y,
        problem=dict(loss=spec.loss, k=k, lambda2=float(spec.lambda2), max_abs_coef=box,
                     fit_intercept=bool(spec.fit_intercept), **loss.params),
        incumbent=dict(coef=coef, intercept=intercept, objective=value),
        bounds=dict(lower_bound=lower, upper_bound=ub, status=status,
                    rel_gap_tol=float(options.rel_gap), abs_gap_tol=float(options.abs_gap)),
        eig_shift=mu, nodes=docs, feature_names=feature_names, extensions=ext,
        producer=dict(settings=search.settings, elapsed=search.time, **(producer or {})))
    return Proof(coef=coef, intercept=intercept, objective=value, upper_bound=ub,
                 lower_bound=lower, gap=rel_gap, absolute_gap=abs_gap, status=status,
                 certificate=cert)
