"""The tree of a certificate as the writer encodes it: its nodes checked and put in preorder,
their records packed, their witnesses given slots, and the document's informational ``tree``
section.

numpy and the standard library only; the records' layout is
:mod:`sparsecert.certificate.proof_file`'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from sparsecert.certificate.fields import integer
from sparsecert.certificate.proof_file import ProofCounts, pack_records, tree_order
from sparsecert.certificate.schema import (
    NODE_STATUSES,
    RECORD_STATUS,
    RECORD_WITNESS,
    WITNESS_KINDS,
)

__all__ = ["EncodedTree", "encode_tree", "tree_summary"]


class EncodedTree(NamedTuple):
    """A tree ready for the proof file: its summary, counts, records and witnesses."""

    summary: dict
    counts: ProofCounts
    records: np.ndarray
    dual: np.ndarray  # (n_dual, n): the dual witnesses in slot order
    shifted: list[tuple[np.ndarray, np.ndarray]]  # (indices, values) of each shifted witness


def tree_summary(records: np.ndarray, depth: int | None = None) -> dict:
    """The ``tree`` section of a certificate (informational: what ``sparsecert show`` prints
    without reading the proof file) from its records (:data:`RECORD_DTYPE`)."""
    head = records["head"].astype(np.int64)
    status = head & 3
    names = {v: k for k, v in RECORD_STATUS.items()}
    leaves = {names[s]: int(np.count_nonzero(status == s)) for s in (1, 2, 3)
              if np.count_nonzero(status == s)}
    kinds = (head >> 3) & 3
    out = {"n_nodes": int(head.size), "n_leaves": int(np.count_nonzero(status != 0)),
           "leaves": leaves, "n_derive": int(np.count_nonzero(head & 4)),
           "witnesses": {"dual": int(np.count_nonzero(kinds == 1)),
                         "shifted": int(np.count_nonzero(kinds == 2))}}
    if depth is not None:
        out["depth"] = int(depth)
    return out


def encode_tree(nodes: Sequence[Mapping[str, Any]], n: int, p: int) -> EncodedTree:
    """The nodes as :meth:`~sparsecert.certificate.Certificate.build` takes them, checked
    (a root, parent links without a cycle, two children ``z_j = 0`` and ``z_j = 1`` under
    every ``branched`` node, witnesses of the right kind and length) and encoded; witness
    slots in preorder."""
    ids, parents, bvars, bvals, status, derive, wits = [], [], [], [], [], [], []
    for i, nd in enumerate(nodes):
        nid = integer(nd["id"], f"nodes[{i}]['id']")
        if nd.get("fixings"):
            raise ValueError(f"node {nid}: a version-3 certificate does not list bound "
                             "fixings (the verifier derives them from the node's "
                             "witness): give derive_fixings=True")
        parent = nd.get("parent")
        parent = None if parent is None else integer(parent, f"node {nid} parent")
        bvar = nd.get("branch_var")
        bvar = None if bvar is None else integer(bvar, f"node {nid} branch_var")
        bval = nd.get("branch_value")
        bval = None if bval is None else integer(bval, f"node {nid} branch_value")
        if bval not in (None, 0, 1):
            raise ValueError(f"node {nid}: branch_value must be 0, 1 or None")
        if (parent is None) != (bvar is None) or (bvar is None) != (bval is None):
            raise ValueError(f"node {nid}: parent, branch_var and branch_value must all be "
                             "given (or all None for the root)")
        if bvar is not None and not 0 <= bvar < p:
            raise ValueError(f"node {nid}: branch_var {bvar} not in [0, {p})")
        st = nd.get("status")
        if st not in NODE_STATUSES:
            raise ValueError(f"node {nid}: status must be one of {NODE_STATUSES}")
        ids.append(nid)
        parents.append(-1 if parent is None else parent)
        bvars.append(-1 if bvar is None else bvar)
        bvals.append(0 if bval is None else bval)
        status.append(st)
        derive.append(bool(nd.get("derive_fixings", False)))
        wits.append(nd.get("witness"))
    tree = tree_order(ids, parents, bvars, bvals)
    for i in range(len(ids)):
        inner = tree.var[i] >= 0
        if inner != (status[i] == "branched"):
            raise ValueError(f"node {ids[i]}: status {status[i]!r} "
                             + ("but it has children" if inner else
                                "but it has no children (a leaf is missing)"))
    wkind = np.zeros(len(ids), dtype=np.int64)
    wslot = np.zeros(len(ids), dtype=np.int64)
    dual_rows: list[np.ndarray] = []
    shifted: list[tuple[np.ndarray, np.ndarray]] = []
    for i in tree.order:  # slots in preorder
        wit = wits[i]
        if wit is None:
            continue
        kind, vec = wit
        if kind not in WITNESS_KINDS:
            raise ValueError(f"node {ids[i]}: witness kind must be one of {WITNESS_KINDS}, "
                             f"got {kind!r}")
        vec = np.asarray(vec, dtype=np.float64)
        want = (n,) if kind == "dual" else (p,)
        if vec.shape != want or not np.isfinite(vec).all():
            raise ValueError(f"node {ids[i]}: {kind} witness must be {want[0]} finite "
                             f"numbers, got shape {vec.shape}")
        wkind[i] = RECORD_WITNESS[kind]
        if kind == "dual":
            wslot[i] = len(dual_rows)
            dual_rows.append(vec)
        else:
            nz = np.flatnonzero(vec)
            wslot[i] = len(shifted)
            shifted.append((nz, vec[nz]))
    codes = np.array([RECORD_STATUS[s] for s in status], dtype=np.int64)
    records = pack_records(tree, codes, derive, wkind, wslot)
    counts = ProofCounts(n_nodes=len(ids), n_dual=len(dual_rows), n_shifted=len(shifted),
                         shifted_nnz=int(sum(i.size for i, _ in shifted)), n_samples=n,
                         n_features=p)
    dual = np.stack(dual_rows) if dual_rows else np.zeros((0, n))
    return EncodedTree(tree_summary(records, tree.depth), counts, records, dual, shifted)
