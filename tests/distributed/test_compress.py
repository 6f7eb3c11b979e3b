"""Compressors: contractivity, unbiasedness, exact encodings and bit counts."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sparsecert.distributed.comm import Message
from sparsecert.distributed.compress import (
    Identity,
    RandK,
    RandomQuantizer,
    TopK,
    TopKLevels,
    index_bits,
    pack_uints,
    topk_indices,
    unpack_uints,
)


def _reference_topk(v: np.ndarray, k: int) -> np.ndarray:
    """Brute force: sort by (-|v_j|, j) and keep the first k."""
    order = sorted(range(v.size), key=lambda j: (-abs(v[j]), j))
    return np.array(sorted(order[:k]))


@pytest.mark.parametrize("d", [1, 2, 3, 7, 31, 32, 33, 200])
def test_index_bits_is_ceil_log2(d):
    assert index_bits(d) == (0 if d == 1 else math.ceil(math.log2(d)))
    assert d <= 2 ** index_bits(d) and (d == 1 or 2 ** (index_bits(d) - 1) < d)


@pytest.mark.parametrize("width", [1, 2, 3, 5, 8, 11, 17, 31])
@pytest.mark.parametrize("count", [1, 3, 64, 65, 300])
def test_pack_unpack_roundtrip(width, count):
    rng = np.random.default_rng(width * 1000 + count)
    vals = rng.integers(0, 2**width, size=count)
    data = pack_uints(vals, width)
    assert len(data) == math.ceil(count * width / 8)
    np.testing.assert_array_equal(unpack_uints(data, count, width), vals)


def test_pack_rejects_out_of_range():
    with pytest.raises(ValueError, match="fit"):
        pack_uints(np.array([4]), 2)
    with pytest.raises(ValueError, match="fit"):
        pack_uints(np.array([-1]), 3)


@pytest.mark.parametrize("seed", range(5))
def test_topk_selects_brute_force_set_with_ties(seed):
    rng = np.random.default_rng(seed)
    d = 40
    v = rng.integers(-3, 4, size=d).astype(float)  # many ties, including zeros and signs
    for k in (1, 2, 5, 13, 39, 40):
        np.testing.assert_array_equal(topk_indices(v, k), _reference_topk(v, k))


def test_topk_tie_breaking_lower_index():
    v = np.array([1.0, -1.0, 1.0, 0.5])
    np.testing.assert_array_equal(topk_indices(v, 1), [0])
    np.testing.assert_array_equal(topk_indices(v, 2), [0, 1])
    np.testing.assert_array_equal(topk_indices(np.zeros(5), 2), [0, 1])


@pytest.mark.parametrize("seed", range(20))
def test_topk_contractive(seed):
    rng = np.random.default_rng(seed)
    d = int(rng.integers(2, 300))
    k = int(rng.integers(1, d + 1))
    v = rng.standard_t(2, size=d) if seed % 2 else rng.normal(size=d)
    comp = TopK(d, k, value_dtype="float64")
    cv = comp.decode(comp.encode(v))
    lhs = np.sum((cv - v) ** 2)
    rhs = (1 - k / d) * np.sum(v**2)
    assert lhs <= rhs * (1 + 1e-12) + 1e-300
    assert comp.delta == k / d


def test_topk_contractive_equal_magnitudes_is_tight():
    d, k = 10, 3
    v = np.array([1.0, -1.0] * 5)
    comp = TopK(d, k, value_dtype="float64")
    cv = comp.decode(comp.encode(v))
    assert np.sum((cv - v) ** 2) == pytest.approx((1 - k / d) * np.sum(v**2), rel=1e-15)


@pytest.mark.parametrize("d,k", [(1, 1), (2, 1), (31, 1), (32, 5), (33, 33), (200, 10), (1000, 70)])
def test_topk_roundtrip_and_exact_bits(d, k):
    rng = np.random.default_rng(d + k)
    v = rng.normal(size=d)
    comp = TopK(d, k)
    msg = comp.encode(v)
    ib = 0 if d == 1 else math.ceil(math.log2(d))
    assert msg.n_bits == k * (32 + ib) == comp.message_bits
    assert len(msg.payload) == math.ceil(msg.n_bits / 8)
    out = comp.decode(msg)
    idx = _reference_topk(v, k)
    expect = np.zeros(d)
    expect[idx] = v[idx].astype(np.float32)
    np.testing.assert_array_equal(out, expect)
    # decode reads the payload: a fresh compressor with the same (d, k) decodes it too
    np.testing.assert_array_equal(TopK(d, k).decode(Message(bytes(msg.payload), msg.n_bits)),
                                  expect)


def test_topk_float64_lossless_at_k_equal_d():
    v = np.random.default_rng(0).normal(size=17)
    comp = TopK(17, 17, value_dtype="float64")
    msg = comp.encode(v)
    assert msg.n_bits == 17 * (64 + 5)
    np.testing.assert_array_equal(comp.decode(msg), v)


def test_topk_decoder_reads_bits_not_state():
    """Flipping an index bit in the payload moves the decoded value."""
    comp = TopK(16, 1, value_dtype="float32")
    v = np.zeros(16)
    v[3] = 2.5
    msg = comp.encode(v)
    payload = bytearray(msg.payload)
    payload[-1] ^= 0b0001_0000  # 4 index bits, MSB first: 0011 -> 0010
    out = comp.decode(Message(bytes(payload), msg.n_bits))
    assert out[2] == 2.5 and out[3] == 0.0


@pytest.mark.parametrize("d,k", [(5, 2), (31, 1), (200, 10)])
def test_randk_roundtrip_bits_and_support(d, k):
    rng = np.random.default_rng(1)
    v = rng.normal(size=d)
    for scaled in (True, False):
        comp = RandK(d, k, scaled=scaled)
        msg, out = comp.roundtrip(v, rng)
        assert msg.n_bits == k * (32 + index_bits(d))
        supp = np.flatnonzero(out)
        assert supp.size == k
        factor = d / k if scaled else 1.0
        np.testing.assert_allclose(out[supp], (v[supp] * factor).astype(np.float32), rtol=0)


def test_randk_same_generator_state_same_message():
    v = np.arange(20.0)
    a = RandK(20, 4).encode(v, np.random.default_rng(7))
    b = RandK(20, 4).encode(v, np.random.default_rng(7))
    assert a == b


def test_randk_scaled_unbiased_and_unscaled_contractive_in_expectation():
    d, k, n = 12, 3, 4000
    rng = np.random.default_rng(3)
    v = rng.normal(size=d)
    sc, un = RandK(d, k, value_dtype="float64"), RandK(d, k, scaled=False, value_dtype="float64")
    mean = np.zeros(d)
    err = 0.0
    for _ in range(n):
        mean += sc.decode(sc.encode(v, rng))
        err += np.sum((un.decode(un.encode(v, rng)) - v) ** 2)
    mean /= n
    # each coordinate: mean of n iid values with variance v_j^2 (d/k - 1)
    sd = np.abs(v) * math.sqrt(d / k - 1) / math.sqrt(n)
    assert np.all(np.abs(mean - v) <= 5 * sd + 1e-12)
    assert err / n == pytest.approx((1 - k / d) * np.sum(v**2), rel=0.08)
    assert sc.omega == d / k - 1 and un.delta == k / d


@pytest.mark.parametrize("levels", [1, 3, 8])
def test_quantizer_bits_grid_and_unbiased(levels):
    d, n = 9, 3000
    rng = np.random.default_rng(levels)
    v = rng.normal(size=d)
    q = RandomQuantizer(d, levels)
    assert q.message_bits == 32 + d * (1 + math.ceil(math.log2(levels + 1)))
    mean = np.zeros(d)
    var = 0.0
    for _ in range(n):
        msg = q.encode(v, rng)
        assert msg.n_bits == q.message_bits and len(msg.payload) == math.ceil(msg.n_bits / 8)
        out = q.decode(msg)
        mean += out
        var += np.sum((out - v) ** 2)
    mean /= n
    norm32 = float(np.float32(np.linalg.norm(v)))
    if norm32 < np.linalg.norm(v):
        norm32 = float(np.nextafter(np.float32(norm32), np.float32(np.inf)))
    # decoded values lie on the grid norm * {0, 1/s, ..., 1} with the sign of v
    lv = out * np.sign(v) / norm32 * levels
    np.testing.assert_allclose(lv, np.round(lv), atol=1e-9)
    sd = norm32 / levels / 2 / math.sqrt(n)  # Bernoulli on a 1/s grid: sd <= 1/(2s) * norm
    assert np.all(np.abs(mean - v) <= 5 * sd)
    assert var / n <= q.omega * np.sum(v**2) * 1.05


def test_one_qsgd_quantizer():
    """``global_uniform`` (s inner levels) is the QSGD RandomQuantizer with s + 1 steps."""
    from sparsecert.distributed.quantize import global_uniform

    q = global_uniform(9, 2)
    assert isinstance(q, RandomQuantizer) and q.qsgd_levels == 3 and q.s == 2
    v = np.random.default_rng(0).normal(size=9)
    assert q.encode(v, np.random.default_rng(1)) == RandomQuantizer(9, 3).encode(
        v, np.random.default_rng(1))
    assert not q.stateful and q.unbiased


def test_quantizer_zero_vector():
    q = RandomQuantizer(4, 2)
    np.testing.assert_array_equal(q.decode(q.encode(np.zeros(4), np.random.default_rng(0))),
                                  np.zeros(4))


def test_identity_bits_and_values():
    v = np.random.default_rng(0).normal(size=11)
    m32 = Identity(11).encode(v)
    assert m32.n_bits == 32 * 11
    np.testing.assert_array_equal(Identity(11).decode(m32), v.astype(np.float32))
    m64 = Identity(11, "float64").encode(v)
    assert m64.n_bits == 64 * 11
    np.testing.assert_array_equal(Identity(11, "float64").decode(m64), v)


def test_identity_float32_stream_is_numpys_cast_and_bad_values_are_refused():
    """The one-pass float32 encoder writes the bytes of numpy's little-endian cast (ties,
    subnormals, values just below the largest float32, signed zeros), and refuses NaN, inf
    and values beyond the float32 range with the errors of the checked path."""
    rng = np.random.default_rng(3)
    f32max = float(np.finfo(np.float32).max)
    v = np.concatenate([rng.standard_normal(50) * 10.0 ** rng.uniform(-45, 38, 50),
                        [f32max, -f32max, 1.0 + 2.0**-24, 1.0 + 3 * 2.0**-24, -0.0, 1e-46]])
    enc = Identity(v.size)
    assert enc.encode(v).payload == v.astype("<f4").tobytes()
    assert enc.encode(list(v)).payload == v.astype("<f4").tobytes()
    for bad, match in ((np.nan, "NaN"), (-np.inf, "NaN or inf"), (np.nextafter(f32max, 1e300),
                                                                     "does not fit in float32")):
        w = v.copy()
        w[7] = bad
        with pytest.raises(ValueError, match=match):
            enc.encode(w)
    with pytest.raises(ValueError, match="shape"):
        enc.encode(v[:-1])


def test_bad_inputs():
    with pytest.raises(ValueError, match="k must be"):
        TopK(5, 0)
    with pytest.raises(ValueError, match="k must be"):
        TopK(5, 6)
    with pytest.raises(ValueError, match="dim"):
        TopK(0, 1)
    with pytest.raises(ValueError, match="value_dtype"):
        TopK(5, 1, value_dtype="int8")
    with pytest.raises(ValueError, match="NaN"):
        TopK(3, 1).encode(np.array([1.0, np.nan, 0.0]))
    with pytest.raises(ValueError, match="shape"):
        TopK(3, 1).encode(np.ones(4))
    with pytest.raises(TypeError, match="Generator"):
        RandK(3, 1).encode(np.ones(3))
    with pytest.raises(ValueError, match="levels"):
        RandomQuantizer(3, 0)
    with pytest.raises(ValueError, match="bits"):
        TopK(8, 2).decode(TopK(8, 3).encode(np.ones(8)))
    with pytest.raises(TypeError, match="Message"):
        TopK(8, 2).decode(b"abc")


@pytest.mark.parametrize("d,k", [(1, 1), (9, 1), (31, 4), (300, 80)])
def test_roundtrip_equals_compress_then_decode(d, k):
    rng = np.random.default_rng(d)
    v = rng.normal(size=d)
    for comp in (TopK(d, k), TopK(d, k, "float64"), RandK(d, k), Identity(d),
                 RandomQuantizer(d, 3)):
        msg, out = comp.roundtrip(v, np.random.default_rng(1))
        assert msg == comp.encode(v, np.random.default_rng(1))
        np.testing.assert_array_equal(out, comp.decode(msg))


def test_float16_values_halve_the_value_bits_and_refuse_overflow():
    v = np.array([0.0, -3.25, 1e-3, 0.0, 2.5])
    top = TopK(5, 2, value_dtype="float16")
    assert top.message_bits == 2 * (16 + 3)
    msg, dec = top.roundtrip(v)
    np.testing.assert_array_equal(top.decode(msg), dec)
    np.testing.assert_array_equal(dec, [0, -3.25, 0, 0, 2.5])
    dense = Identity(5, "float16")
    assert dense.encode(v).n_bits == 80
    np.testing.assert_allclose(dense.decode(dense.encode(v)), v, rtol=1e-3)
    with pytest.raises(ValueError, match="float16"):
        top.encode(np.array([0.0, 1e5, 0, 0, 0]))
    with pytest.raises(ValueError, match="float16"):
        dense.encode(np.full(5, -7e4))


def test_topk_ternary_encoding_bits_and_contraction():
    from sparsecert.distributed.compress import TopKTernary

    v = np.array([0.5, -3.0, 0.0, 2.0, -0.25, 1.0])
    c = TopKTernary(6, 3)
    assert c.message_bits == 32 + 3 * (1 + 3)
    msg = c.encode(v)
    assert msg.n_bits == 44
    mu = (3.0 + 2.0 + 1.0) / 3
    np.testing.assert_array_equal(c.decode(msg), [0, -mu, 0, mu, 0, mu])
    rng = np.random.default_rng(0)
    for _ in range(50):  # ||C(v) - v||^2 = ||v||^2 - ||v_S||_1^2 / k <= (1 - 1/(d k)) ||v||^2
        u = rng.standard_t(2, size=6)
        err = np.sum((c.decode(c.encode(u)) - u) ** 2)
        top = np.sort(np.abs(u))[-3:]
        assert err == pytest.approx(np.sum(u**2) - top.sum() ** 2 / 3, rel=1e-6, abs=1e-9)
        assert err <= (1 - c.delta) * np.sum(u**2) + 1e-12
    flipped = bytearray(msg.payload)
    flipped[4] ^= 0x80  # the first sign bit
    assert c.decode(Message(bytes(flipped), 44))[1] == pytest.approx(mu)
    with pytest.raises(ValueError, match="44 bits"):
        c.decode(Message(msg.payload, 40))


def test_enumerative_index_code_is_a_bijection_of_the_shortest_length():
    """Every k-subset of d = 9 gets its own rank in [0, C(d, k)) (checked against
    itertools), in ceil(log2 C(d, k)) bits, and decodes back; a sparse message with the code
    decodes to the vector of the fixed-index message, with fewer bits."""
    import itertools
    import math

    from sparsecert.distributed.compress import TopKTernary
    from sparsecert.distributed.subsets import SubsetCode

    for k in range(1, 10):
        code = SubsetCode(9, k, "enumerative")
        assert code.bits == math.ceil(math.log2(math.comb(9, k))) if math.comb(9, k) > 1 \
            else code.bits == 0
        seen = set()
        for sub in itertools.combinations(range(9), k):
            data = code.encode(np.array(sub))
            assert len(data) == code.nbytes
            seen.add(data)
            assert tuple(code.decode(data)) == sub
        assert len(seen) == math.comb(9, k)
    rng = np.random.default_rng(4)
    v = rng.standard_normal(200)
    for fixed, enum in ((TopK(200, 10, "float16"), TopK(200, 10, "float16", "enumerative")),
                        (TopKTernary(200, 40), TopKTernary(200, 40, "enumerative"))):
        m_fixed, m_enum = fixed.encode(v), enum.encode(v)
        assert np.array_equal(fixed.decode(m_fixed), enum.decode(m_enum))
        assert m_enum.n_bits == m_fixed.n_bits - fixed.k * 8 + SubsetCode(200, fixed.k,
                                                                         "enumerative").bits
    assert TopKTernary(200, 40, "enumerative").message_bits == 32 + 40 + 141
    bad = SubsetCode(9, 3, "enumerative")
    with pytest.raises(ValueError, match="rank out of range"):
        bad.decode(b"\xff")


def test_bfloat16_scale_is_nearest_and_refuses_overflow():
    from sparsecert.distributed.compress import from_bfloat16, to_bfloat16

    rng = np.random.default_rng(3)
    for x in np.concatenate([10.0 ** rng.uniform(-37, 38, 500), [1.0, 3.0, 2.0 ** -126]]):
        got = from_bfloat16(to_bfloat16(x))
        # the nearest of the bfloat16 grid: 8 significant bits, so within half a unit
        ulp = 2.0 ** (math.floor(math.log2(x)) - 7)
        assert abs(got - x) <= ulp / 2 * (1 + 1e-6), (x, got)
        assert abs(got - x) <= 2.0 ** -8 * x
    with pytest.raises(ValueError, match="bfloat16"):
        to_bfloat16(3.4e38)


@pytest.mark.parametrize("d, k, bits", [(31, 5, 1), (31, 2, 3), (200, 10, 2), (7, 7, 6)])
def test_topk_levels_bits_roundtrip_and_contraction(d, k, bits):
    """Message size, decode(encode) = roundtrip, the levels against a direct computation,
    and ||C(v) - v||^2 <= (1 - delta) ||v||^2 with delta = (1 - 2^-16) / d on random,
    heavy-tailed, equal-magnitude and tiny or huge vectors."""
    enc = TopKLevels(d, k, bits)
    nidx = (math.comb(d, k) - 1).bit_length()
    assert enc.message_bits == 16 + k * (1 + bits) + nidx
    assert enc.delta == pytest.approx((1 - 2.0 ** -16) / d)
    rng = np.random.default_rng(d + k + bits)
    L = 2 ** bits - 1
    worst = 0.0
    for t in range(400):
        kind = t % 4
        if kind == 0:
            v = rng.standard_normal(d)
        elif kind == 1:
            v = rng.standard_t(1.2, d)
        elif kind == 2:
            v = np.where(rng.random(d) < 0.5, -1.0, 1.0) * rng.uniform(0.1, 3)
        else:
            v = rng.standard_normal(d) * 10.0 ** rng.uniform(-30, 30)
        msg, out = enc.roundtrip(v)
        # each part (scale, signs and levels, indices) starts on a byte: padding not counted
        assert msg.n_bits == enc.message_bits
        assert len(msg.payload) == 2 + -(-k * (1 + bits) // 8) + -(-nidx // 8)
        assert np.array_equal(enc.decode(msg), out)
        assert np.array_equal(enc.encode(v).payload, msg.payload)
        # independent reading: support = top-k set, values = sign * nearest level of the scale
        idx = np.argsort(-np.abs(v), kind="stable")[:k]
        assert set(np.flatnonzero(out)) <= set(idx.tolist())
        s = float(np.abs(out).max())
        assert abs(s - np.abs(v).max()) <= 2.0 ** -8 * np.abs(v).max()
        for j in idx:
            lev = min(L, round(abs(v[j]) * L / s))
            assert out[j] == pytest.approx(np.sign(v[j]) * lev * s / L, rel=1e-12, abs=0)
        ratio = float(np.sum((out - v) ** 2) / np.sum(v ** 2))
        worst = max(worst, ratio)
        assert ratio <= 1.0 - enc.delta
    assert worst > 0.0


def test_topk_levels_refuses_bad_parameters_and_messages():
    with pytest.raises(ValueError, match="bits"):
        TopKLevels(10, 2, 7)
    with pytest.raises(ValueError, match="k must"):
        TopKLevels(10, 0, 2)
    enc = TopKLevels(10, 2, 2)
    with pytest.raises(ValueError, match="carry"):
        enc.decode(Message(b"\x00" * 3, 20))
    with pytest.raises(ValueError):
        enc.encode(np.array([np.nan] + [0.0] * 9))


def test_enumerative_code_compiled_int64_path_equals_the_big_integer_path():
    """Where every binomial fits in int64 the rank goes through a compiled kernel: the same
    bytes and indices as the Python big-integer code (forced by dropping its table)."""
    from sparsecert.distributed.subsets import SubsetCode

    rng = np.random.default_rng(7)
    for d, k in ((31, 5), (200, 10), (64, 30)):
        fast, slow = SubsetCode(d, k, "enumerative"), SubsetCode(d, k, "enumerative")
        assert fast._table is not None
        slow._table = None
        for _ in range(200):
            idx = np.sort(rng.choice(d, k, replace=False))
            data = fast.encode(idx)
            assert data == slow.encode(idx)
            assert np.array_equal(fast.decode(data), idx)
            assert np.array_equal(slow.decode(data), idx)
    assert SubsetCode(200, 40, "enumerative")._table is None  # C(200, 40) > 2^62


def _slow_levels(enc: TopKLevels) -> TopKLevels:
    """The same encoder with the message-by-message Python decoding (no rank table)."""
    import copy

    slow = copy.deepcopy(enc)
    slow._subsets._table = None
    return slow


@pytest.mark.parametrize("d, k, bits", [(31, 8, 2), (31, 5, 1), (200, 10, 2), (7, 7, 6)])
def test_topk_levels_compiled_decoding_equals_message_by_message(d, k, bits):
    """decode and decode_sum (one compiled call for a round's messages) give exactly what
    the Python path gives: the same values and signs of zero, and a round's sum is the sum of
    the decoded vectors added in order (the server's mean)."""
    enc = TopKLevels(d, k, bits)
    slow = _slow_levels(enc)
    rng = np.random.default_rng(d * k + bits)
    for _ in range(30):
        # levels rounding to 0 on negative entries give -0.0 values
        msgs = [enc.encode(rng.standard_normal(d) * np.where(rng.random(d) < 0.3, 1e-3, 1.0))
                for _ in range(10)]
        for m in msgs:
            a, b = enc.decode(m), slow.decode(m)
            assert np.array_equal(a, b) and np.array_equal(np.signbit(a), np.signbit(b))
        ref = np.zeros(d)
        for m in msgs:
            ref = ref + slow.decode(m)
        out = np.zeros(d)
        enc.decode_sum(msgs, out)
        assert np.array_equal(out, ref) and np.array_equal(np.signbit(out), np.signbit(ref))
    fixed = TopKLevels(d, k, bits, index_code="fixed")  # no compiled path: the generic sum
    msgs = [fixed.encode(rng.standard_normal(d)) for _ in range(3)]
    out = np.zeros(d)
    fixed.decode_sum(msgs, out)
    assert np.array_equal(out, fixed.decode(msgs[0]) + fixed.decode(msgs[1])
                          + fixed.decode(msgs[2]))


def test_topk_levels_compiled_decoding_refuses_a_corrupt_rank():
    enc = TopKLevels(31, 8, 2)
    good = enc.encode(np.arange(31.0))
    nidx = -(-enc._subsets.bits // 8)
    bad = Message(good.payload[:-nidx] + b"\xff" * nidx, good.n_bits)  # rank >= C(31, 8)
    with pytest.raises(ValueError, match="rank out of range"):
        enc.decode(bad)
    out = np.zeros(31)
    with pytest.raises(ValueError, match="message 1: subset rank out of range"):
        enc.decode_sum([good, bad], out)
    with pytest.raises(ValueError, match="carry"):
        enc.decode_sum([good, Message(good.payload, good.n_bits - 1)], out)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_identity_decode_sum_is_the_sum_in_order(dtype):
    enc = Identity(13, dtype)
    rng = np.random.default_rng(3)
    msgs = [enc.encode(rng.standard_normal(13) * 10.0 ** rng.integers(-3, 3))
            for _ in range(7)]
    ref = np.full(13, 0.5)
    for m in msgs:
        ref = ref + enc.decode(m)
    out = np.full(13, 0.5)
    enc.decode_sum(msgs, out)
    assert np.array_equal(out, ref)
    with pytest.raises(ValueError, match="must carry"):
        enc.decode_sum([Message(b"\x00" * 4, 32)], out)


def test_message_bytes_is_the_payload_length_of_every_fixed_size_encoder():
    """What a gather of agreed sizes relies on: every message of a fixed-size encoder has
    message_bits bits in message_bytes bytes (parts padded to bytes included)."""
    from sparsecert.distributed.compress import TopKTernary

    rng = np.random.default_rng(5)
    encs = [TopKLevels(31, 5, 1), TopKLevels(31, 8, 2, index_code="fixed"),
            TopKTernary(31, 5), TopKTernary(200, 9, index_code="enumerative"),
            TopK(31, 3, value_dtype="float16", index_code="enumerative"), Identity(7, "float16"),
            RandK(31, 4), RandomQuantizer(31, 3)]
    for enc in encs:
        assert enc.message_bits is not None, enc
        for _ in range(5):
            m = enc.encode(rng.standard_normal(enc.dim), rng)
            assert (m.n_bits, len(m.payload)) == (enc.message_bits, enc.message_bytes), enc
    # padded parts: 44 bits in 7 bytes (scale, 10 bits of codes in 2 bytes, 18-bit rank in 3)
    assert (TopKLevels(31, 5, 1).message_bits, TopKLevels(31, 5, 1).message_bytes) == (44, 7)


def test_top_k_set_encoders_refuse_a_message_of_the_wrong_size_or_type():
    """TopKTernary and TopKLevels check a message like every fixed-size encoder: its bits
    and its payload length (one extra byte is refused, not read past), and its type."""
    from sparsecert.distributed.compress import TopKTernary

    v = np.random.default_rng(2).standard_normal(29)
    for enc in (TopKTernary(29, 4), TopKLevels(29, 4, 2), TopKLevels(29, 4, 2, "fixed")):
        good = enc.encode(v)
        padded = Message(bytes(good.payload) + b"\x00", good.n_bits)
        with pytest.raises(ValueError, match="must carry"):
            enc.decode(padded)
        with pytest.raises(ValueError, match="must carry"):
            enc.decode_sum([good, padded], np.zeros(29))
        with pytest.raises(TypeError, match="Message"):
            enc.decode(bytes(good.payload))
        assert np.array_equal(enc.decode(good), enc.roundtrip(v)[1])
