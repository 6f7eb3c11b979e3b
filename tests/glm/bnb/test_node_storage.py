"""A node's compact storage: bit-packed fixings and a shared, sparse warm start read back
exactly as the full arrays they were built from."""

import numpy as np
import pytest

from sparsecert.bnb.node import CompactVector, Node, Witness


def _masks(p, rng):
    fi = rng.random(p) < 0.1
    fo = ~fi & (rng.random(p) < 0.3)
    return fi, fo


@pytest.mark.parametrize("p", [1, 7, 8, 9, 100, 4088])
def test_fixings_round_trip(p):
    rng = np.random.default_rng(p)
    fi, fo = _masks(p, rng)
    node = Node(0, None, 0, fi, fo)
    assert node.fixed_in.dtype == bool and node.fixed_in.shape == (p,)
    np.testing.assert_array_equal(node.fixed_in, fi)
    np.testing.assert_array_equal(node.fixed_out, fo)
    np.testing.assert_array_equal(node.free_mask(), ~(fi | fo))
    assert node.n_free() == int((~(fi | fo)).sum())
    assert node.free_budget(5) == 5 - int(fi.sum())
    # a read is a copy: changing it does not change the node
    node.fixed_in[:] = True
    np.testing.assert_array_equal(node.fixed_in, fi)


@pytest.mark.parametrize("density", [0.0, 0.01, 0.25, 0.26, 1.0])
def test_warm_start_exact(density):
    rng = np.random.default_rng(3)
    p = 400
    v = np.where(rng.random(p) < density, rng.standard_normal(p), 0.0)
    v[v != 0] *= 10.0 ** rng.integers(-300, 300, size=int((v != 0).sum()))  # extreme values
    v[-1] = -0.0  # a signed zero is kept as it was
    w = CompactVector(v)
    out = w.dense()
    assert out.tobytes() == v.tobytes()  # bit for bit
    assert (w.index is None) == (4 * np.count_nonzero(v.view(np.int64)) > p)
    out[0] = 123.0  # a copy
    assert w.dense().tobytes() == v.tobytes()


def test_children_share_one_warm_start_and_zero_their_variable():
    rng = np.random.default_rng(0)
    p = 300
    fi, fo = np.zeros(p, bool), np.zeros(p, bool)
    parent = Node(0, None, 0, fi, fo)
    coef = np.where(rng.random(p) < 0.05, rng.standard_normal(p), 0.0)
    j = int(np.flatnonzero(coef)[0])
    parent.warm_start = coef
    zero, one = parent.child(1, j, 0), parent.child(2, j, 1)
    assert zero._warm is one._warm is parent._warm  # one copy for the pair
    expect0 = coef.copy()
    expect0[j] = 0.0
    np.testing.assert_array_equal(zero.warm_start, expect0)
    np.testing.assert_array_equal(one.warm_start, coef)
    assert zero.fixed_out[j] and not zero.fixed_in[j]
    assert one.fixed_in[j] and not one.fixed_out[j]
    # a grandchild of the z = 0 child keeps its parent's zeroed entry
    grand = zero.child(3, j + 1, 1)
    np.testing.assert_array_equal(grand.warm_start, expect0)
    # the pair's storage is far below two dense copies and two boolean masks
    assert zero.nbytes < (2 * p * 8 + 2 * p) // 4


def test_base_fixings_drop_the_nodes_own_bound_fixings():
    p = 20
    fi, fo = np.zeros(p, bool), np.zeros(p, bool)
    fi[[1, 2]] = True
    fo[[3, 4, 5]] = True
    node = Node(0, None, 0, fi, fo)
    node.bound_fixings = [(2, 1), (5, 0)]
    bi, bo = node.base_fixings()
    assert list(np.flatnonzero(bi)) == [1] and list(np.flatnonzero(bo)) == [3, 4]
    np.testing.assert_array_equal(node.fixed_in, fi)  # unchanged


def test_witness_vector_is_exact_and_compact():
    rng = np.random.default_rng(5)
    p = 4088
    v = np.where(rng.random(p) < 0.01, rng.standard_normal(p), 0.0)
    w = Witness("point", v, 7)
    assert w.vector.tobytes() == v.tobytes() and w.kind == "point" and w.id == 7
    assert w.nbytes < v.nbytes // 10
    v[0] = 99.0  # the witness keeps its own copy
    assert w.vector[0] != 99.0
