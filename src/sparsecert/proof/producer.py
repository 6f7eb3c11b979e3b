"""The proof producer: a finished search becomes certified claims and their certificate.

The proof is recorded while the search runs (:class:`sparsecert.proof.recorder.ProofRecorder`,
which the engine calls as each node closes: the node's claims are computed rigorously on the
raw data there, its record and witness streamed out (in memory, to temporary files once they
outgrow a bound), and the node forgotten).
:func:`produce` then reads the engine's record (:class:`sparsecert.bnb.SearchResult`) beside the
relaxation's data it was searched on, the problem as the user posed it (the prepared problem,
whose record :class:`sparsecert.problem.ProblemSpec` holds ``k``) and the search's options
(:class:`sparsecert.problem.SearchOptions`: the gap targets of the status ``optimal``): it maps
the engine's model back to the user's coordinates, has the recorder record the open frontier
and write the proof file in preorder, bounds the incumbent's objective rigorously
(:mod:`~sparsecert.proof.bounds`), claims it with a margin of a few rounding radii
(:mod:`~sparsecert.proof.claims`), sets the status the claims allow
(:mod:`~sparsecert.proof.status`) and writes the certificate's document. It imports nothing of
the standalone verifier, which checks its claims independently.
"""

from __future__ import annotations

import math
import shutil
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sparsecert.proof.claims import claim_upper
from sparsecert.proof.recorder import ProofRecorder
from sparsecert.proof.status import certified_lower, demote, proven_gaps
from sparsecert.statuses import LIMITED, OPEN, OPTIMAL, TREE_EXHAUSTED

__all__ = ["Proof", "ProofStats", "Annotations", "produce", "start", "extensions"]


@dataclass(frozen=True)
class ProofStats:
    """What the certificate cost: ``n_nodes``, ``json_bytes`` and ``proof_bytes`` (the two
    files), ``claim_seconds`` (the closed nodes' claims, during the search), ``assembly_seconds``
    (after the search: the open nodes, the proof file, the document) and ``peak_memory`` (the
    process's peak resident memory in bytes when the certificate was done; None where the
    platform does not say)."""

    n_nodes: int
    json_bytes: int
    proof_bytes: int
    claim_seconds: float
    assembly_seconds: float
    peak_memory: int | None

    @property
    def total_bytes(self) -> int:
        return self.json_bytes + self.proof_bytes

    @property
    def bytes_per_node(self) -> float:
        return self.total_bytes / max(1, self.n_nodes)

    def line(self) -> str:
        """One line for the log."""
        mem = "" if self.peak_memory is None else \
            f"; peak memory {self.peak_memory / 2 ** 20:.0f} MB"
        return (f"certificate: {self.n_nodes:,} nodes, {_mb(self.total_bytes)} (JSON "
                f"{_mb(self.json_bytes)} + proof {_mb(self.proof_bytes)}, "
                f"{self.bytes_per_node:.0f} bytes a node); claims {self.claim_seconds:.1f} s "
                f"during the search, {self.assembly_seconds:.1f} s after it{mem}")


def _mb(n: int) -> str:
    return f"{n / 1e6:.2f} MB" if n >= 1e5 else f"{n / 1e3:.1f} KB"


def peak_memory() -> int | None:
    """This process's peak resident memory in bytes (None where the platform does not say)."""
    try:
        import resource
    except ImportError:  # Windows
        return None
    import sys

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak) if sys.platform == "darwin" else int(peak) * 1024


@dataclass(frozen=True, eq=False)
class Proof:
    """What the producer claims, with the certificate that proves it.

    ``objective`` is the computed objective of the model (``upper_bound`` its claimed upper
    bound), ``gap``/``absolute_gap`` the claimed gaps rounded up, ``status`` the certificate's,
    ``stats`` what the certificate cost.
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
    stats: ProofStats


@dataclass(frozen=True)
class Annotations:
    """What a certificate says beside its claims (informational: the verifier does not check
    it): the fields of its ``producer`` section (how the search ran) and the features' names."""

    producer: Mapping[str, Any] | None = None
    feature_names: Sequence[str] | None = None


def start(relaxation, prepared) -> ProofRecorder:
    """The recorder of a search's proof (give it to the engine: ``BranchAndBound(...,
    proof=recorder)``)."""
    return ProofRecorder(relaxation, prepared)


def user_model(search, relaxation) -> tuple[np.ndarray, float]:
    """The engine's model in the user's coordinates: the centring's inverse
    (``relaxation.centring``) of the engine's coefficients and intercept (the one it carries
    as a variable; 0 where the centring made the intercept exact)."""
    coef = search.coef.copy()
    return coef, relaxation.centring.user_intercept(coef, float(search.intercept))


def extensions(prepared) -> dict:
    """The problem's optional parts as the certificate writes them
    (:func:`sparsecert.certificate.problem.encode_extensions`): the sample weights and offsets
    (their hashes), every coefficient's bounds (with the box), the features forced in and
    kept out; empty for the plain problem."""
    spec = prepared.spec
    return dict(sample_weight=prepared.sample_weight, offset=prepared.offset,
                coef_lower=prepared.coef_lower, coef_upper=prepared.coef_upper,
                always_select=spec.always_select, exclude=spec.exclude)


