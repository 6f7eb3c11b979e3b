"""Safe-EF and baselines: exact identities, equivalences, averaging, bits, problems, LPs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sparsecert.distributed.comm import SimComm
from sparsecert.distributed.compress import Identity, RandK, TopK
from sparsecert.distributed.quantize import layerwise_adaptive
from sparsecert.distributed.safe_ef.algorithm import (
    AveragedConstraint,
    AveragedWorker,
    FunctionWorker,
    RunOptions,
    StochasticWorker,
    Worker,
    ef14_lagrangian,
    ef21_switching,
    safe_ef,
    safe_ef_stochastic,
    switching_subgradient,
    topk_no_ef,
)
from sparsecert.distributed.safe_ef.problems import (
    HingeNPWorker,
    IsotropicL1Worker,
    L1RegressionWorker,
    l1_regression,
    l1_regression_lp,
    neyman_pearson,
    neyman_pearson_lp,
    worst_case,
)

# ----------------------------------------------------------------------------- fixtures


def _tiny_np(n_workers=4, m=6, p=3, seed=0, lam1=0.05, alpha=0.2):
    """Tiny Neyman-Pearson instance: heterogeneous workers (class means shifted per worker)."""
    rng = np.random.default_rng(seed)
    pos = [rng.normal(loc=0.8 + 0.3 * i, size=(m, p)) for i in range(n_workers)]
    neg = [rng.normal(loc=-0.8 + 0.2 * i, size=(m, p)) for i in range(n_workers)]
    npos, nneg = n_workers * m, n_workers * m
    workers = [HingeNPWorker(pos[i], neg[i], n_workers / npos, n_workers / nneg, lam1, alpha)
               for i in range(n_workers)]
    return workers, np.vstack(pos), np.vstack(neg), lam1, alpha


def _tiny_l1(n_workers=3, m=8, d=6, radius=1.0, seed=1):
    rng = np.random.default_rng(seed)
    a = [rng.normal(loc=0.3 * i, size=(m, d)) for i in range(n_workers)]
    xt = rng.normal(size=d)
    b = [ai @ xt + rng.standard_t(2, size=m) for ai in a]
    return [L1RegressionWorker(a[i], b[i], radius) for i in range(n_workers)], a, b


def _mean_f(workers, x):
    return float(np.mean([w.f(x) for w in workers]))


def _mean_g(workers, x):
    return float(np.mean([w.g(x) for w in workers]))


# ----------------------------------------------------------------------------- workers


def _all_workers():
    np_workers, *_ = _tiny_np()
    l1w, *_ = _tiny_l1()
    rng = np.random.default_rng(5)
    iso = [IsotropicL1Worker(rng.normal(size=6), 0.5)]
    return np_workers[:2] + l1w[:2] + iso


@pytest.mark.parametrize("which", range(5))
def test_worker_subgradients_are_subgradients(which):
    w = _all_workers()[which]
    assert isinstance(w, Worker)
    d = w.f_subgrad(np.zeros(4 if which < 2 else 6)).size
    rng = np.random.default_rng(which)
    for _ in range(30):
        x, y = rng.normal(size=d), rng.normal(size=d)
        for fun, sub in ((w.f, w.f_subgrad), (w.g, w.g_subgrad)):
            h = sub(x)
            assert fun(y) >= fun(x) + h @ (y - x) - 1e-10
            # at a generic point the function is linear nearby: directional derivative = h.u
            u = rng.normal(size=d)
            t = 1e-7
            assert (fun(x + t * u) - fun(x)) / t == pytest.approx(h @ u, abs=1e-5)


def test_minibatch_views_are_unbiased():
    np_workers, *_ = _tiny_np()
    l1w, *_ = _tiny_l1()
    x = np.random.default_rng(0).normal(size=4) * 0.3
    xl = np.random.default_rng(1).normal(size=6) * 0.3
    for w, pt in ((np_workers[1], x), (l1w[0], xl)):
        assert isinstance(w, StochasticWorker)
        rng = np.random.default_rng(2)
        n = 2500
        fs, gs, hs = 0.0, 0.0, 0.0
        for _ in range(n):
            mb = w.minibatch(rng, 3)
            fs += mb.f(pt)
            gs += mb.g(pt)
            hs = hs + mb.f_subgrad(pt)
        assert fs / n == pytest.approx(w.f(pt), rel=0.07)
        assert gs / n == pytest.approx(w.g(pt), rel=0.07, abs=0.03)
        np.testing.assert_allclose(hs / n, w.f_subgrad(pt), rtol=0.12, atol=0.04)


# ----------------------------------------------------------------------------- problems


@pytest.fixture(scope="module")
def p1():
    return neyman_pearson(seed=0)


def test_p1_structure_and_reference(p1):
    assert p1.dim == 31 and p1.n_workers == 10
    info = p1.info
    assert info["n_pos"] + info["n_neg"] == 569 and sum(info["pos_per_worker"]) == info["n_pos"]
    assert min(info["pos_per_worker"]) < 5 < max(info["pos_per_worker"])  # heterogeneous
    rng = np.random.default_rng(0)
    for x in (p1.x0, p1.x_star, rng.normal(size=31)):
        f, g = p1.monitor(x)
        assert f == pytest.approx(_mean_f(p1.workers, x), rel=1e-12)
        assert g == pytest.approx(_mean_g(p1.workers, x), rel=1e-12, abs=1e-12)
    f, g = p1.monitor(p1.x_star)
    assert f == pytest.approx(p1.f_star, abs=1e-7) and g <= 1e-7
    # the LP optimum is not beaten by random feasible-ish points scaled to feasibility
    for _ in range(20):
        x = p1.x_star + 0.05 * rng.normal(size=31)
        fx, gx = p1.monitor(x)
        if gx <= 0:
            assert fx >= p1.f_star - 1e-9


def test_p2_p3_structure():
    p2 = l1_regression(d=20, n_workers=4, m_per_worker=15, sparsity=4, seed=3)
    p3 = worst_case(d=12, n_workers=5, seed=2)
    rng = np.random.default_rng(0)
    for p in (p2, p3):
        for x in (p.x0, p.x_star, rng.normal(size=p.dim)):
            f, g = p.monitor(x)
            assert f == pytest.approx(_mean_f(p.workers, x), rel=1e-12)
            assert g == pytest.approx(_mean_g(p.workers, x), rel=1e-12, abs=1e-12)
        assert p.monitor(p.x_star)[1] <= 1e-9 and p.scale > 0
    assert p2.monitor(p2.x0)[1] < 0 < np.abs(p2.x_star).sum() - 0.99 * p2.info["radius"]


def test_lp_references_against_cvxpy():
    cp = pytest.importorskip("cvxpy")
    _, a_pos, a_neg, lam1, alpha = _tiny_np(n_workers=3, m=5, p=3)
    f_lp, x_lp = neyman_pearson_lp(a_pos, a_neg, lam1, alpha)
    w, b = cp.Variable(3), cp.Variable()
    obj = cp.sum(cp.pos(1 - (a_pos @ w + b))) / len(a_pos) + lam1 * cp.norm1(w)
    cons = [cp.sum(cp.pos(1 + a_neg @ w + b)) / len(a_neg) <= alpha]
    f_cvx = cp.Problem(cp.Minimize(obj), cons).solve(solver=cp.CLARABEL)
    assert f_lp == pytest.approx(f_cvx, abs=1e-6)

    _, a, b_ = _tiny_l1()
    a, b_ = np.vstack(a), np.concatenate(b_)
    f_lp, x_lp = l1_regression_lp(a, b_, 1.0)
    assert np.abs(x_lp).sum() <= 1.0 + 1e-9
    x = cp.Variable(a.shape[1])
    f_cvx = cp.Problem(cp.Minimize(cp.sum(cp.abs(a @ x - b_)) / len(b_)),
                       [cp.norm1(x) <= 1.0]).solve(solver=cp.CLARABEL)
    assert f_lp == pytest.approx(f_cvx, abs=1e-6)

    p3 = worst_case(d=8, n_workers=5, seed=4)
    a3 = np.stack([w.a for w in p3.workers])
    x = cp.Variable(8)
    f_cvx = cp.Problem(cp.Minimize(cp.sum(cp.abs(a3 - np.ones((5, 1)) @ cp.reshape(x, (1, 8),
                                                                              order="C")))
                                   / 40), [cp.norm_inf(x) <= p3.info["radius"]]
                       ).solve(solver=cp.CLARABEL)
    assert p3.f_star == pytest.approx(f_cvx, abs=1e-6)


# ----------------------------------------------------------------------------- identities


def test_k_equals_d_is_the_uncompressed_switching_method_exactly():
    workers, *_ = _tiny_np()
    d = 4
    x0 = np.array([0.3, -0.2, 0.1, 0.0])
    kw = dict(gamma=0.2, n_rounds=60, c=0.0, options=RunOptions(store_iterates=True))
    a = safe_ef(workers, x0, TopK(d, d, value_dtype="float64"), **kw)
    b = switching_subgradient(workers, x0, value_dtype="float64", **kw)
    assert 0 < a.n_productive < a.n_rounds  # both kinds of steps happen
    np.testing.assert_array_equal(a.iterates, b.iterates)
    np.testing.assert_array_equal(a.productive, b.productive)
    np.testing.assert_array_equal(a.x, b.x)
    # with float32 values the uncompressed method rounds; Safe-EF feeds the rounding back
    c32 = safe_ef(workers, x0, TopK(d, d), **kw)
    np.testing.assert_allclose(c32.iterates, b.iterates, atol=1e-5)


def _recorder():
    log = []

    def cb(info):
        log.append((info.t, info.x, info.x_next, info.w_next, info.productive,
                    {i: e.copy() for i, e in info.state["e"].items()}))

    return log, cb


@pytest.mark.parametrize("downlink_k", [None, 2])
def test_ef14_virtual_iterate_identity(downlink_k):
    """With e_i the errors and w the server state: w_{t+1} - mean_i e_i^{t+1}
    = w_t - mean_i e_i^t - gamma * mean_i h_i(x_t), hence
    w_t - mean_i e_i^t = x_0 - gamma * sum_{s<t} mean_i h_i(x_s) (e^0 = 0, w_0 = x_0).
    The h_i are recomputed here from the workers at the recorded x_s and the switch is
    recomputed from g(x_s)."""
    workers, *_ = _tiny_np()
    d, gamma, c = 4, 0.15, 0.0
    x0 = np.array([0.1, 0.2, -0.1, 0.05])
    log, cb = _recorder()
    down = None if downlink_k is None else TopK(d, downlink_k, value_dtype="float64")
    res = safe_ef(workers, x0, TopK(d, 1, value_dtype="float64"), gamma, 80, c,
                  downlink=down, options=RunOptions(callback=cb, scalar_dtype="float64",
                                                   store_iterates=True))
    assert 0 < res.n_productive < 80
    virtual = x0.copy()
    for _t, x, x_next, w_next, productive, errors in log:
        assert productive == (_mean_g(workers, x) <= c)
        subs = [w.f_subgrad(x) if productive else w.g_subgrad(x) for w in workers]
        virtual = virtual - gamma * np.mean(subs, axis=0)
        ebar = np.mean([errors[i] for i in range(len(workers))], axis=0)
        np.testing.assert_allclose(w_next - ebar, virtual, rtol=0, atol=1e-12)
        if downlink_k is None:
            np.testing.assert_array_equal(x_next, w_next)
    # the error is genuinely non-zero (the identity is not trivially x = virtual)
    assert max(np.abs(e).max() for e in log[-1][5].values()) > 1e-3
    if downlink_k is not None:  # x lags w under a compressed downlink
        assert any(not np.allclose(rec[2], rec[3]) for rec in log)


def _ef14_reference(workers, x0, k, gamma, n_rounds):
    """Independent EF14 (unconstrained) with top-k by sorting, float64 values."""
    n, d = len(workers), x0.size
    x = x0.copy()
    e = [np.zeros(d) for _ in range(n)]
    xs = [x.copy()]
    for _ in range(n_rounds):
        vs = []
        for i, w in enumerate(workers):
            u = e[i] + gamma * w.f_subgrad(x)
            order = sorted(range(d), key=lambda j, u=u: (-abs(u[j]), j))[:k]
            v = np.zeros(d)
            v[order] = u[order]
            e[i] = u - v
            vs.append(v)
        x = x - np.mean(vs, axis=0)
        xs.append(x.copy())
    return np.asarray(xs)


def test_never_active_constraint_gives_ef14():
    workers, *_ = _tiny_l1(radius=1e6)
    x0 = np.zeros(6)
    res = safe_ef(workers, x0, TopK(6, 2, value_dtype="float64"), 0.05, 70, 0.0,
                  options=RunOptions(store_iterates=True))
    assert res.n_productive == 70
    ref = _ef14_reference(workers, x0, 2, 0.05, 70)
    np.testing.assert_allclose(res.iterates, ref, rtol=0, atol=1e-12)
    np.testing.assert_allclose(res.x, ref[:-1].mean(axis=0), rtol=0, atol=1e-12)
    lag = ef14_lagrangian(workers, x0, TopK(6, 2, value_dtype="float64"), 0.05, 70, eta=1.0,
                          options=RunOptions(store_iterates=True))
    np.testing.assert_array_equal(lag.iterates, res.iterates)
    np.testing.assert_array_equal(lag.x, res.x)


def test_output_averages_productive_steps_only():
    workers, *_ = _tiny_np()
    res = safe_ef(workers, np.full(4, 0.2), TopK(4, 2), 0.2, 50, 0.0,
                  options=RunOptions(store_iterates=True))
    prod = res.productive
    assert 0 < prod.sum() < prod.size
    xs = res.iterates[:-1]  # x_t at which round t computed its subgradients
    np.testing.assert_allclose(res.x, xs[prod].mean(axis=0), rtol=1e-14, atol=1e-15)
    assert not np.allclose(res.x, xs.mean(axis=0))
    np.testing.assert_array_equal(res.x_last, res.iterates[-1])
    f, g = _mean_f(workers, res.x), _mean_g(workers, res.x)
    assert res.objective[-1] == pytest.approx(f) and res.violation[-1] == pytest.approx(max(g, 0))


def test_no_productive_step_returns_x0():
    w = FunctionWorker(lambda x: float(x @ x), lambda x: 2 * x, lambda x: 1.0, lambda x: 0 * x)
    res = safe_ef([w, w], np.ones(3), TopK(3, 1), 0.1, 5, 0.0)
    assert res.n_productive == 0
    np.testing.assert_array_equal(res.x, np.ones(3))


# ----------------------------------------------------------------------------- bits


@pytest.mark.parametrize("k", [1, 3, 7])
def test_bit_accounting(k):
    """Per round and worker: up = g_i (32) + top-k (k (32 + ceil log2 d)); down = the switch
    decision (1 bit) + the downlink message."""
    workers, *_ = _tiny_np()
    d, T = 4, 12
    comm = SimComm(4)
    res = safe_ef(workers, np.zeros(d), TopK(d, k if k <= d else d), 0.1, T,
                  downlink=TopK(d, 1), options=RunOptions(comm=comm))
    kk = min(k, d)
    per_round = 32 + kk * (32 + math.ceil(math.log2(d)))
    t = res.traffic
    np.testing.assert_array_equal(t.up_sent, [T * per_round] * 4)
    np.testing.assert_array_equal(t.down_received, [T * (1 + 32 + 2)] * 4)
    np.testing.assert_array_equal(t.up_received, 0)  # a server, not an all-to-all
    assert t.server_received == 4 * T * per_round and t.server_sent == 4 * T * (1 + 32 + 2)
    assert t.rounds == 2 * T
    assert res.bits_up[-1] == T * per_round and res.bits_up[0] == 0
    assert res.bits_down[-1] == T * 35 and res.bits_total[-1] == T * (per_round + 35)
    np.testing.assert_array_equal(res.bits_total, res.bits_up + res.bits_down)
    unc = switching_subgradient(workers, np.zeros(d), 0.1, T)
    assert unc.bits_up[-1] == T * (32 + 32 * d) and unc.bits_down[-1] == T * (1 + 64 * d)
    unc32 = switching_subgradient(workers, np.zeros(d), 0.1, T, downlink=Identity(d))
    assert unc32.bits_down[-1] == T * (1 + 32 * d)
    s64 = safe_ef(workers, np.zeros(d), TopK(d, kk), 0.1, T,
                  options=RunOptions(scalar_dtype="float64"))
    assert s64.bits_up[-1] == T * (per_round + 32)
    assert res.first_reaching(np.inf, np.inf, 0.0, bits="total") == (0.0, 0.0)
    with pytest.raises(ValueError, match="bits"):
        res.first_reaching(1.0, 1.0, 0.0, bits="both")


# ----------------------------------------------------------------------------- methods


def test_safe_ef_converges_to_lp_optimum_and_beats_no_ef():
    workers, a_pos, a_neg, lam1, alpha = _tiny_np()
    f_star, _ = neyman_pearson_lp(a_pos, a_neg, lam1, alpha)
    x0 = np.zeros(4)
    res = safe_ef(workers, x0, TopK(4, 1), 0.05, 800, 0.0,
                  options=RunOptions(record_every=100))
    f0 = _mean_f(workers, x0)
    assert res.objective[-1] - f_star <= 0.05 * (f0 - f_star)
    assert res.violation[-1] <= 0.01
    noef = topk_no_ef(workers, x0, TopK(4, 1), 0.05, 800, 0.0,
                  options=RunOptions(record_every=100))
    assert noef.objective[-1] - f_star > 2 * (res.objective[-1] - f_star)


def test_baselines_histories_and_state():
    workers, *_ = _tiny_np()
    x0 = np.zeros(4)
    for fn, extra in ((ef21_switching, ()), (topk_no_ef, ()), (ef14_lagrangian, ())):
        res = fn(workers, x0, TopK(4, 2), 0.05, 23, *extra, options=RunOptions(record_every=5))
        np.testing.assert_array_equal(res.rounds, [0, 5, 10, 15, 20, 23])
        assert res.objective.shape == res.bits_up.shape == res.violation.shape == (6,)
        assert np.all(np.diff(res.bits_up) > 0)
    lams = []
    ef14_lagrangian(workers, x0, TopK(4, 2), 0.05, 10, eta=0.5,
                    options=RunOptions(callback=lambda info: lams.append(
                        (info.g_value, info.state["lam"]))))
    assert lams[0] == (pytest.approx(_mean_g(workers, x0), rel=1e-6), 0.0)
    for (g0, l0), (_, l1) in zip(lams[:-1], lams[1:], strict=True):
        assert l1 == pytest.approx(max(0.0, l0 + 0.5 * g0))


def test_stochastic_variant_is_reproducible_and_counts_bits():
    workers, *_ = _tiny_np()
    x0 = np.zeros(4)
    r1 = safe_ef_stochastic(workers, x0, RandK(4, 2), 0.05, 40, 0.0, 3,
                            options=RunOptions(comm=SimComm(4, seed=1), store_iterates=True))
    r2 = safe_ef_stochastic(workers, x0, RandK(4, 2), 0.05, 40, 0.0, 3,
                            options=RunOptions(comm=SimComm(4, seed=1), store_iterates=True))
    r3 = safe_ef_stochastic(workers, x0, RandK(4, 2), 0.05, 40, 0.0, 3,
                            options=RunOptions(comm=SimComm(4, seed=2), store_iterates=True))
    np.testing.assert_array_equal(r1.iterates, r2.iterates)
    assert not np.array_equal(r1.iterates, r3.iterates)
    det = safe_ef(workers, x0, RandK(4, 2), 0.05, 40, 0.0)
    np.testing.assert_array_equal(r1.stats.up, det.stats.up)


def test_stochastic_variant_converges_on_tiny_problem():
    workers, a_pos, a_neg, lam1, alpha = _tiny_np()
    f_star, _ = neyman_pearson_lp(a_pos, a_neg, lam1, alpha)
    x0 = np.zeros(4)
    f0 = _mean_f(workers, x0)
    res = safe_ef_stochastic(workers, x0, TopK(4, 2), 0.025, 800, 0.0, 4,
                             options=RunOptions(record_every=100, comm=SimComm(4, seed=0)))
    assert res.objective[-1] - f_star <= 0.1 * (f0 - f_star)
    assert res.violation[-1] <= 0.02


def test_input_validation():
    workers, *_ = _tiny_np()
    x0 = np.zeros(4)
    with pytest.raises(ValueError, match="gamma"):
        safe_ef(workers, x0, TopK(4, 1), 0.0, 5)
    with pytest.raises(ValueError, match="gamma"):
        safe_ef(workers, x0, TopK(4, 1), float("nan"), 5)
    with pytest.raises(ValueError, match="n_rounds"):
        safe_ef(workers, x0, TopK(4, 1), 0.1, 0)
    with pytest.raises(ValueError, match="NaN"):
        safe_ef(workers, np.array([0, np.nan, 0, 0]), TopK(4, 1), 0.1, 5)
    with pytest.raises(ValueError, match="dim"):
        safe_ef(workers, x0, TopK(5, 1), 0.1, 5)
    with pytest.raises(ValueError, match="workers"):
        safe_ef(workers, x0, TopK(4, 1), 0.1, 5, options=RunOptions(comm=SimComm(3)))
    with pytest.raises(TypeError, match="Worker"):
        safe_ef([object()] * 4, x0, TopK(4, 1), 0.1, 5)
    with pytest.raises(TypeError, match="Compressor"):
        safe_ef(workers, x0, "topk", 0.1, 5)
    with pytest.raises(ValueError, match="stateful"):
        safe_ef(workers, x0, layerwise_adaptive((2, 2), 1), 0.1, 5)
    with pytest.raises(ValueError, match="scalar_dtype"):
        safe_ef(workers, x0, TopK(4, 1), 0.1, 5, options=RunOptions(scalar_dtype="int8"))
    with pytest.raises(TypeError, match="minibatch"):
        safe_ef_stochastic([FunctionWorker(len, len, len, len)] * 4, x0, TopK(4, 1), 0.1, 5)
    bad = FunctionWorker(lambda x: 0.0, lambda x: np.ones(3), lambda x: -1.0, lambda x: 0 * x)
    with pytest.raises(ValueError, match="shape"):
        safe_ef([bad] * 2, x0, TopK(4, 1), 0.1, 5)
    with pytest.raises(ValueError, match="value_dtype|unknown"):
        switching_subgradient(workers, x0, 0.1, 5, value_dtype="bfloat8")
    assert isinstance(Identity(4), Identity)


def test_stop_criterion_ends_the_run_at_a_record_point():
    workers, *_ = _tiny_np()
    full = safe_ef(workers, np.zeros(4), TopK(4, 1), 0.05, 200,
                   options=RunOptions(record_every=10, store_iterates=True))
    target = full.objective[8]
    res = safe_ef(workers, np.zeros(4), TopK(4, 1), 0.05, 200,
                  options=RunOptions(record_every=10, store_iterates=True,
                                     stop=lambda r, f, v: f <= target))
    j = int(np.flatnonzero(full.objective <= target)[0])
    assert res.n_rounds == full.rounds[j] == res.rounds[-1]
    np.testing.assert_array_equal(res.iterates, full.iterates[: res.n_rounds + 1])
    assert res.bits_up[-1] == full.bits_up[j]


def test_worst_case_support_lower_bound():
    """P3: identical workers => every top-k round adds at most k coordinates to the support,
    so after t rounds the relative gap is at least 1 - t k / d (f* = 0, f(x0) = 1)."""
    p3 = worst_case(d=20, n_workers=3, seed=0)
    assert p3.f_star == 0.0 and p3.scale == pytest.approx(1.0)
    k = 2
    for gamma in (0.5, 2.0, 20.0):
        res = safe_ef(p3.workers, p3.x0, TopK(20, k), gamma, 15,
                      options=RunOptions(store_iterates=True))
        for t, x in enumerate(res.iterates):
            assert np.count_nonzero(x) <= t * k
            assert p3.monitor(x)[0] >= 1 - t * k / 20 - 1e-12


# ----------------------------------------------------------------------------- run options


def test_worker_factory_builds_only_local_workers_and_matches_the_list():
    workers, *_ = _tiny_np()
    built = []

    def factory(i):
        built.append(i)
        return workers[i]

    kw = dict(gamma=0.1, n_rounds=30, c=0.0, downlink=TopK(4, 2))
    a = safe_ef(workers, np.zeros(4), TopK(4, 1), options=RunOptions(store_iterates=True),
                **kw)
    b = safe_ef(factory, np.zeros(4), TopK(4, 1),
                options=RunOptions(comm=SimComm(4), store_iterates=True), **kw)
    assert built == [0, 1, 2, 3]  # SimComm hosts every worker, each built once
    np.testing.assert_array_equal(a.iterates, b.iterates)
    with pytest.raises(ValueError, match="factory needs"):
        safe_ef(factory, np.zeros(4), TopK(4, 1), 0.1, 5)
    with pytest.raises(TypeError, match="RunOptions"):
        safe_ef(workers, np.zeros(4), TopK(4, 1), 0.1, 5, options={"record_every": 2})


def test_reduction_monitor_equals_the_global_monitor():
    p = l1_regression(d=12, n_workers=3, m_per_worker=20, sparsity=3, seed=2)
    kw = dict(gamma=0.01, n_rounds=20, c=0.0)
    a = safe_ef(p.workers, p.x0, TopK(12, 2), options=RunOptions(monitor=p.monitor), **kw)
    b = safe_ef(p.workers, p.x0, TopK(12, 2), options=RunOptions(), **kw)  # reduction
    np.testing.assert_array_equal(a.x, b.x)
    np.testing.assert_allclose(a.objective, b.objective, rtol=1e-12)
    np.testing.assert_allclose(a.violation, b.violation, rtol=1e-12, atol=1e-12)


# ----------------------------------------------------------------------------- averaged


class _AsAveraged:
    """A mean-constraint worker seen through the averaged protocol with G = identity."""

    def __init__(self, w):
        self.w = w
        self.f, self.f_subgrad = w.f, w.f_subgrad

    def q(self, x):
        return np.array([self.w.g(x)])

    def q_vjp(self, x, s):
        return s[0] * self.w.g_subgrad(x)


def test_identity_outer_function_reproduces_the_mean_constraint():
    """G(q) = q with q_i = g_i is the mean constraint: same iterates; the server now sends
    G'(qbar) = 1 (32 bits) with every constraint-step decision."""
    workers, *_ = _tiny_np()
    ident = AveragedConstraint(1, lambda q: float(q[0]), lambda q: np.ones(1), "identity")
    kw = dict(gamma=0.15, n_rounds=60, c=0.0, options=RunOptions(store_iterates=True))
    a = safe_ef(workers, np.full(4, 0.3), TopK(4, 1), **kw)
    b = safe_ef([_AsAveraged(w) for w in workers], np.full(4, 0.3), TopK(4, 1),
                constraint=ident, **kw)
    assert 0 < a.n_productive < a.n_rounds
    np.testing.assert_array_equal(a.iterates, b.iterates)
    n_cons = a.n_rounds - a.n_productive
    assert b.bits_down[-1] - a.bits_down[-1] == 32 * n_cons
    assert b.bits_up[-1] == a.bits_up[-1]
    with pytest.raises(TypeError, match="AveragedWorker"):
        safe_ef(workers, np.zeros(4), TopK(4, 1), 0.1, 5, constraint=ident)


