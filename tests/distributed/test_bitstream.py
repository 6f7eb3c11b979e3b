"""The one bit packer: codewords, readers and the entropy codes, against pure-Python references."""

from __future__ import annotations

import heapq
import itertools

import numpy as np
import pytest

from sparsecert.distributed.bitstream import (
    BitReader,
    BitWriter,
    canonical_codes,
    gamma_lengths,
    huffman_lengths,
    pack_codewords,
    pack_uints,
    unpack_uints,
)
from sparsecert.distributed.comm import Message
from sparsecert.distributed.compress import Identity, RandK, RandomQuantizer, TopK
from sparsecert.distributed.encoder import Encoder
from sparsecert.distributed.quantize import global_uniform, layerwise_adaptive


def _bitstring(values, lengths) -> str:
    return "".join(format(int(v), f"0{n}b")[-n:] if n else "" for v, n in
                   zip(values, lengths, strict=True))


def _stream_bits(msg: Message) -> str:
    return "".join(str(b) for b in np.unpackbits(np.frombuffer(msg.payload, np.uint8)))


@pytest.mark.parametrize("seed", range(4))
def test_pack_codewords_matches_reference_bitstring(seed):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 65, size=200)
    values = np.array([int(rng.integers(0, 2**63)) * 2 + int(rng.integers(0, 2))
                       for _ in lengths], dtype=np.uint64)
    payload, n_bits = pack_codewords(values, lengths)
    ref = _bitstring(values, lengths)
    assert n_bits == len(ref) and len(payload) == -(-n_bits // 8)
    got = _stream_bits(Message(payload, n_bits))
    assert got[:n_bits] == ref and set(got[n_bits:]) <= {"0"}


def test_bit_reader_reads_what_the_writer_wrote():
    rng = np.random.default_rng(1)
    w = BitWriter()
    a = rng.integers(0, 8, size=17)
    f = rng.standard_normal(3).astype(np.float32)
    g = rng.integers(0, 40, size=9)
    w.uints([1], 1)
    w.uints(a, 3)
    w.float32s(f)
    w.codewords(g + 1, gamma_lengths(g + 1))
    lengths = huffman_lengths(np.bincount(a, minlength=8))
    w.codewords(canonical_codes(lengths)[a], lengths[a])
    msg = w.message()
    assert msg.n_bits == w.n_bits
    rd = BitReader(msg)
    assert rd.uints(1, 1)[0] == 1
    assert np.array_equal(rd.uints(17, 3), a)
    assert np.array_equal(rd.float32s(3), f.astype(np.float64))
    assert np.array_equal(rd.gamma(9), g)
    assert np.array_equal(rd.huffman(17, lengths), a)
    rd.finish()
    with pytest.raises(ValueError, match="truncated"):
        rd.uints(1, 1)


def test_gamma_lengths_exact():
    n = np.array([1, 2, 3, 4, 7, 8, 2**31 - 1, 2**31, 2**40 + 5])
    ref = [2 * (int(x).bit_length() - 1) + 1 for x in n]
    assert gamma_lengths(n).tolist() == ref
    with pytest.raises(ValueError, match="positive"):
        gamma_lengths(np.array([0]))


def _huffman_cost_reference(freq) -> int:
    """Optimal prefix-code cost: sum of the merged weights (heap construction)."""
    heap = [int(f) for f in freq if f > 0]
    if len(heap) == 1:
        return heap[0]
    heapq.heapify(heap)
    cost = 0
    while len(heap) > 1:
        a, b = heapq.heappop(heap), heapq.heappop(heap)
        cost += a + b
        heapq.heappush(heap, a + b)
    return cost


@pytest.mark.parametrize("seed", range(6))
def test_huffman_lengths_optimal_and_prefix_free(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 33))
    freq = rng.integers(0, 50, size=n) * (rng.random(n) < 0.8)
    if not freq.any():
        freq[0] = 3
    lengths = huffman_lengths(freq)
    assert np.all((lengths > 0) == (freq > 0))
    assert int(freq @ lengths) == _huffman_cost_reference(freq)
    assert sum(2.0 ** -int(x) for x in lengths[lengths > 0]) <= 1.0  # Kraft
    codes = canonical_codes(lengths)
    words = [format(int(codes[i]), f"0{lengths[i]}b") for i in np.flatnonzero(lengths)]
    for i, u in enumerate(words):
        for j, t in enumerate(words):
            assert i == j or not t.startswith(u)