def produce(search, relaxation, prepared, options, *, recorder: ProofRecorder | None = None,
            annotations: Annotations | None = None, note: Callable[[str], None] | None = None,
            model: tuple[np.ndarray, float] | None = None) -> Proof:
    """The certified claims of a finished (or stopped) search, and their certificate.

    Parameters
    ----------
    search : sparsecert.bnb.SearchResult
        The engine's record (its incumbent, and its nodes: those still open when the search
        streamed its closed nodes to ``recorder``, else the whole tree).
    relaxation : sparsecert.solvers.perspective.RelaxationProblem
        The data the engine searched on (centring, eigenvalue shift) and its loss (with the
        loss's parameters).
    prepared : sparsecert._validation.PreparedProblem
        The problem as the user posed it (``prepared.spec``, with ``k``) on the raw data (``X``,
        ``y`` as given and hashed, ``y_used`` as the loss reads it).
    options : sparsecert.problem.SearchOptions
        The gap targets (``rel_gap``, ``abs_gap``) an ``optimal`` status is judged by.
    recorder : ProofRecorder, optional
        The recorder the engine streamed its closed nodes to (:func:`start`); without it the
        search's whole tree is recorded here.
    annotations : Annotations, optional
        Informational: the fields of the certificate's ``producer`` section and the
        features' names, written into the certificate.
    note : callable, optional
        Called with how far the production has got (the progress log's phase).
    model : (coef, intercept), optional
        The incumbent the certificate states, in the user's coordinates, instead of the
        search's (a model to be judged against the tree's lower bound: it must be feasible,
        which the verifier checks). Its status is ``optimal`` when its proven gap is within the
        targets, else the search's when a limit stopped it, else ``tree_exhausted`` (the search
        ended on its own, the gap of this model stays open).

    Returns
    -------
    Proof
    """
    t0 = time.perf_counter()
    info = Annotations() if annotations is None else annotations
    spec = prepared.spec
    k = int(spec.k)
    box = None if spec.max_abs_coef is None or math.isinf(spec.max_abs_coef) \
        else float(spec.max_abs_coef)
    if recorder is None:  # a search that kept its whole tree: record its closed nodes now
        recorder = start(relaxation, prepared)
        live = []
        for nd in search.nodes:
            if nd.status == OPEN:
                live.append(nd)
            else:
                recorder.closed(nd)
    else:
        live = list(search.nodes)
    try:
        coef, intercept = user_model(search, relaxation) if model is None else \
            (np.asarray(model[0], dtype=np.float64).copy(), float(model[1]))
        if not spec.fit_intercept:
            intercept = 0.0
        mu = float(relaxation.mu)  # proven when the relaxation was built (Rump's test)
        loss = relaxation.loss_fn  # the registry's loss with its parameters
        value, upper = recorder.ev.objective(coef, intercept)
        ub = claim_upper(value, upper)
        during = recorder.seconds
        proof_file = recorder.finish(live, note)
    except BaseException:
        recorder.discard()
        raise
    lower = certified_lower([proof_file.min_claim], ub)
    abs_gap, rel_gap = proven_gaps(ub, lower)
    status = search.status
    if model is not None:  # the search's status is about its own incumbent
        within = rel_gap <= options.rel_gap or abs_gap <= options.abs_gap
        status = OPTIMAL if within else status if status in LIMITED else TREE_EXHAUSTED
    status = demote(status, abs_gap, rel_gap, options.abs_gap, options.rel_gap)
    if note is not None:
        note("certificate: the document")
    from sparsecert.certificate import Certificate

    doc = Certificate.document(
        prepared.X, prepared.y,
        problem=dict(loss=spec.loss, k=k, lambda2=float(spec.lambda2), max_abs_coef=box,
                     fit_intercept=bool(spec.fit_intercept), **loss.params,
                     feature_names=info.feature_names, **extensions(prepared)),
        incumbent=dict(coef=coef, intercept=intercept, objective=value),
        bounds=dict(lower_bound=lower, upper_bound=ub, status=status,
                    rel_gap_tol=float(options.rel_gap), abs_gap_tol=float(options.abs_gap)),
        eig_shift=mu,
        proof=dict(sha256=proof_file.sha256, bytes=proof_file.size, tree=proof_file.tree),
        producer=dict(settings=search.settings, elapsed=search.time, **(info.producer or {})))
    if proof_file.data is not None:
        cert = Certificate(doc, proof_file.data)
    else:  # a file in the recorder's temporary folder: both removed with the certificate
        cert = Certificate(doc, proof_file.path, temporary=True)
        weakref.finalize(cert, shutil.rmtree, proof_file.folder, True)
    stats = ProofStats(n_nodes=proof_file.counts.n_nodes,
                       json_bytes=len(cert.to_json().encode("utf-8")),
                       proof_bytes=proof_file.size, claim_seconds=during,
                       assembly_seconds=time.perf_counter() - t0, peak_memory=peak_memory())
    return Proof(coef=coef, intercept=intercept, objective=value, upper_bound=ub,
                 lower_bound=lower, gap=rel_gap, absolute_gap=abs_gap, status=status,
                 certificate=cert, stats=stats)
