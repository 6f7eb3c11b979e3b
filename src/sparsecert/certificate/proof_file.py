"""The proof file of a certificate (format version 3): the tree in preorder and its witnesses.

The writer's side of ``docs/certificate-format.md``, section 2.7 (the standalone verifier reads
the file with its own code). A tree given by parent links, in any order, is put in depth-first
preorder level by level with numpy (:func:`tree_order`: no recursion, no Python object per
node), its records are packed (:func:`pack_records`) and the file is written section by section
from chunks (:func:`write_proof`), its SHA-256 computed while it is written, so a file of any
size is written in memory bounded by a chunk.

numpy and the standard library only.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np

from sparsecert.certificate.schema import (
    PROOF_HEADER,
    PROOF_MAGIC,
    RECORD_DERIVE,
    RECORD_DTYPE,
    RECORD_MAX,
    RECORD_SIZE,
    RECORD_STATUS,
    RECORD_WITNESS_SHIFT,
    proof_size,
)

__all__ = ["TreeOrder", "tree_order", "pack_records", "write_proof", "ProofCounts",
           "read_counts", "decode_tree", "read_witness"]


@dataclass(frozen=True)
class TreeOrder:
    """A tree in depth-first preorder (the child ``z_j = 0`` before the child ``z_j = 1``).

    ``order[q]`` is the row (of the arrays given to :func:`tree_order`) of the q-th node in
    preorder; ``var[i]`` the variable row i's children fix (-1 for a leaf); ``size0[i]`` the
    number of nodes in the subtree of row i's child ``z_j = 0`` (0 for a leaf); ``depth`` the
    depth of the tree.
    """

    order: np.ndarray
    var: np.ndarray
    size0: np.ndarray
    depth: int

    @property
    def leaf(self) -> np.ndarray:
        """Rows without children."""
        return self.var < 0


def _children(ids: np.ndarray, parent: np.ndarray, bval: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(row of each node's parent, row of its child 0, row of its child 1, row of the root),
    rows in the order given; ValueError naming the first problem."""
    m = ids.size
    srt = np.argsort(ids, kind="stable")
    sids = ids[srt]
    if m > 1 and (np.diff(sids) == 0).any():
        dup = int(sids[np.flatnonzero(np.diff(sids) == 0)[0]])
        raise ValueError(f"node ids must be unique (id {dup} is given twice)")
    roots = np.flatnonzero(parent < 0)
    if roots.size != 1:
        raise ValueError(f"the tree needs exactly one root (a node without a parent), "
                         f"got {roots.size}")
    at = np.searchsorted(sids, parent)
    at = np.minimum(at, m - 1)
    prow = srt[at]
    nonroot = parent >= 0
    missing = nonroot & (ids[prow] != parent)
    if missing.any():
        i = int(np.flatnonzero(missing)[0])
        raise ValueError(f"node {int(ids[i])}: parent {int(parent[i])} is not among the nodes")
    prow = np.where(nonroot, prow, -1)
    c0 = np.full(m, -1, dtype=np.int64)
    c1 = np.full(m, -1, dtype=np.int64)
    for value, c in ((0, c0), (1, c1)):
        sel = np.flatnonzero(nonroot & (bval == value))
        counts = np.bincount(prow[sel], minlength=m)
        if (counts > 1).any():
            i = int(np.flatnonzero(counts > 1)[0])
            raise ValueError(f"node {int(ids[i])} has more than one child z_j = {value}")
        c[prow[sel]] = sel
    bad = nonroot & (bval != 0) & (bval != 1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"node {int(ids[i])}: branch_value must be 0 or 1")
    one = (c0 >= 0) != (c1 >= 0)
    if one.any():
        i = int(np.flatnonzero(one)[0])
        raise ValueError(f"node {int(ids[i])} has one child: a branched node has exactly two, "
                         "z_j = 0 and z_j = 1")
    return prow, c0, c1, int(roots[0])