def _small_fair(tau=0.05):
    from sparsecert.distributed.safe_ef.fairness import fair_logistic

    return fair_logistic(n_workers=4, n_per_worker=40, p=3, tau=tau, seed=3)


def test_parity_worker_derivatives_and_constraint_subgradient():
    from sparsecert.distributed.safe_ef.fairness import parity_constraint

    p = _small_fair()
    rng = np.random.default_rng(0)
    con = parity_constraint(0.05)
    assert isinstance(p.workers[0], AveragedWorker)

    def g(x):
        return con.value(np.mean([w.q(x) for w in p.workers], axis=0))

    for _ in range(10):
        x, y, u = rng.normal(size=4), rng.normal(size=4), rng.normal(size=4)
        for w in p.workers:
            t = 1e-6
            fd = (w.f(x + t * u) - w.f(x - t * u)) / (2 * t)
            assert fd == pytest.approx(w.f_subgrad(x) @ u, rel=1e-6, abs=1e-8)
            s = rng.normal(size=4)
            jac_u = (w.q(x + u) - w.q(x)) # q is affine: exact directional derivative
            assert s @ jac_u == pytest.approx(w.q_vjp(x, s) @ u, rel=1e-10, abs=1e-10)
        qbar = np.mean([w.q(x) for w in p.workers], axis=0)
        h = np.mean([w.q_vjp(x, con.subgrad(qbar)) for w in p.workers], axis=0)
        assert g(y) >= g(x) + h @ (y - x) - 1e-12  # a subgradient of the convex g
    with pytest.raises(ValueError, match="both groups"):
        con.value(np.array([1.0, 0.0, 1.0, 2.0]))


