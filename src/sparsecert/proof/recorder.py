"""The proof of a search, recorded as the search runs: what a node needs is written when it
closes.

The engine (:class:`sparsecert.bnb.BranchAndBound`, given ``proof=``) calls
:meth:`ProofRecorder.closed` when a node closes (branched, pruned or solved) and then forgets
the node. The recorder computes the node's claims there and then, rigorously on the user's data
(the bound of a leaf's region and of every region its bound fixings cut off, the way
:mod:`sparsecert.proof.producer` claims them), keeps only their minimum, and appends a small
fixed-size record (id, parent, branching, status, whether the verifier derives the node's
fixings, witness slot) to a stream of records. A witness is translated and appended to a stream
of its own the first time a closing node needs it (its slot is kept on the engine's witness
record, which the node's open descendants share); its rigorous terms stay in a small cache
(siblings usually close close together). The streams stay in memory until they hold
:data:`_MEMORY_BYTES`, then move to files in a temporary folder (made then, removed with the
certificate): so the producer's memory is the open frontier plus a bounded cache, whatever the
number of nodes, and a small search touches no file.

:meth:`ProofRecorder.finish` then records the nodes still open (the frontier: their claims
with their inherited witnesses), puts the tree in depth-first preorder
(:func:`sparsecert.certificate.proof_file.tree_order`, numpy, no Python object per node) and
streams the final proof file (in memory when it is at most :data:`_MEMORY_BYTES` and nothing
was moved to a file, else in the temporary folder). Every step is safe against a Ctrl-C
landing between any two of the engine's steps: a node is recorded before the engine forgets
it (a node both recorded and still open counts once), a witness row carries its slot (a row
written twice, or never referenced, is dropped), and the slots are renumbered densely in the
final file.

numpy and the standard library, and the producer's rigorous evaluation
(:mod:`sparsecert.proof.bounds`); nothing of the standalone verifier.
"""

from __future__ import annotations

import io
import math
import os
import shutil
import tempfile
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np

from sparsecert.certificate.proof_file import ProofCounts, pack_records, tree_order, write_proof
from sparsecert.certificate.schema import PROOF_SUFFIX, RECORD_STATUS, proof_size
from sparsecert.certificate.tree import tree_summary
from sparsecert.proof.bounds import SafeEvaluator, SampleAndBounds, WitnessBound
from sparsecert.proof.claims import claim_lower, claim_lower_array
from sparsecert.proof.regions import fixing_regions
from sparsecert.proof.witnesses import ZeroWitness, certificate_witness
from sparsecert.statuses import BRANCHED, OPEN

__all__ = ["ProofRecorder", "ProofFile", "NODE_DTYPE"]

#: a node's record in the recorder's stream of records
NODE_DTYPE = np.dtype([("id", "<i8"), ("parent", "<i8"), ("bvar", "<i8"), ("bval", "<i1"),
                       ("status", "<u1"), ("derive", "<u1"), ("wkind", "<u1"),
                       ("wslot", "<i8")])
#: records kept as tuples before they are packed and appended to the stream of records
_FLUSH = 4096
#: bytes the recorder's streams (records, witness rows) hold in memory before they move to
#: files in a temporary folder; a final proof file of at most this size is written in memory
_MEMORY_BYTES = 1 << 20
#: witnesses whose rigorous terms stay cached
_CACHE = 256
#: assumed seconds a node's claims take before any has been measured
_DEFAULT_PER_NODE = 1e-3
#: assumed bytes a second when the proof file is written and copied (a slow disk)
_WRITE_RATE = 100e6
#: bytes of witness rows read at once when the final file is written (a read asks for its
#: whole size up front, so a fixed number of rows would cost rows x n x 8 bytes at large n)
_READ_BYTES = 1 << 20


@dataclass(frozen=True)
class ProofFile:
    """The final proof file: its bytes (``data``, when it was written in memory) or where it
    is (``path``, a file in the temporary ``folder`` the recorder made, to be removed with the
    certificate), its SHA-256 and size, its counts, the tree's summary and the least claim over
    its regions."""

    path: str | None
    sha256: str
    size: int
    counts: ProofCounts
    tree: dict
    min_claim: float
    data: bytes | None = None
    folder: str | None = None