def tree_order(ids, parent, bvar, bval) -> TreeOrder:
    """The preorder of a tree given by its nodes' ids, parents' ids (-1: the root), and the
    branching that made each node (variable ``bvar``, value ``bval``; ignored at the root).

    Raises
    ------
    ValueError
        Ids not unique, not exactly one root, a parent that is not a node, a node with one
        child or two of the same value, children fixing different variables, nodes not
        reached from the root (a cycle).
    """
    ids = np.asarray(ids, dtype=np.int64)
    parent = np.asarray(parent, dtype=np.int64)
    bvar = np.asarray(bvar, dtype=np.int64)
    bval = np.asarray(bval, dtype=np.int64)
    m = ids.size
    if m == 0:
        raise ValueError("the tree has no node")
    prow, c0, c1, root = _children(ids, parent, bval)
    var = np.full(m, -1, dtype=np.int64)
    inner = np.flatnonzero(c0 >= 0)
    if inner.size:
        v0, v1 = bvar[c0[inner]], bvar[c1[inner]]
        if (v0 != v1).any():
            i = int(inner[np.flatnonzero(v0 != v1)[0]])
            raise ValueError(f"node {int(ids[i])}: its two children must fix the same variable "
                             f"(got {int(v0[v0 != v1][0])} and {int(v1[v0 != v1][0])})")
        var[inner] = v0
    # levels from the root: a node not reached is on a cycle (or below one)
    levels = [np.array([root], dtype=np.int64)]
    reached = 1
    while True:
        lv = levels[-1]
        lv = lv[c0[lv] >= 0]
        if lv.size == 0:
            break
        nxt = np.concatenate([c0[lv], c1[lv]])
        reached += nxt.size
        if reached > m:  # cannot happen for parent links; a guard against looping
            raise ValueError("the parent chain has a cycle")
        levels.append(nxt)
    if reached != m:
        seen = np.zeros(m, dtype=bool)
        for lv in levels:
            seen[lv] = True
        i = int(np.flatnonzero(~seen)[0])
        raise ValueError(f"node {int(ids[i])}: the parent chain has a cycle (it is not reached "
                         "from the root)")
    size = np.ones(m, dtype=np.int64)
    for lv in reversed(levels):
        inner_lv = lv[c0[lv] >= 0]
        size[inner_lv] += size[c0[inner_lv]] + size[c1[inner_lv]]
    pos = np.zeros(m, dtype=np.int64)
    for lv in levels:
        inner_lv = lv[c0[lv] >= 0]
        pos[c0[inner_lv]] = pos[inner_lv] + 1
        pos[c1[inner_lv]] = pos[inner_lv] + 1 + size[c0[inner_lv]]
    order = np.empty(m, dtype=np.int64)
    order[pos] = np.arange(m)
    size0 = np.where(c0 >= 0, size[np.maximum(c0, 0)], 0)
    return TreeOrder(order=order, var=var, size0=size0, depth=len(levels) - 1)


def pack_records(tree: TreeOrder, status, derive, wkind, wslot) -> np.ndarray:
    """The records of the nodes in preorder (:data:`RECORD_DTYPE`), from per-row arrays:
    ``status`` codes (:data:`RECORD_STATUS`; a node with children is written ``branched``),
    ``derive`` flags, witness kinds ``wkind`` (0 none, 1 dual, 2 shifted) and slots."""
    o = tree.order
    var = tree.var[o]
    inner = var >= 0
    st = np.where(inner, 0, np.asarray(status, dtype=np.int64)[o])
    head = (st | np.where(np.asarray(derive, dtype=bool)[o], RECORD_DERIVE, 0)
            | (np.asarray(wkind, dtype=np.int64)[o] << RECORD_WITNESS_SHIFT))
    slot = np.where(np.asarray(wkind)[o] > 0, np.asarray(wslot, dtype=np.int64)[o], 0)
    size0 = tree.size0[o]
    for name, arr in (("variable", var), ("witness slot", slot), ("subtree size", size0)):
        if arr.size and arr.max() > RECORD_MAX:
            raise ValueError(f"a {name} of {int(arr.max())} does not fit the format's 32 bits")
    out = np.zeros(o.size, dtype=RECORD_DTYPE)
    out["head"] = head
    out["var"] = np.where(inner, var, 0)
    out["slot"] = slot
    out["size0"] = size0
    return out


@dataclass(frozen=True)
class ProofCounts:
    """The counts of a proof file's header."""

    n_nodes: int
    n_dual: int
    n_shifted: int
    shifted_nnz: int
    n_samples: int
    n_features: int

    @property
    def size(self) -> int:
        """The file's exact size in bytes."""
        return proof_size(self.n_nodes, self.n_dual, self.n_shifted, self.shifted_nnz,
                          self.n_samples)


class _Hashed:
    """A binary file being written, with the SHA-256 and the size of what went in."""

    def __init__(self, fh: BinaryIO) -> None:
        self.fh = fh
        self.h = hashlib.sha256()
        self.size = 0

    def write(self, data) -> None:
        if isinstance(data, np.ndarray):
            if data.size == 0:
                return
            data = np.ascontiguousarray(data).view(np.uint8).reshape(-1)
        mv = memoryview(data).cast("B")
        self.h.update(mv)
        self.fh.write(mv)
        self.size += mv.nbytes


def _le(a: np.ndarray, dtype: str) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=dtype)