def test_fair_sigmoid_is_the_two_branch_formula_bit_for_bit():
    from sparsecert.distributed.safe_ef.fairness import _sigmoid

    rng = np.random.default_rng(1)
    t = np.concatenate([rng.normal(scale=30.0, size=257),
                        [0.0, -0.0, 745.0, -745.0, -746.0, 1e308, -1e308, np.inf, -np.inf]])
    pos = t >= 0
    want = np.empty_like(t)  # the textbook stable form, one branch per sign
    want[pos] = 1.0 / (1.0 + np.exp(-t[pos]))
    with np.errstate(under="ignore"):
        e = np.exp(t[~pos])
        want[~pos] = e / (1.0 + e)
        got = _sigmoid(t)
    with np.errstate(over="raise"):
        _sigmoid(t)  # no overflow anywhere
    assert np.array_equal(got.view(np.int64), want.view(np.int64))


def test_fair_reference_against_cvxpy():
    cp = pytest.importorskip("cvxpy")
    p = _small_fair()
    a = np.vstack([w._a1 for w in p.workers])
    y = np.concatenate([w.y for w in p.workers])
    z = np.concatenate([w.z for w in p.workers])
    m = len(y)
    x = cp.Variable(4)
    c = a[z].mean(axis=0) - a[~z].mean(axis=0)
    obj = cp.sum(cp.logistic(-cp.multiply(y, a @ x))) / m + 0.5 * 1e-2 * cp.sum_squares(x[:-1])
    prob = cp.Problem(cp.Minimize(obj), [cp.abs(c @ x) <= 0.05])
    prob.solve(solver=cp.CLARABEL)
    assert p.f_star == pytest.approx(prob.value, abs=1e-7)
    assert abs(p.monitor(p.x_star)[1]) <= 1e-8  # the constraint is active
    assert p.info["unconstrained_gap"] > 0.05


