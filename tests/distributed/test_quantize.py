"""Tests of the unbiased (layer-wise, adaptive) quantizers and their bitstream codes."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from sparsecert.distributed.message import Message
from sparsecert.distributed.quantize import (
    CODES,
    LayerMap,
    Quantizer,
    global_adaptive,
    global_uniform,
    layerwise_adaptive,
    layerwise_uniform,
    levels_variance,
    optimize_levels,
    quantization_variance,
    uniform_levels,
)
from sparsecert.distributed.quantize_codes import (
    bits,
    bits_from_histogram,
    dequantize,
    histogram,
    histogram_of,
    quantize,
    read,
    read_add,
    write,
)

SIZES = (40, 12, 4)


def multiscale(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.normal(0.01, 0.02, SIZES[0]), rng.normal(0, 0.3, SIZES[1]),
                           rng.normal(0, 3.0, SIZES[2])])


def all_quantizers(s: int = 2, code: str = "fixed") -> list[Quantizer]:
    d = sum(SIZES)
    return [global_uniform(d, s, code), global_adaptive(d, s, code),
            layerwise_uniform(SIZES, s, code), layerwise_adaptive(SIZES, s, code)]


def brute_force_variance(v: np.ndarray, sizes, levels_per_layer) -> float:
    """Reference: per coordinate, the two outcomes r*l_lo and r*l_hi with their probabilities
    (levels found by a plain scan), variance p (1 - p) (r (l_hi - l_lo))^2."""
    return float(np.sum(brute_force_coordinate_variance(v, sizes, levels_per_layer)))


def brute_force_coordinate_variance(v, sizes, levels_per_layer) -> np.ndarray:
    out, start = [], 0
    for size, lv in zip(sizes, levels_per_layer, strict=True):
        block = v[start:start + size]
        start += size
        r = float(np.float32(np.linalg.norm(block)))
        if r < np.linalg.norm(block):
            r = float(np.nextafter(np.float32(r), np.float32(np.inf)))
        for x in block:
            u = abs(x) / r if r > 0 else 0.0
            for a, b in itertools.pairwise(lv):
                if a <= u <= b:
                    break
            p = (u - a) / (b - a)
            out.append(p * (1 - p) * (r * (b - a)) ** 2)
    return np.asarray(out)


def _sizes_levels(q: Quantizer):
    if q.lmap.n_layers == 1:
        return (q.dim,), [q.levels[0]]
    return SIZES, [q.levels[t] for t in q.lmap.types]


@pytest.mark.parametrize("s", [2, 9])  # the fixed-length cell search and the binary one
@pytest.mark.parametrize("kind", range(4))
def test_monte_carlo_unbiased_and_variance(kind, s):
    v = multiscale(1)
    q = all_quantizers(s=s)[kind]
    if q.adaptive:
        q.adapt(v)
    rng = np.random.default_rng(7)
    n = 4000
    samples = np.stack([dequantize(q, quantize(q, v, rng)) for _ in range(n)])
    mean = samples.mean(axis=0)
    # per-coordinate standard deviation of the two-point distribution (brute-force reference)
    sd = np.sqrt(brute_force_coordinate_variance(v, *_sizes_levels(q)))
    assert np.all(np.abs(mean - v) <= 5.0 * sd / np.sqrt(n) + 1e-12 * np.abs(v))
    # the pooled standardised error is N(0, 1) under unbiasedness
    moving = sd > 0
    zsum = np.sum((mean[moving] - v[moving]) / (sd[moving] / np.sqrt(n))) / np.sqrt(moving.sum())
    assert abs(zsum) < 5.0
    # total squared error: Monte-Carlo mean against the formula (CLT bound)
    err = np.sum((samples - v) ** 2, axis=1)
    formula = quantization_variance(v, q.lmap, q.levels)
    assert abs(err.mean() - formula) < 5 * err.std(ddof=1) / np.sqrt(n)


def test_variance_formula_matches_brute_force():
    v = multiscale(2)
    for q in all_quantizers(s=3):
        if q.adaptive:
            q.adapt(v)
        ref = brute_force_variance(v, *_sizes_levels(q))
        assert quantization_variance(v, q.lmap, q.levels) == pytest.approx(ref, rel=1e-12)


def test_optimize_levels_exact_for_one_level():
    rng = np.random.default_rng(3)
    u = rng.beta(0.5, 3.0, 60)
    w = rng.uniform(0.5, 2.0, 60)
    lv, val = optimize_levels(u, w, 1)
    # the objective in the single level is piecewise linear with kinks at the samples
    brute = min(levels_variance(u, w, np.array([0.0, x, 1.0])) for x in u if 0 < x < 1)
    assert val == pytest.approx(brute, rel=1e-6)
    assert val <= levels_variance(u, w, uniform_levels(1))


def test_optimize_levels_near_brute_force_for_two_levels():
    rng = np.random.default_rng(4)
    u = np.sort(rng.beta(0.7, 2.0, 30))
    w = np.ones_like(u)
    _, val = optimize_levels(u, w, 2)
    brute = min(levels_variance(u, w, np.array([0.0, a, b, 1.0]))
                for a, b in itertools.combinations(u, 2) if 0 < a < b < 1)
    assert brute <= val * (1 + 1e-6)
    assert val <= brute * 1.02  # coordinate descent with restarts: within 2% of the optimum


def test_levels_strictly_increasing_float32():
    u = np.array([0.0, 0.0, 0.5, 0.5, 0.5, 1.0])
    lv, _ = optimize_levels(u, None, 5)
    assert lv[0] == 0.0 and lv[-1] == 1.0 and np.all(np.diff(lv) > 0)
    assert np.array_equal(lv.astype(np.float32).astype(np.float64), lv)


def test_layerwise_optimal_variance_not_above_global():
    v = multiscale(5)
    d = v.size
    for s in (1, 2, 4):
        gq = global_adaptive(d, s)
        gq.adapt(v)
        g_var = quantization_variance(v, d, gq.levels[0])
        # constructive argument: the global grid R*l_j restricted to [0, r_l] (plus r_l itself)
        # is a feasible level set for layer l and refines it, so optimised per-layer levels
        # started from it can only be better
        R = np.linalg.norm(v)
        lm = LayerMap.make(SIZES)
        lw_levels = []
        for li, (a, b) in enumerate(itertools.pairwise(lm.offsets)):
            r = np.linalg.norm(v[a:b])
            inner = [x for x in gq.levels[0][1:-1] * R / r if x < 1][:s]
            while len(inner) < s:
                inner.append((1 + (inner[-1] if inner else 0)) / 2)
            init = np.array([0.0, *sorted(inner), 1.0])
            lq = Quantizer(b - a, s, adaptive=True, inits=("uniform", "exponential", "quantile"))
            lq.levels = [init]
            lq.adapt(v[a:b])
            lw_levels.append(lq.levels[0])
            del li
        lw_var = quantization_variance(v, SIZES, lw_levels)
        assert lw_var <= g_var * (1 + 1e-6)
        # and the packaged layer-wise adaptive quantizer on its own
        lwq = layerwise_adaptive(SIZES, s)
        lwq.adapt(v)
        assert quantization_variance(v, SIZES, lwq.levels) <= g_var * (1 + 1e-6)


def _gamma_reference_bits(values) -> str:
    return "".join("0" * (int(n).bit_length() - 1) + format(int(n), "b") for n in values)


@pytest.mark.parametrize("code", CODES)
@pytest.mark.parametrize("kind", range(4))
def test_encode_decode_round_trip(code, kind):
    v = multiscale(6)
    enc = all_quantizers(s=2, code=code)[kind]
    dec = enc.clone()
    for step in range(3):
        if enc.adaptive and step != 1:
            enc.adapt(v * (1 + step))
        # quantize-then-pack and the fused encoder draw the same randomness
        qv = quantize(enc.clone(), v * (1 + step), np.random.default_rng(step))
        msg, out_rt = enc.roundtrip(v * (1 + step), np.random.default_rng(step))
        assert isinstance(msg, Message)
        assert msg == write(enc, qv)
        assert msg.n_bits == bits(enc, qv, code) == bits(enc, qv)
        assert len(msg.payload) == (msg.n_bits + 7) // 8
        if code == "fixed":
            assert msg.n_bits == enc.fixed_bits(with_levels=qv.new_levels is not None)
        qv2 = read(dec.clone(), msg)
        assert np.array_equal(qv2.index, qv.index)
        assert np.array_equal(qv2.norms, qv.norms)
        nz = qv.index > 0
        assert np.array_equal(qv2.negative[nz], qv.negative[nz])
        out = dec.decode(msg)
        assert np.array_equal(out, dequantize(enc, qv))
        assert np.array_equal(out_rt, out)
        for a, b in zip(dec.levels, enc.levels, strict=True):
            assert np.array_equal(a, b)
        # the sizes under the other codes, from the decoder's index counts
        acc = np.zeros(enc.dim)
        hist, with_levels = read_add(dec.clone(), msg, acc)
        assert np.array_equal(acc, out)
        assert with_levels == (qv.new_levels is not None)
        for other in CODES:
            assert bits_from_histogram(enc, hist, with_levels, other) == \
                write(enc, qv, other).n_bits


def test_gamma_stream_matches_reference_bits():
    v = multiscale(9)
    q = global_uniform(v.size, 6, "gamma")
    qv = quantize(q.clone(), v, np.random.default_rng(0))
    msg = q.encode(v, np.random.default_rng(0))
    bits = "".join(str(b) for b in np.unpackbits(np.frombuffer(msg.payload, np.uint8)))
    start = 32  # one float32 norm (a non-adaptive quantizer sends no level flag)
    body = _gamma_reference_bits(qv.index + 1)
    assert bits[start:start + len(body)] == body
    signs = "".join("1" if n else "0" for n in qv.negative[qv.index > 0])
    assert bits[start + len(body): msg.n_bits] == signs
    norm = np.frombuffer(int(bits[0:32], 2).to_bytes(4, "big"), ">f4")[0]
    assert norm == np.float32(qv.norms[0])


def test_huffman_code_is_near_entropy():
    rng = np.random.default_rng(10)
    v = rng.standard_normal(3000) * np.where(rng.random(3000) < 0.1, 5.0, 0.1)
    q = global_uniform(v.size, 14, "huffman")
    qv = quantize(q, v, rng)
    msg = write(q, qv)
    p = np.bincount(qv.index) / qv.index.size
    p = p[p > 0]
    entropy = -np.sum(p * np.log2(p)) * qv.index.size
    header = 32 + 5 * 16
    body = msg.n_bits - header - np.count_nonzero(qv.index)
    assert entropy <= body < entropy + qv.index.size
    assert msg.n_bits < q.fixed_bits()


def test_bad_inputs():
    q = layerwise_uniform(SIZES, 2)
    with pytest.raises(ValueError, match="shape"):
        quantize(q, np.zeros(3), np.random.default_rng(0))
    bad = multiscale(0)
    bad[3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        quantize(q, bad, np.random.default_rng(0))
    with pytest.raises(ValueError, match="inner levels"):
        global_uniform(10, 31)
    with pytest.raises(ValueError, match="code"):
        global_uniform(10, 2, code="zip")
    with pytest.raises(ValueError, match="layer sizes"):
        LayerMap.make([3, 0])
    with pytest.raises(ValueError, match="increase"):
        quantization_variance(np.ones(4), 4, np.array([0.0, 0.6, 0.4, 1.0]))
    with pytest.raises(ValueError, match="non-adaptive"):
        q.adapt(multiscale(0))
    msg = q.encode(multiscale(0), np.random.default_rng(0))
    with pytest.raises(ValueError, match="bits"):
        q.clone().decode(Message(msg.payload[:-2], msg.n_bits - 16))
    ad = layerwise_adaptive(SIZES, 2)
    msg = ad.encode(multiscale(0), np.random.default_rng(0))
    with pytest.raises(ValueError, match="truncated|trailing"):
        ad.clone().decode(Message(msg.payload[:-2], msg.n_bits - 16))
    with pytest.raises(ValueError, match="truncated|trailing"):
        ad.clone().decode(Message(msg.payload + b"\0", msg.n_bits + 8))
    with pytest.raises(ValueError, match="samples"):
        optimize_levels(np.array([0.2, 1.5]), None, 2)
    with pytest.raises(ValueError, match="overflows"):
        q.encode(np.full(q.dim, 1e300), np.random.default_rng(0))
    # s = 1: 3 symbols in 2-bit indices, so the index 3 cannot occur in a valid stream
    one = layerwise_uniform(SIZES, 1)
    msg = one.encode(multiscale(0), np.random.default_rng(0))
    body = bytearray(msg.payload)
    body[32 * len(SIZES) // 8] |= 0b0110_0000  # the first coordinate's index bits -> 11
    with pytest.raises(ValueError, match="corrupt"):
        one.clone().decode(Message(bytes(body), msg.n_bits))


def test_corrupt_headers_are_refused_before_touching_the_sum():
    from sparsecert.distributed.bitstream import BitWriter

    q = layerwise_adaptive((3, 2), 2)
    b = q.index_bits

    def message(levels, norms):
        w = BitWriter()
        w.uints([1], 1)
        w.float32s(levels)
        w.float32s(norms)
        w.uints(np.zeros(5, dtype=np.int64), 1 + b)
        return w.message()

    good = message([0.2, 0.5, 0.1, 0.7], [1.0, 2.0])
    out = np.zeros(5)
    read_add(q.clone(), good, out)
    assert np.array_equal(out, np.zeros(5))  # every index 0 decodes to 0
    for levels, norms, match in (([0.5, 0.2, 0.1, 0.7], [1.0, 2.0], "levels"),
                                 ([0.2, 1.0, 0.1, 0.7], [1.0, 2.0], "levels"),
                                 ([0.2, np.nan, 0.1, 0.7], [1.0, 2.0], "levels"),
                                 ([0.2, 0.5, 0.1, 0.7], [-1.0, 2.0], "norms"),
                                 ([0.2, 0.5, 0.1, 0.7], [np.inf, 2.0], "norms")):
        dec = q.clone()
        acc = np.ones(5)
        with pytest.raises(ValueError, match=match):
            read_add(dec, message(levels, norms), acc)
        assert np.array_equal(acc, np.ones(5))
        assert np.array_equal(dec.levels[0], q.levels[0])


@pytest.mark.parametrize("code", CODES)
def test_zero_layer_round_trip(code):
    v = multiscale(11)
    v[SIZES[0]:SIZES[0] + SIZES[1]] = 0.0  # a whole layer of zeros
    q = layerwise_adaptive(SIZES, 3, code)
    q.adapt(v)
    qv = quantize(q.clone(), v, np.random.default_rng(0))
    msg = q.encode(v, np.random.default_rng(0))
    out = q.clone().decode(msg)
    assert np.all(out[SIZES[0]:SIZES[0] + SIZES[1]] == 0.0)
    assert qv.norms[1] == 0.0
    assert np.array_equal(out, dequantize(q, qv))


@pytest.mark.parametrize("s", [0, 1, 2, 6, 7, 14, 30])
def test_fixed_code_kernels_against_the_generic_reader(s):
    """Odd layer sizes, one- and two-code decoding paths (codes of 2..6 bits)."""
    sizes = (7, 1, 4, 3)
    rng = np.random.default_rng(s)
    v = rng.standard_normal(sum(sizes)) * np.repeat([0.01, 5.0, 1.0, 0.1], sizes)
    q = layerwise_adaptive(sizes, s)
    q.adapt(v)
    msg, out = q.roundtrip(v, np.random.default_rng(1))
    qv = read(q.clone(), msg)  # generic BitReader path
    ref = q.clone()
    ref.levels = q.levels
    assert np.array_equal(out, dequantize(ref, qv))
    acc = np.zeros(q.dim)
    hist, with_levels = read_add(q.clone(), msg, acc)
    assert with_levels and np.array_equal(acc, out)
    assert np.array_equal(hist, histogram(q, qv))


@pytest.mark.parametrize("s", [0, 1, 2, 6, 7, 14])
def test_rounding_follows_the_rule_with_the_documented_uniforms(s):
    """Every index against the rule written out in numpy: ``u = min(|v_i| / r, 1)`` in the cell
    ``[l_lo, l_lo+1]`` (``searchsorted``), rounded up iff ``l_lo + U_i (l_lo+1 - l_lo) < u``
    (probability ``(u - l_lo) / (l_lo+1 - l_lo)``) with ``U_i`` the i-th SplitMix64 uniform of
    the message seed (``uniform``); ties closer than 1e-12 are not judged. Both kernels: the
    threshold count (``s <= 6``) and the binary search."""
    from sparsecert.distributed.quantize_kernels import layer_norms, uniform

    sizes = (700, 33, 5, 4)
    rng = np.random.default_rng(s)
    v = rng.standard_normal(sum(sizes)) * np.repeat([0.01, 5.0, 1.0, 0.0], sizes)
    q = layerwise_adaptive(sizes, s)
    q.adapt(v)
    lv = np.stack(q.levels)[q.lmap.type_of]
    v[3] = layer_norms(v, q.lmap.offsets)[0] * lv[3, min(s, 1)]  # (about) on a level
    r = np.repeat(layer_norms(v, q.lmap.offsets), sizes)
    qv = quantize(q, v, np.random.default_rng(5))
    seed = np.random.default_rng(5).integers(0, 2**64, dtype=np.uint64)  # the message seed
    u = np.minimum(np.abs(v) / np.where(r > 0, r, 1.0), 1.0)
    lo = np.array([min(np.searchsorted(lv[i], u[i], side="right") - 1, s) for i in range(v.size)])
    a, b = lv[np.arange(v.size), lo], lv[np.arange(v.size), lo + 1]
    unif = np.array([uniform(seed, i) for i in range(v.size)])
    threshold = a + unif * (b - a)
    want = lo + (threshold < u)
    clear = np.abs(threshold - u) > 1e-12
    assert clear.mean() > 0.99
    assert np.array_equal(qv.index[clear], want[clear])
    assert np.array_equal(qv.negative, v < 0)


@pytest.mark.parametrize("s", [0, 1, 2, 3, 5, 6])
def test_binary_search_rounding_is_the_threshold_count(s):
    """The block rounding finds the number of thresholds ``l_j + U (l_{j+1} - l_j)`` below
    ``u`` by a binary search: against the count written out in numpy, with ``u`` on levels,
    on thresholds, at 0 and 1, and uniforms at 0 and just below 1. A table where a level plus
    its gap is not the next level goes the scalar way (``round_one``)."""
    from sparsecert.distributed.quantize_kernels import (
        _exact_gaps,
        _round_block,
        fill_codes,
        layer_norms,
        round_one,
    )

    rng = np.random.default_rng(s)
    q = layerwise_adaptive((64,), s)
    q.adapt(rng.standard_normal(64) ** 3)
    lvp, gap = q._ptab[0], q._pgap[0]
    assert _exact_gaps(lvp, gap, s)
    lv = q.levels[0]
    n = 4000
    unif = rng.random(n)
    unif[:50] = 0.0
    unif[50:100] = 1.0 - 2.0**-53
    u = rng.random(n) * rng.choice([1.0, lv[1]], n)
    u[100:300] = rng.choice(lv, 200)  # on a level
    cell = rng.integers(0, s + 1, 200)
    u[300:500] = lv[cell] + unif[300:500] * (lv[cell + 1] - lv[cell])  # on a threshold
    u[500:520] = 1.0
    codes = np.empty(n, dtype=np.uint8)
    width = (s + 1).bit_length()
    _round_block(-u, 1.0, lvp, gap, unif, width, codes, s)
    thresholds = lvp[None, :s + 1] + unif[:, None] * gap[None, :s + 1]
    want = (thresholds < u[:, None]).sum(axis=1)
    assert np.array_equal(codes & ((1 << width) - 1), want)
    assert np.array_equal(codes >> width, (u > 0).astype(np.uint8))  # -0.0 is not negative
    # a table whose level plus gap overshoots the next level: the scalar way (round_one)
    bad_gap = gap.copy()
    bad_gap[s] *= 1 + 2.0**-20
    assert not _exact_gaps(lvp, bad_gap, s)
    v = rng.standard_normal(700)
    offsets = np.array([0, 700])
    norms = layer_norms(v, offsets)
    codes = np.empty(700, dtype=np.uint8)
    fill_codes(v, norms, offsets, np.zeros(1, dtype=np.int64), lvp[None], bad_gap[None],
               np.uint64(9), s, width, codes)
    want = [round_one(x, norms[0], lvp, bad_gap, np.uint64(9), i, s) for i, x in enumerate(v)]
    assert np.array_equal(codes & ((1 << width) - 1), want)


@pytest.mark.parametrize("nb", range(1, 8))
def test_pack_and_unpack_codes_against_bit_strings(nb):
    from sparsecert.distributed.bitstream import pack_codes, unpack_codes

    rng = np.random.default_rng(nb)
    for offset, n in itertools.product(range(9), (0, 1, 7, 8, 9, 16, 23, 41)):
        head = rng.integers(0, 2, offset)
        codes = rng.integers(0, 2**nb, n).astype(np.uint8)
        bits = "".join(map(str, head)) + "".join(format(int(c), f"0{nb}b") for c in codes)
        buf = np.zeros((len(bits) + 7) // 8 + 1, dtype=np.uint8)
        for i, ch in enumerate(head):
            buf[i // 8] |= int(ch) << (7 - i % 8)
        end = pack_codes(codes, nb, buf, offset)
        assert end == len(bits)
        want = np.packbits(np.array([int(ch) for ch in bits], dtype=np.uint8))
        assert np.array_equal(buf[:want.size], want) and not buf[want.size:].any()
        back = np.empty(n, dtype=np.uint8)
        unpack_codes(buf[:want.size].copy(), offset, nb, back)  # the exact stream length
        assert np.array_equal(back, codes)


def test_out_of_range_index_refused_before_touching_the_sum():
    from sparsecert.distributed.bitstream import BitWriter

    q = layerwise_uniform((9, 4), 1)  # 3 levels: index 3 fits in the 2 bits but is invalid
    w = BitWriter()
    w.float32s([1.0, 2.0])
    w.uints(np.array([1] * 12 + [3]), 3)
    acc = np.ones(13)
    with pytest.raises(ValueError, match="out of range"):
        read_add(q.clone(), w.message(), acc)
    assert np.array_equal(acc, np.ones(13))


def test_histogram_of_counts_without_decoding():
    v = multiscale(3)
    enc = layerwise_adaptive(SIZES, 2)
    dec = enc.clone()
    for step in range(2):
        if step == 0:
            enc.adapt(v)
        msg = enc.encode(v, np.random.default_rng(step))
        before = [lv.copy() for lv in dec.levels]
        hist, with_levels = histogram_of(dec, msg)
        assert all(np.array_equal(a, b) for a, b in zip(before, dec.levels, strict=True))
        acc = np.zeros(enc.dim)
        hist2, with2 = read_add(dec, msg, acc)
        assert np.array_equal(hist, hist2) and with_levels == with2 == (step == 0)
        assert read_add(dec, enc.encode(v, np.random.default_rng(9)), acc, count=False)[0] is None


@pytest.mark.parametrize("s", [0, 1, 2, 6, 14])
@pytest.mark.parametrize("sizes", [(7, 1, 4, 3), (3, 20, 1, 13, 16), (2045, 6, 2111),
                                   (4097, 3, 4100)])  # the last: whole-byte tables (4-bit codes)
@pytest.mark.parametrize("n_senders", [1, 2, 3, 6])
def test_decode_sum_equals_messages_added_one_by_one(s, sizes, n_senders):
    """The one-call decoder of several senders' messages against each decoder's own
    ``decode`` added in order: the same sums bit for bit (signs of zeros included), into a
    zero sum (where the first two messages are one look-up; also with ``zeroed=True``, the
    zero sum stated instead of checked) and into a non-zero one, and the same levels taken
    up."""
    from sparsecert.distributed.round_decoder import RoundDecoder, decode_sum

    rng = np.random.default_rng(s)
    q = layerwise_adaptive(sizes, s)
    encs = [q.clone() for _ in range(n_senders)]
    fused = [q.clone() for _ in range(n_senders)]
    single = [q.clone() for _ in range(n_senders)]
    generic = [q.clone() for _ in range(n_senders)]
    stated = RoundDecoder([q.clone() for _ in range(n_senders)])  # zeroed=True on zero sums
    for step in range(3):
        msgs = []
        for k, enc in enumerate(encs):
            v = rng.standard_normal(q.dim) * np.repeat(rng.uniform(0.01, 5, len(sizes)), sizes)
            v[rng.random(q.dim) < 0.2] *= 1e-9  # many zero indices of either sign
            if step != 1 and k != 2:
                enc.adapt(v)
            msgs.append(enc.encode(v, rng))
        out = rng.standard_normal(q.dim) if step == 1 else np.zeros(q.dim)
        want = out.copy()
        out_stated = out.copy()
        for dec, msg in zip(single, msgs, strict=True):
            want += dec.decode(msg)
        ref = out.copy()  # the generic (pure numpy) reader, one message after the other
        for dec, msg in zip(generic, msgs, strict=True):
            ref += dequantize(dec, read(dec, msg))
        assert np.array_equal(ref.view(np.uint64), want.view(np.uint64))
        strided = np.zeros((q.dim, 2))  # the same into a non-contiguous view
        strided[:, 0] = out
        decode_sum([dec.clone() for dec in fused], msgs, strided[:, 0])
        decode_sum(fused, msgs, out)
        assert np.array_equal(out.view(np.uint64), want.view(np.uint64))
        stated(msgs, out_stated, zeroed=step != 1)  # the table of sums without the check
        assert np.array_equal(out_stated.view(np.uint64), want.view(np.uint64))
        assert np.array_equal(strided[:, 0], want) and not strided[:, 1].any()
        hist, _ = histogram_of(single[0], msgs[0])  # counted block by block
        assert np.array_equal(hist, histogram(q, read(single[0].clone(), msgs[0])))
        for a, b in zip(fused, single, strict=True):
            assert all(np.array_equal(x, y) for x, y in zip(a.levels, b.levels, strict=True))


def test_decode_sum_refuses_a_corrupt_message_before_changing_anything():
    from sparsecert.distributed.round_decoder import decode_sum

    v = multiscale(4)
    encs = [layerwise_adaptive(SIZES, 2) for _ in range(3)]
    for enc in encs:
        enc.adapt(v)
    msgs = [enc.encode(v, np.random.default_rng(0)) for enc in encs]
    msgs[1] = Message(msgs[1].payload[:-1], msgs[1].n_bits - 8)
    decs = [enc.clone() for enc in encs]
    for dec in decs:
        dec.levels = [uniform_levels(2)] * 3
    out = np.ones(sum(SIZES))
    with pytest.raises(ValueError, match="message 1: truncated"):
        decode_sum(decs, msgs, out)
    assert np.array_equal(out, np.ones(sum(SIZES)))
    assert all(np.array_equal(lv, uniform_levels(2)) for dec in decs for lv in dec.levels)
    huff = [enc.with_code("huffman") for enc in encs]  # other codes: message by message
    msgs = [enc.encode(v, np.random.default_rng(1)) for enc in huff]
    out = np.zeros(sum(SIZES))
    decode_sum([h.clone() for h in huff], msgs, out)
    want = sum(h.clone().decode(m) for h, m in zip(huff, msgs, strict=True))
    assert np.allclose(out, want, rtol=1e-12, atol=0)


@pytest.mark.parametrize("bitgen", [np.random.PCG64, np.random.PCG64DXSM, np.random.MT19937])
def test_message_seed_is_the_documented_draw(bitgen):
    """The per-message seed is ``rng.integers(0, 2**64, dtype=uint64)`` whatever the bit
    generator (from PCG64 it is read as the raw output: the same value and stream)."""
    a, b = np.random.Generator(bitgen(3)), np.random.Generator(bitgen(3))
    got = [Quantizer._seed(a) for _ in range(50)]
    want = [b.integers(0, 2**64, dtype=np.uint64) for _ in range(50)]
    assert got == want and a.random() == b.random()


def test_round_decoder_over_many_rounds_equals_decoding_one_by_one():
    """One RoundDecoder kept over rounds (levels arriving in messages, levels set on a decoder
    from outside, a corrupt round refused without changing anything) against fresh decoders
    that decode every message in turn."""
    from sparsecert.distributed.round_decoder import RoundDecoder

    rng = np.random.default_rng(11)
    q = layerwise_adaptive(SIZES, 2)
    encs = [q.clone() for _ in range(3)]
    keep = [q.clone() for _ in range(3)]
    single = [q.clone() for _ in range(3)]
    rd = RoundDecoder(keep)
    for step in range(5):
        msgs = []
        for k, enc in enumerate(encs):
            v = multiscale(10 * step + k)
            if (step + k) % 2 == 0:
                enc.adapt(v)
            msgs.append(enc.encode(v, rng))
        if step == 2:  # the same levels set from outside on both sides
            lv = [uniform_levels(2)] * 3
            keep[1].levels, single[1].levels = lv, lv
        if step == 3:  # a truncated message: refused, nothing changed
            bad = list(msgs)
            bad[2] = Message(msgs[2].payload[:-1], msgs[2].n_bits - 8)
            out = np.ones(q.dim)
            with pytest.raises(ValueError, match="message 2: truncated"):
                rd(bad, out)
            assert np.array_equal(out, np.ones(q.dim))
        out = np.zeros(q.dim)
        rd(msgs, out)
        want = np.zeros(q.dim)
        for dec, msg in zip(single, msgs, strict=True):
            want += dec.decode(msg)
        assert np.array_equal(out.view(np.uint64), want.view(np.uint64))
        for a, b in zip(keep, single, strict=True):
            assert all(np.array_equal(x, y) for x, y in zip(a.levels, b.levels, strict=True))


def test_layer_norms_are_the_float32_roundings_up_of_the_exact_norms():
    """Each layer norm (eight running sums of squares) is a float32 value at or above the
    exact norm (``math.fsum``) and the float32 value below it is under the exact norm (up to
    the float64 rounding of the sums), on layers of every size modulo 8, with one coordinate
    dominating or all equal."""
    from sparsecert.distributed.quantize_kernels import layer_norms

    rng = np.random.default_rng(11)
    sizes = (1, 2, 7, 8, 9, 15, 16, 17, 1000, 1003)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    for trial in range(20):
        v = rng.standard_normal(offsets[-1]) * 10.0 ** rng.uniform(-30, 30)
        if trial % 3 == 1:
            v[offsets[:-1]] *= 1e8  # the first coordinate of each layer dominates
        elif trial % 3 == 2:
            v[:] = 0.1
        norms = layer_norms(v, offsets)
        for li in range(len(sizes)):
            block = v[offsets[li]:offsets[li + 1]]
            exact = math.sqrt(math.fsum(float(x) * float(x) for x in block))
            r = norms[li]
            assert np.float64(np.float32(r)) == r
            assert r >= np.abs(block).max()
            assert r >= exact * (1 - 1e-13)
            below = float(np.nextafter(np.float32(r), np.float32(0)))
            assert below < exact * (1 + 1e-13)


def test_prefix_sums_are_numpys_cumulative_sums():
    """The one-pass prefix sums of the level optimiser equal numpy's ``cumsum`` of ``w``,
    ``w u`` and ``w u u`` bit for bit."""
    from sparsecert.distributed.levels import _prefix_sums

    rng = np.random.default_rng(4)
    for m in (0, 1, 5, 1000):
        us, ws = np.sort(rng.random(m)), rng.uniform(0.0, 3.0, m)
        got = _prefix_sums(us, ws)
        for g, want in zip(got, (ws, ws * us, ws * us * us), strict=True):
            assert g[0] == 0.0 and np.array_equal(g[1:], np.cumsum(want))


@pytest.mark.parametrize("code", CODES)
def test_code_sizes_are_the_sizes_of_the_other_encoders(code):
    """``code_sizes`` (QODA's book-keeping) against the same content written by encoders of
    each code (the same seed: the same rounding), without touching the decoder's levels."""
    from sparsecert.distributed.quantize_codes import code_sizes

    v = multiscale(5)
    enc = layerwise_adaptive(SIZES, 2, code)
    dec = enc.clone()
    for step in range(3):
        if step != 1:
            enc.adapt(v * (1 + step))
        others = {c: enc.with_code(c) for c in CODES}
        msg = enc.encode(v * (1 + step), np.random.default_rng(step))
        want = {c: q.encode(v * (1 + step), np.random.default_rng(step)).n_bits
                for c, q in others.items()}
        before = [lv.copy() for lv in dec.levels]
        assert code_sizes(dec, msg) == want
        assert all(np.array_equal(a, b) for a, b in zip(before, dec.levels, strict=True))
        dec.decode(msg)