def write_proof(fh: BinaryIO, counts: ProofCounts, records: Iterable[np.ndarray],
                dual: Iterable[np.ndarray], shifted_offsets: np.ndarray,
                shifted_values: Iterable[np.ndarray], shifted_indices: Iterable[np.ndarray]
                ) -> tuple[str, int]:
    """Write a proof file: the header of ``counts``, then each section from its chunks (the
    records in preorder, the dual witnesses' rows, the shifted witnesses' offsets, values and
    indices). Returns (SHA-256, size); ValueError if a section's chunks do not add up to its
    count (nothing then refers to the file)."""
    out = _Hashed(fh)
    out.write(PROOF_HEADER.pack(PROOF_MAGIC, 3, RECORD_SIZE, counts.n_nodes, counts.n_dual,
                                counts.n_shifted, counts.shifted_nnz, counts.n_samples,
                                counts.n_features))
    n, nnz = counts.n_samples, counts.shifted_nnz
    want = {"records": counts.n_nodes, "dual witnesses": counts.n_dual,
            "shifted values": nnz, "shifted indices": nnz}
    got = dict.fromkeys(want, 0)
    for rec in records:
        out.write(_le(rec, RECORD_DTYPE))
        got["records"] += len(rec)
    for rows in dual:
        rows = _le(rows, "<f8").reshape(-1, n)
        out.write(rows)
        got["dual witnesses"] += rows.shape[0]
    off = _le(shifted_offsets, "<u8")
    if off.shape != (counts.n_shifted + 1,) or (off.size and (off[0] != 0 or off[-1] != nnz)):
        raise ValueError("the shifted witnesses' offsets do not match their count")
    out.write(off)
    for vals in shifted_values:
        out.write(_le(vals, "<f8"))
        got["shifted values"] += np.asarray(vals).size
    for idx in shifted_indices:
        out.write(_le(idx, "<u4"))
        got["shifted indices"] += np.asarray(idx).size
    bad = [name for name in want if want[name] != got[name]]
    if bad or out.size != counts.size:
        raise ValueError(f"the proof file's sections do not match its header ({', '.join(bad)})")
    return out.h.hexdigest(), out.size


def read_counts(fh: BinaryIO) -> ProofCounts:
    """The counts of a proof file's header (not checked: the verifier's reader checks them)."""
    fh.seek(0)
    magic, _, _, *counts = PROOF_HEADER.unpack(fh.read(PROOF_HEADER.size))
    if magic != PROOF_MAGIC:
        raise ValueError("not a sparsecert proof file")
    return ProofCounts(*counts)


def decode_tree(fh: BinaryIO, limit: int | None = None) -> list[dict]:
    """The nodes of a proof file in preorder (for people: ``sparsecert show --audit``, tests),
    each a dict: ``index`` (its position in preorder), ``parent`` (index, None at the root),
    ``branch_var``, ``branch_value`` (the branching that made it), ``status``, ``derive``,
    ``witness`` ((kind, slot) or None). At most ``limit`` nodes. ValueError if the records do
    not form a tree."""
    counts = read_counts(fh)
    total = counts.n_nodes if limit is None else min(limit, counts.n_nodes)
    fh.seek(PROOF_HEADER.size)
    recs = np.frombuffer(fh.read(RECORD_SIZE * total), dtype=RECORD_DTYPE)
    if recs.size != total:
        raise ValueError("the proof file is shorter than its header says")
    names = {v: k for k, v in RECORD_STATUS.items()}
    kinds = {1: "dual", 2: "shifted"}
    out: list[dict] = []
    stack = [(0, counts.n_nodes, None, None, None)]  # (pos, size, parent, var, value)
    while stack and len(out) < total:
        pos, size, parent, var, value = stack.pop()
        head, rvar, slot, size0 = (int(x) for x in recs[pos])
        wk = (head >> RECORD_WITNESS_SHIFT) & 3
        status = names.get(head & 3)
        out.append(dict(index=pos, parent=parent, branch_var=var, branch_value=value,
                        status=status, derive=bool(head & RECORD_DERIVE),
                        witness=(kinds[wk], slot) if wk in kinds else None))
        if head & 3 == 0:
            if not 1 <= size0 <= size - 2:
                raise ValueError(f"node {pos}: the records are not a tree in preorder")
            stack.append((pos + 1 + size0, size - 1 - size0, pos, rvar, 1))
            stack.append((pos + 1, size0, pos, rvar, 0))
    return out


def read_witness(fh: BinaryIO, kind: str, slot: int) -> np.ndarray:
    """Witness ``slot`` of ``kind`` (``"dual"``: zeta of length n; ``"shifted"``: b of length
    p, dense) from a proof file."""
    c = read_counts(fh)
    n, p = c.n_samples, c.n_features
    dual_at = PROOF_HEADER.size + RECORD_SIZE * c.n_nodes
    if kind == "dual":
        if not 0 <= slot < c.n_dual:
            raise IndexError(f"no dual witness {slot}")
        fh.seek(dual_at + 8 * n * slot)
        return np.frombuffer(fh.read(8 * n), dtype="<f8").astype(np.float64)
    if not 0 <= slot < c.n_shifted:
        raise IndexError(f"no shifted witness {slot}")
    off_at = dual_at + 8 * n * c.n_dual
    fh.seek(off_at + 8 * slot)
    a, b = (int(v) for v in np.frombuffer(fh.read(16), dtype="<u8"))
    val_at = off_at + 8 * (c.n_shifted + 1)
    idx_at = val_at + 8 * c.shifted_nnz
    fh.seek(val_at + 8 * a)
    vals = np.frombuffer(fh.read(8 * (b - a)), dtype="<f8")
    fh.seek(idx_at + 4 * a)
    idx = np.frombuffer(fh.read(4 * (b - a)), dtype="<u4").astype(np.int64)
    out = np.zeros(p)
    out[idx] = vals
    return out