def test_safe_ef_on_the_parity_constraint_converges_and_counts_bits():
    p = _small_fair()
    log = []
    res = safe_ef(p.workers, p.x0, TopK(4, 1), 0.03, 1500, 0.0, constraint=p.constraint,
                  downlink=TopK(4, 2),
                  options=RunOptions(record_every=100, callback=lambda i: log.append(
                      (i.x, i.g_value, i.productive))))
    assert 0 < res.n_productive < res.n_rounds
    f0 = p.monitor(p.x0)[0]
    assert res.objective[-1] - p.f_star <= 0.1 * (f0 - p.f_star)
    assert res.violation[-1] <= 0.01
    for x, g, prod in log[:50]:  # the server's g is the global parity gap minus tau
        assert g == pytest.approx(p.monitor(x)[1], rel=1e-5, abs=1e-6)
        assert prod == (g <= 0.0)
    n_cons = res.n_rounds - res.n_productive
    up = 4 * 32 + (32 + 2)  # q_i (4 floats) + top-1 of d = 4
    assert res.bits_up[-1] == res.n_rounds * up
    assert res.bits_down[-1] == res.n_rounds * (1 + 2 * (32 + 2)) + n_cons * 4 * 32
    lag = ef14_lagrangian(p.workers, p.x0, TopK(4, 1), 0.03, 200, eta=1.0,
                          constraint=p.constraint)
    assert np.isfinite(lag.objective[-1])
    assert lag.bits_down[-1] == 200 * (4 * 32 + 64 * 4)  # lambda * G'(qbar), exact model


