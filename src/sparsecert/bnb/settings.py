"""The engine's settings: the search options and the engine's tuning (one frozen record)."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from sparsecert.problem import EXECUTION_FIELDS, SearchOptions

__all__ = ["BnBSettings", "NODE_STRATEGIES"]

#: the values of ``BnBSettings.node_strategy`` (those of ``solve_node``'s ``solver``)
NODE_STRATEGIES = ("auto", "fista", "zspace")


@dataclass(frozen=True)
class BnBSettings(SearchOptions):
    """The engine's settings: the search options and the engine's tuning.

    The fields of :class:`sparsecert.problem.SearchOptions` (``rel_gap``, ``abs_gap``,
    ``time_limit``, ``node_limit``, ``node_selection``, ``branching``, ``batch_size``,
    ``batch_overlap``, and where and how loudly the search runs: ``n_jobs``, ``backend``,
    ``executor``, ``verbose``, ``log``; checked by the parameter table, see
    :func:`sparsecert.certify`), then the tuning below. ``batch_overlap=None`` means a quarter
    of ``batch_size``, rounded down (4 at the default 16; :attr:`overlap` is the value the
    search uses, and it follows ``batch_size`` through ``dataclasses.replace``): at 4 on the
    parallel figure's tree (threads, batch size 16) a worker waited between tasks 0.7-2.7% of
    the time instead of 8.6-10.7% without; ``batch_overlap=0`` gives the trees of the releases
    before it back (:mod:`sparsecert.bnb.pipeline`).
    The certificate records every setting but the execution ones (:meth:`record`): the same
    settings give the same tree, and the same certificate, on any executor.

    Parameters
    ----------
    node_rel_tol, node_max_iter : float, int
        Accuracy and iteration cap of a node relaxation (it stops earlier on the cutoff).
    node_open_rel_tol : float or None
        The accuracy of a node relaxation once the primal value ``P`` of its iterate is below
        the cutoff: the relaxation's optimum is then below it, no bound can prune the node
        (it will be branched on), and iterating to ``node_rel_tol`` would only tighten a bound
        that closes nothing. ``node_rel_tol`` applies while ``P`` is at or above the cutoff
        (the node may still be pruned). None (the default): ``rel_gap``, so that the bound of
        an open node is never looser, relatively, than the gap asked for; ``rel_gap=0`` or
        ``node_open_rel_tol=0`` gives ``node_rel_tol`` throughout. A value below
        ``node_rel_tol`` counts as ``node_rel_tol`` (:attr:`open_rel_tol` is the value the
        search uses; the certificate records it). Leaves keep ``leaf_rel_tol``. Every bound is
        valid either way (weak duality at any iterate); the looser stop changes the tree (the
        children's inherited bounds, the fixings, the branching variable) and the iterations
        a node takes (at the default ``rel_gap``, fewer relaxation iterations on every
        instance of ``benchmarks/node_tolerance.py``; docs/bnb.md, "Choosing the defaults").
    leaf_rel_tol, leaf_max_iter : float, int
        The same for leaves solved exactly.
    beam_width, n_candidates : int
        Beam search at the root.
    heuristic_every : int
        Run swap local search from a node's rounded solution every this many nodes.
    fixing : bool
        Reduced-cost fixing at every node from its witness (:mod:`sparsecert.bnb.fixing`):
        free variables whose forced-in (forced-out) region has a bound past the cutoff are
        fixed out (in) for the node's subtree; the certificate carries each fixing.
    subtree_nodes : int
        Nodes a task evaluates: its node and, depth first, up to ``subtree_nodes - 1`` of its
        descendants against the cutoff known when the task was made and the incumbents it
        finds itself (:mod:`sparsecert.bnb.subtree`: a worker owns a subtree for the length
        of its task, the global queue balances the tasks). The tree depends on it and on
        ``batch_size``, not on the executor or the number of workers.
    node_strategy : {"auto", "fista", "zspace"}
        How node relaxations are solved (``solve_node``'s ``solver``). ``"auto"``: every node
        takes the strategy expected to cost less on it; where z-space applies, the first node
        below the root that is not a leaf is solved by both z-space and FISTA (a race counted
        in operations, so the same on every machine), and the later nodes expect the
        iterations it measured (the result's ``strategy_race``; until then, a prior);
        ``"fista"`` / ``"zspace"`` force one (``"zspace"`` where it applies).
    log_interval : float
        Seconds between progress lines.
    """

    node_rel_tol: float = 1e-6
    node_open_rel_tol: float | None = None
    node_max_iter: int = 5000
    leaf_rel_tol: float = 1e-9
    leaf_max_iter: int = 50000
    beam_width: int = 5
    n_candidates: int = 10
    heuristic_every: int = 10
    fixing: bool = True
    subtree_nodes: int = 1
    node_strategy: str = "auto"
    log_interval: float = 5.0

    @classmethod
    def from_options(cls, options: SearchOptions, **tuning) -> BnBSettings:
        """The settings of ``options`` (a :class:`~sparsecert.problem.SearchOptions`, or
        settings whose tuning is kept) with the default tuning, or ``tuning``."""
        if isinstance(options, BnBSettings):
            return replace(options, **tuning) if tuning else options
        return cls(**{f.name: getattr(options, f.name) for f in fields(SearchOptions)},
                   **tuning)

    def __post_init__(self) -> None:
        super().__post_init__()
        if (isinstance(self.subtree_nodes, bool) or not isinstance(self.subtree_nodes, int)
                or self.subtree_nodes < 1):
            raise ValueError(f"subtree_nodes must be a positive integer, got "
                             f"{self.subtree_nodes!r}")
        tol = self.node_open_rel_tol
        if tol is not None and (isinstance(tol, bool) or not isinstance(tol, (int, float))
                                or not tol >= 0.0):
            raise ValueError(f"node_open_rel_tol must be None or a number >= 0, got {tol!r}")
        if self.node_strategy not in NODE_STRATEGIES:
            raise ValueError(f"unknown node_strategy {self.node_strategy!r}; choose from "
                             f"{list(NODE_STRATEGIES)}")

    @property
    def overlap(self) -> int:
        """The batch overlap the search uses: ``batch_overlap``, or a quarter of
        ``batch_size`` (rounded down) when it is None."""
        return self.batch_size // 4 if self.batch_overlap is None else self.batch_overlap

    @property
    def open_rel_tol(self) -> float:
        """The tolerance of a node relaxation once its primal value is below the cutoff:
        ``node_open_rel_tol`` (``rel_gap`` when None), at least ``node_rel_tol``."""
        tol = self.rel_gap if self.node_open_rel_tol is None else self.node_open_rel_tol
        return max(float(self.node_rel_tol), float(tol))

    def record(self) -> dict:
        """The settings the certificate records: all but where and how loudly the search runs
        (:data:`sparsecert.problem.EXECUTION_FIELDS`), with the overlap and the open-node
        tolerance the search used."""
        rec = {f.name: getattr(self, f.name) for f in fields(self)
               if f.name not in EXECUTION_FIELDS}
        rec["batch_overlap"] = self.overlap
        rec["node_open_rel_tol"] = self.open_rel_tol
        return rec