class _Stream:
    """An append-only stream of bytes: a list of chunks in memory until :meth:`spill` moves
    it to a file (appended to from then on)."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.path: str | None = None
        self.fh: BinaryIO | None = None

    def write(self, data: bytes) -> None:
        if self.fh is not None:
            self.fh.write(data)
        else:
            self.chunks.append(data)

    def spill(self, path: str) -> None:
        """Move the stream to the file ``path``."""
        self.fh = open(path, "wb")
        self.path = path
        for chunk in self.chunks:
            self.fh.write(chunk)
        self.chunks = []

    def close(self) -> None:
        """Close the file, or drop the chunks held in memory."""
        if self.fh is not None:
            self.fh.close()
        self.chunks = []

    def reader(self) -> BinaryIO:
        """The bytes written so far, from the start (the stream closed or flushed first)."""
        if self.path is None:
            return io.BytesIO(b"".join(self.chunks))
        self.fh.flush()
        return open(self.path, "rb")

    def array(self, dtype: np.dtype) -> np.ndarray:
        """The bytes written so far, as an array of ``dtype``."""
        if self.path is None:
            return np.frombuffer(b"".join(self.chunks), dtype=dtype)
        self.fh.flush()
        return np.fromfile(self.path, dtype=dtype)


@dataclass
class _Entry:
    """A witness in the cache: its certificate kind and vector, the columns its terms were
    computed on (None: all) and the terms (None: it gives no bound)."""

    kind: str
    vector: np.ndarray
    cols: np.ndarray | None
    terms: WitnessBound | None


class ProofRecorder:
    """Records a search's proof as its nodes close.

    Parameters
    ----------
    relaxation : sparsecert.solvers.perspective.RelaxationProblem
        The engine's data (a point witness's dual is ``f'`` at ``X b~`` there) and its shift.
    prepared : sparsecert._validation.PreparedProblem
        The problem as the user posed it (``spec.k`` set), on the raw data.
    directory : str, optional
        Where the temporary folder goes, if the streams outgrow :data:`_MEMORY_BYTES`
        (default: the system's temporary folder).
    """

    def __init__(self, relaxation, prepared, directory: str | None = None) -> None:
        spec = prepared.spec
        self.k = int(spec.k)
        box = None if spec.max_abs_coef is None or math.isinf(spec.max_abs_coef) \
            else float(spec.max_abs_coef)
        self.relaxation = relaxation
        self.ev = SafeEvaluator(prepared.X, prepared.y_used, relaxation.loss_fn, spec.lambda2,
                                box, spec.fit_intercept, float(relaxation.mu),
                                extras=SampleAndBounds.of(prepared))
        self.n, self.p = prepared.X.shape
        self.directory = directory
        self.dir: str | None = None  # the temporary folder, made when the streams outgrow memory
        self._nodes, self._dual, self._shifted = _Stream(), _Stream(), _Stream()
        self._held = 0  # bytes the streams hold in memory (None: they were moved to files)
        self._buf: list[tuple] = []
        self._cache: OrderedDict[int, _Entry] = OrderedDict()
        self.zero = ZeroWitness(np.zeros(self.n))
        self.min_claim = math.inf
        self.n_closed = 0
        self.n_dual = 0  # slots allocated (a slot may end up unused: see finish)
        self.n_shifted = 0
        self.seconds = 0.0  # spent in closed(): the claims of the closed nodes
        # the same for the leaves closed without fixings of their own, as the open nodes are
        # recorded at the end (their cost estimates the reserve: a node with fixings also
        # claims every region they cut off, several times the cost, and a branched node
        # without fixings claims nothing)
        self._plain_seconds = 0.0
        self._n_plain = 0
        self.finished = False

    # -- during the search ------------------------------------------------------------------
    def closed(self, node, leaf: bool | None = None) -> None:
        """Record a node that closed (``leaf``: whether it has no children; by default from its
        status). Its claims enter :attr:`min_claim`; the engine may forget it afterwards."""
        t0 = time.perf_counter()
        if leaf is None:
            leaf = node.status != BRANCHED
        fixings = node.bound_fixings
        witness = node.witness
        if witness is None and leaf:
            witness = self.zero
        wkind = wslot = 0
        claim = math.inf
        if witness is not None and (leaf or fixings):
            if fixings:
                base_in, base_out = node.base_fixings()
            else:
                base_in, base_out = node.fixed_in, node.fixed_out
            entry, (wkind, wslot) = self._witness(witness, base_out)
            wb = entry.terms
            if leaf:
                claim = -math.inf if wb is None else claim_lower(
                    *wb.node(np.asarray(node.fixed_in, bool), np.asarray(node.fixed_out, bool),
                             self.k))
            if fixings:
                if wb is None:
                    claim = -math.inf
                else:
                    values, lowers = fixing_regions(wb, base_in, base_out, self.k, fixings)
                    claim = min(claim, float(claim_lower_array(values, lowers).min()))
        elif leaf or fixings:  # a branched node with fixings always keeps its witness
            claim = -math.inf
        # the claim is counted before the record exists: a Ctrl-C in between leaves the node
        # open in the engine, and finish() records it (again) with the same claim
        self.min_claim = min(self.min_claim, claim)
        status = RECORD_STATUS[BRANCHED if not leaf else
                               (node.status if node.status != BRANCHED else OPEN)]
        self._buf.append((node.id, -1 if node.parent is None else node.parent,
                          -1 if node.branch_var is None else node.branch_var,
                          0 if node.branch_value is None else node.branch_value,
                          status, bool(fixings), wkind, wslot))
        if len(self._buf) >= _FLUSH:
            self._flush()
        self.n_closed += 1
        spent = time.perf_counter() - t0
        self.seconds += spent
        if leaf and not fixings:
            self._plain_seconds += spent
            self._n_plain += 1

    def _flush(self) -> None:
        if self._buf:
            rows = np.array(self._buf, dtype=NODE_DTYPE)
            self._append(self._nodes, rows.tobytes())  # (a record written twice counts once)
            self._buf = []

    def _append(self, stream: _Stream, data: bytes) -> None:
        stream.write(data)
        if self._held is not None:
            self._held += len(data)
            if self._held > _MEMORY_BYTES:
                self._spill()

    def _folder(self) -> str:
        """The temporary folder (made the first time)."""
        if self.dir is None:
            self.dir = tempfile.mkdtemp(prefix="sparsecert-proof-", dir=self.directory)
        return self.dir

    def _spill(self) -> None:
        """Move the streams to files in the temporary folder."""
        folder = self._folder()
        for name, stream in self._streams():
            stream.spill(os.path.join(folder, name))
        self._held = None

    def _streams(self) -> tuple[tuple[str, _Stream], ...]:
        return (("nodes", self._nodes), ("dual", self._dual), ("shifted", self._shifted))

    def _witness(self, witness, base_out) -> tuple[_Entry, tuple[int, int]]:
        """The cached entry of a witness with terms on (at least) the columns not in
        ``base_out``, and its (kind code, slot), written the first time."""
        need = ~np.asarray(base_out, dtype=bool)
        entry = self._cache.get(witness.id)
        if entry is not None:
            self._cache.move_to_end(witness.id)
            if entry.cols is not None and (need & ~entry.cols).any():
                entry = self._evaluate(entry.kind, entry.vector, entry.cols | need)
                self._cache[witness.id] = entry
        else:
            kind, vec = certificate_witness(self.ev, self.relaxation, witness)
            entry = self._evaluate(kind, vec, need)
            self._cache[witness.id] = entry
            if len(self._cache) > _CACHE:
                self._cache.popitem(last=False)
        if witness.cert is None:
            witness.cert = self._write(entry.kind, entry.vector)
        return entry, witness.cert

    def _evaluate(self, kind: str, vec: np.ndarray, cols: np.ndarray) -> _Entry:
        """Rigorous terms of a certificate witness on ``cols`` (a mask; all columns when most
        are asked for, or for a shifted witness)."""
        if kind == "shifted" or 4 * int(np.count_nonzero(cols)) >= 3 * self.p:
            return _Entry(kind, vec, None, self.ev.witness(kind, vec))
        return _Entry(kind, vec, cols, self.ev.witness(kind, vec, np.flatnonzero(cols)))

    def _write(self, kind: str, vec: np.ndarray) -> tuple[int, int]:
        """Append a witness row (its slot first) and return (kind code, slot)."""
        if kind == "dual":
            code, slot, size, stream = 1, self.n_dual, self.n, self._dual
            self.n_dual += 1
        else:
            code, slot, size, stream = 2, self.n_shifted, self.p, self._shifted
            self.n_shifted += 1
        row = np.empty(size + 1)
        row[1:] = vec
        row[:1].view(np.int64)[0] = slot
        self._append(stream, row.tobytes())
        return code, slot

    def reserve(self, n_open: int) -> float:
        """Seconds to keep for :meth:`finish` (the open nodes' claims, the final file, a copy of
        it), estimated from the nodes closed so far."""
        if self._n_plain >= 16:  # an open node is recorded like a leaf without fixings
            per = self._plain_seconds / self._n_plain
        elif self.n_closed >= 16:
            per = self.seconds / self.n_closed
        else:
            per = _DEFAULT_PER_NODE
        n_nodes = self.n_closed + n_open
        size = proof_size(n_nodes, self.n_dual + n_open, self.n_shifted, self.p * self.n_shifted,
                          self.n)
        return 0.5 + 1.5 * per * n_open + 3.0 * size / _WRITE_RATE + 2e-6 * n_nodes

    # -- after the search -------------------------------------------------------------------
    def finish(self, live: Iterable, note: Callable[[str], None] | None = None) -> ProofFile:
        """Record the nodes the engine still holds (``live``: the open frontier, and any node a
        Ctrl-C left between two steps), then write the final proof file in preorder."""
        self._flush()
        recorded = self._nodes.array(NODE_DTYPE)
        ids = np.unique(recorded["id"])
        live = [nd for nd in live if not _contains(ids, nd.id)]
        parents = np.unique(np.concatenate([recorded["parent"],
                                            np.array([nd.parent for nd in live
                                                      if nd.parent is not None],
                                                     dtype=np.int64)]))
        for i, nd in enumerate(live):
            if note is not None and i % 1000 == 0:
                note(f"certificate: the open nodes, {i:,} of {len(live):,}")
            self.closed(nd, leaf=not _contains(parents, nd.id))
        self._flush()
        if note is not None:
            note("certificate: the proof file")
        rows = self._nodes.array(NODE_DTYPE)
        _, first = np.unique(rows["id"], return_index=True)
        rows = rows[np.sort(first)]  # each node once
        tree = tree_order(rows["id"], rows["parent"], rows["bvar"], rows["bval"])
        wkind = rows["wkind"].astype(np.int64)
        wslot = rows["wslot"].copy()
        used = {}
        for code in (1, 2):  # the slots the records use, renumbered densely in order
            sel = wkind == code
            old = np.unique(wslot[sel])
            used[code] = old
            wslot[sel] = np.searchsorted(old, wslot[sel])
        records = pack_records(tree, rows["status"], rows["derive"].astype(bool), wkind, wslot)
        del rows
        nnz_per = self._shifted_nnz(used[2])
        counts = ProofCounts(n_nodes=len(records), n_dual=int(used[1].size),
                             n_shifted=int(used[2].size), shifted_nnz=int(nnz_per.sum()),
                             n_samples=self.n, n_features=self.p)
        offsets = np.zeros(counts.n_shifted + 1, dtype=np.int64)
        offsets[1:] = np.cumsum(nnz_per)
        path = data = None
        if self._held is not None and counts.size <= _MEMORY_BYTES:
            fh = io.BytesIO()
        else:
            path = os.path.join(self._folder(), "certificate" + PROOF_SUFFIX)
            fh = open(path, "wb")
        with fh:
            sha, size = write_proof(
                fh, counts, _chunks(records), self._dual_rows(used[1]), offsets,
                (v for v, _ in self._shifted_rows(used[2])),
                (i for _, i in self._shifted_rows(used[2])))
            if path is None:
                data = fh.getvalue()
        for _, stream in self._streams():
            stream.close()
            if stream.path is not None:
                os.remove(stream.path)
        self.finished = True
        return ProofFile(path=path, sha256=sha, size=size, counts=counts,
                         tree=tree_summary(records, tree.depth), min_claim=self.min_claim,
                         data=data, folder=self.dir)

    def _rows(self, stream: _Stream, width: int, used: np.ndarray) -> Iterator[np.ndarray]:
        """The rows (slot first, then ``width`` values) of a witness stream whose slot is in
        ``used``, each once, in the order written (the slots' order)."""
        if used.size == 0:
            return
        last = -1
        rows = max(1, _READ_BYTES // (8 * (width + 1)))
        with stream.reader() as fh:
            while raw := fh.read(8 * (width + 1) * rows):
                block = np.frombuffer(raw, dtype=np.float64).reshape(-1, width + 1)
                slots = block[:, 0].view(np.int64)
                keep = _contains_all(used, slots) & (slots > last)
                if keep.any():
                    last = int(slots[keep].max())
                    yield block[keep, 1:]

    def _dual_rows(self, used: np.ndarray) -> Iterator[np.ndarray]:
        yield from self._rows(self._dual, self.n, used)

    def _shifted_nnz(self, used: np.ndarray) -> np.ndarray:
        out = [np.count_nonzero(b, axis=1) for b in self._rows(self._shifted, self.p, used)]
        return np.concatenate(out).astype(np.int64) if out else np.zeros(0, dtype=np.int64)

    def _shifted_rows(self, used: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for block in self._rows(self._shifted, self.p, used):
            nz = np.nonzero(block)
            yield block[nz], nz[1].astype(np.uint32)

    def discard(self) -> None:
        """Drop the streams and remove the temporary folder, if any (a search abandoned
        without a certificate)."""
        for _, stream in self._streams():
            try:
                stream.close()
            except OSError:
                pass
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)


def _contains(sorted_ids: np.ndarray, value: int) -> bool:
    i = int(np.searchsorted(sorted_ids, value))
    return i < sorted_ids.size and int(sorted_ids[i]) == value


def _contains_all(sorted_ids: np.ndarray, values: np.ndarray) -> np.ndarray:
    i = np.minimum(np.searchsorted(sorted_ids, values), sorted_ids.size - 1)
    return sorted_ids[i] == values


def _chunks(records: np.ndarray, size: int = 1 << 16) -> Iterator[np.ndarray]:
    for i in range(0, len(records), size):
        yield records[i:i + size]