def test_float16_scalars_and_values():
    workers, *_ = _tiny_np()
    d, T = 4, 10
    res = safe_ef(workers, np.zeros(d), TopK(d, 1, value_dtype="float16"), 0.1, T,
                  downlink=TopK(d, 2, value_dtype="float16"),
                  options=RunOptions(scalar_dtype="float16"))
    assert res.bits_up[-1] == T * (16 + 16 + 2)
    assert res.bits_down[-1] == T * (1 + 2 * (16 + 2))
    big = FunctionWorker(lambda x: 0.0, lambda x: 0 * x, lambda x: 1e6, lambda x: 0 * x)
    with pytest.raises(ValueError, match="scalar_dtype"):
        safe_ef([big] * 2, np.zeros(d), TopK(d, 1), 0.1, 3,
                options=RunOptions(scalar_dtype="float16"))


_WARM = r"""
import numpy as np
from numba.core.registry import CPUDispatcher
from sparsecert.distributed import bitstream, levels_kernels, subsets
from sparsecert.distributed.comm import Message
from sparsecert.distributed.compress import TopKLevels
from sparsecert.distributed.safe_ef.run import _check_compressor

kernels = [f for m in (bitstream, levels_kernels, subsets) for f in vars(m).values()
           if isinstance(f, CPUDispatcher)]
enc = _check_compressor(TopKLevels(31, 8, 2, index_code="enumerative"), 31)
before = [len(k.signatures) for k in kernels]
msg, _ = enc.roundtrip(np.arange(31.0) - 15)
got = Message(bytes(msg.payload), msg.n_bits)  # as a receiver gets it
enc.decode(got)
enc.decode_sum([got, got], np.zeros(31))
after = [len(k.signatures) for k in kernels]
print(before == after, len(levels_kernels.levels_decode_many.signatures))
"""


@pytest.mark.timeout(120)
def test_compressor_check_compiles_the_decoders_too():
    """The set-up runs the encoder both ways, so that no kernel of the receivers' decoding
    compiles (or loads from numba's cache) inside a run's timed rounds (a fresh process: no
    kernel was used before)."""
    import os
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", _WARM], capture_output=True, text=True,
                          timeout=110, env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "True 1"