def test_unpack_checks_length_and_pack_checks_range():
    with pytest.raises(ValueError, match="bytes"):
        unpack_uints(b"\x00", 3, 5)
    with pytest.raises(ValueError, match="fit"):
        pack_uints(np.array([8]), 3)


ENCODERS = [
    lambda d: TopK(d, 3), lambda d: TopK(d, 3, "float64"), lambda d: RandK(d, 4),
    lambda d: RandK(d, 4, scaled=False), lambda d: Identity(d), lambda d: Identity(d, "float64"),
    lambda d: RandomQuantizer(d, 3), lambda d: global_uniform(d, 2, "huffman"),
    lambda d: layerwise_adaptive((8, 4), 2), lambda d: layerwise_adaptive((8, 4), 1, "gamma"),
]


@pytest.mark.parametrize("make", ENCODERS)
def test_every_encoder_follows_the_protocol(make):
    d = 12
    enc = make(d)
    assert isinstance(enc, Encoder) and enc.dim == d
    v = np.random.default_rng(0).standard_normal(d)
    if getattr(enc, "adaptive", False):
        enc.adapt(v)
    dec = enc.clone()
    msg, out = enc.roundtrip(v, np.random.default_rng(3))
    assert isinstance(msg, Message) and len(msg.payload) == -(-msg.n_bits // 8)
    if enc.message_bits is not None:
        assert msg.n_bits == enc.message_bits
    assert np.array_equal(dec.clone().decode(msg), out)
    acc = np.ones(d)
    dec.decode_add(msg, acc)
    assert np.array_equal(acc, np.ones(d) + out)
    if not enc.randomized:
        assert msg == make(d).encode(v)
    else:
        with pytest.raises(TypeError, match="Generator"):
            make(d).encode(v)


def test_fixed_width_fast_path_writes_the_general_packers_bits():
    """``pack_uints`` / ``unpack_uints`` (the fast fixed-width path, :func:`pack_codes`, for
    widths up to 8) against the general codeword packer, at every width and odd lengths."""
    from sparsecert.distributed.bitstream import pack_codes, pack_codewords, unpack_codes

    rng = np.random.default_rng(3)
    for width, n in itertools.product(range(1, 13), (0, 1, 3, 7, 8, 9, 17, 64, 101)):
        v = rng.integers(0, 1 << width, size=n)
        general = pack_codewords(v, np.full(n, width))[0] if n else b""
        assert pack_uints(v, width) == general, (width, n)
        assert np.array_equal(unpack_uints(general, n, width), v)
        if width <= 8 and n:  # the kernel itself, from a bit offset inside a byte
            for off in (0, 3, 7):
                head = pack_codewords(np.array([5]), np.array([off]))[0] if off else b""
                buf = np.zeros(-(-(off + n * width) // 8), dtype=np.uint8)
                buf[:len(head)] = np.frombuffer(head, np.uint8)
                pack_codes(v.astype(np.uint8), width, buf, off)
                want = pack_codewords(np.r_[5, v][int(off == 0):],
                                      np.r_[off, np.full(n, width)][int(off == 0):])[0]
                assert buf.tobytes() == want, (width, n, off)
                codes = np.empty(n, dtype=np.uint8)
                unpack_codes(buf, off, width, codes)
                assert np.array_equal(codes, v)
