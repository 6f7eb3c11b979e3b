"""The verifier's node bounds against independent references.

- at the optimum of the perspective relaxation (solved by cvxpy/Clarabel) the bound of the dual
  witness f'(X b) (no shift) and of the shifted witness b equals the relaxation value;
- at ANY witness (random duals and shifted points, random node fixings, box M) the bound never
  exceeds the node's true optimum, enumerated by brute force;
- the bound-fixing regions (one sort for all "forced in / forced out" bounds) agree with the
  region's own bound computed directly, and certificates using them verify or fail as they must;
- an open leaf that inherits its parent's witness is bounded at least as well as the parent.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from _certgen import (
    TNode,
    _df,
    branch,
    make_certificate,
    make_data,
    map_labels,
    objective,
    solve_restricted,
)

from sparsecert.certificate import Certificate, verify_certificate
from sparsecert.certificate import verify as V
from sparsecert.certificate.verify import Problem, dual_domain_bounds, node_lower_bound


def _relaxation_cvxpy(Xc, yc, k, lam, mu, M=None, fin=(), fout=()):
    """Perspective relaxation of the (shifted) least-squares node problem, solved by Clarabel."""
    cp = pytest.importorskip("cvxpy")
    n, p = Xc.shape
    b, z = cp.Variable(p), cp.Variable(p)
    P = Xc.T @ Xc - mu * np.eye(p)
    obj = (cp.quad_form(b, cp.psd_wrap(P)) - 2 * (Xc.T @ yc) @ b + yc @ yc
           + (lam + mu) * cp.sum(cp.hstack([cp.quad_over_lin(b[j], z[j]) for j in range(p)])))
    cons = [cp.sum(z) <= k, z >= 0, z <= 1]
    cons += [z[j] == 1 for j in fin] + [z[j] == 0 for j in fout] + [b[j] == 0 for j in fout]
    if M is not None:
        cons += [cp.abs(b) <= M * z]
    prob = cp.Problem(cp.Minimize(obj), cons)
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return prob.value, b.value


@pytest.mark.parametrize("shift", [False, True])
@pytest.mark.parametrize("M", [None, 0.3])
@pytest.mark.parametrize("fixing", [((), ()), ((2,), (0,))])
def test_bound_equals_relaxation_value_at_its_optimum(shift, M, fixing):
    X, y = make_data("squared", n=30, p=6, seed=3)
    Xc, yc = X - X.mean(0), y - y.mean()
    mu = 0.5 * np.linalg.eigvalsh(Xc.T @ Xc)[0] if shift else 0.0
    fin, fout = fixing
    val, b = _relaxation_cvxpy(Xc, yc, 2, 0.5, mu, M, fin, fout)
    b = np.where(np.isin(np.arange(6), fout), 0.0, b)
    if shift:
        w = ("shifted", b)
    else:
        zeta = 2.0 * (Xc @ b - yc)
        w = ("dual", _zero_sum(zeta))
    lb = node_lower_bound(X, y, Problem("squared", 0.5, 2, M, fit_intercept=True), fin, fout, w,
                          eig_shift=mu)
    assert lb <= val + 1e-7 * abs(val)
    assert lb == pytest.approx(val, rel=1e-6)


def _zero_sum(z):
    from _certgen import zero_sum

    return zero_sum(z)


def test_shift_strengthens_the_root_bound():
    X, y = make_data("squared", n=30, p=6, seed=3)
    X, y = X - X.mean(0), y - y.mean()
    mu = 0.5 * np.linalg.eigvalsh(X.T @ X)[0]
    v0, b0 = _relaxation_cvxpy(X, y, 1, 0.5, 0.0)
    v1, b1 = _relaxation_cvxpy(X, y, 1, 0.5, mu)
    lb0 = node_lower_bound(X, y, Problem("squared", 0.5, 1, None), (), (),
                           ("dual", 2 * (X @ b0 - y)))
    lb1 = node_lower_bound(X, y, Problem("squared", 0.5, 1, None), (), (), ("shifted", b1),
                           eig_shift=mu)
    assert lb1 > lb0 * 1.5


def _node_optimum(X, ym, loss, k, lam, M, fin, fout, fit_intercept):
    """Brute force: min over supports S1 u T, T among the free variables, |T| <= budget."""
    p = X.shape[1]
    free = [j for j in range(p) if j not in fin and j not in fout]
    budget = k - len(fin)
    best = np.inf
    for T in itertools.combinations(free, min(budget, len(free))):
        b, c, _ = solve_restricted(X, ym, loss, lam, sorted(list(fin) + list(T)), M,
                                   fit_intercept)
        best = min(best, objective(X, ym, loss, lam, b, c))
    return best


@pytest.mark.parametrize(
    "loss, fit_intercept, M",
    [("squared", False, None), ("squared", True, None), ("squared", False, 0.3),
     ("logistic", False, None), ("logistic", True, None), ("squared_hinge", False, None),
     ("poisson", False, None), ("poisson", True, None)],
)
def test_any_witness_gives_a_valid_bound(loss, fit_intercept, M):
    rng = np.random.default_rng(7)
    X, y = make_data(loss, n=20, p=5, seed=5)
    ym = map_labels(y, loss)
    Xd = X - X.mean(0) if fit_intercept else X
    k, lam = 2, 0.4
    mu = 0.9 * np.linalg.eigvalsh(Xd.T @ Xd)[0] if loss == "squared" else 0.0
    lo, hi = dual_domain_bounds(loss, ym)
    for trial in range(6):
        perm = rng.permutation(5)
        fin, fout = perm[: trial % 3].tolist(), perm[2:2 + trial % 2].tolist()
        opt = _node_optimum(X, ym, loss, k, lam, M, fin, fout, fit_intercept)
        z = _df(loss, Xd @ rng.standard_normal(5) * 0.3, ym)
        if fit_intercept:
            from _certgen import zero_sum

            z = zero_sum(z, lo, hi)
        witnesses = [("dual", z, 0.0)]
        if loss == "squared":
            witnesses.append(("shifted", rng.standard_normal(5), mu))
        for kind, vec, shift in witnesses:
            lb = node_lower_bound(X, ym, Problem(loss, lam, k, M, fit_intercept=fit_intercept), fin,
                                  fout, (kind, vec), eig_shift=shift)
            assert lb <= opt, (kind, fin, fout)


def test_dual_outside_domain_or_nonzero_sum_gives_minus_infinity():
    X, y = make_data("logistic", n=10, p=3, seed=0)
    z = -0.5 * y
    assert np.isfinite(node_lower_bound(X, y, Problem("logistic", 1.0, 1, None), (), (),
                                        ("dual", z)))
    z_bad = z.copy()
    z_bad[0] = 3.0 * y[0]
    assert node_lower_bound(X, y, Problem("logistic", 1.0, 1, None), (), (),
                            ("dual", z_bad)) == -np.inf
    z_sum = z.copy()
    z_sum[0] += 1e-3 * -y[0]  # inside the domain, sum moved
    assert node_lower_bound(X, y, Problem("logistic", 1.0, 1, None, fit_intercept=True), (), (),
                            ("dual", z_sum)) == -np.inf


def test_g_star_upper_bound_matches_definition_by_enumeration():
    cp = pytest.importorskip("cvxpy")
    rng = np.random.default_rng(1)
    for M in (None, 0.5):
        for _ in range(20):
            a = np.abs(rng.standard_normal(6) * 2)
            fin = [0] if rng.random() < 0.5 else []
            state = np.zeros(6, dtype=np.int8)
            state[fin] = 1
            state[5] = 2
            free = [j for j in range(5) if j not in fin]
            h = 0.5 * a * a if M is None else np.where(a <= M, 0.5 * a * a, M * a - M * M / 2)
            exact = sum(h[fin]) + max(sum(h[list(T)]) for T in
                                      itertools.combinations(free, 2 - len(fin)))
            up = V._g_star_up(V._huber_up(a, M), state, 2)
            assert exact <= up <= exact * (1 + 1e-14)
    # Huber: cvxpy's huber(t, M) equals 2 H_M(t)
    t = np.linspace(0, 3, 13)
    assert V._huber_up(t, 1.0) == pytest.approx(0.5 * cp.huber(t, 1.0).value)


@pytest.mark.parametrize("M", [None, 0.4])
def test_fixing_region_bounds_equal_the_direct_bounds(M):
    """One sort gives every "forced in" / "forced out" region bound; each equals the bound of
    the node with the extended fixings computed directly (up to the last rounding)."""
    rng = np.random.default_rng(3)
    p, k = 12, 4
    for trial in range(10):
        t = V._Terms(k_low=100.0, lam=0.7, h_up=V._huber_up(np.abs(rng.standard_normal(p)), M))
        if trial % 3 == 0:
            t.h_up[:4] = t.h_up[4]  # ties
        state = np.zeros(p, dtype=np.int8)
        state[rng.choice(p, 3, replace=False)] = [1, 2, 2] if trial % 2 else [2, 2, 2]
        free = np.flatnonzero(state == 0).tolist()
        fixings = [(j, int(rng.integers(0, 2))) for j in free]
        got = V._fixing_bounds(t, state, k, fixings)
        for (j, v), g in zip(fixings, got, strict=True):
            st = state.copy()
            st[j] = 1 if v == 0 else 2  # the region cut off by fixing j to v
            if (st == 1).sum() > k:
                assert g == np.inf
                continue
            direct = V._region_bound(t, V._g_star_up(t.h_up, st, k))
            assert g == pytest.approx(direct, rel=1e-14, abs=1e-12)


def _derivation_case():
    """k = 1, p = 4, y close to 3 x_0, lambda2 = 10. The root's witness (the dual at the empty
    model) bounds the regions {z_j = 1}, j = 1, 2, 3, and {z_0 = 0} above the optimum: the
    verifier derives z_j = 0 for j >= 1 and z_0 = 1, which leaves the root's child z_0 = 0 an
    empty region. That child's own witness is weak (its bound is below the optimum without the
    fixings); the child z_0 = 1 is bounded by its exact dual. The claim: just below that."""
    rng = np.random.default_rng(7)
    X = rng.standard_normal((30, 4))
    y = 3.0 * X[:, 0] + 0.05 * rng.standard_normal(30)
    k, lam = 1, 10.0
    z_root = -2.0 * y  # f'(0) for the squared loss
    z_weak = z_root + 4.0 * X[:, 1]
    b1, _, z1 = solve_restricted(X, y, "squared", lam, [0])
    des = V._Design(X, y, "squared", False)
    tr, tw, t1 = (V._dual_terms(des, z[None, :], lam, None)[0] for z in (z_root, z_weak, z1))
    state = np.zeros(4, dtype=np.int8)
    _, b_in, b_out = V._free_region_bounds(tr, state, k)
    child1 = V._region_bound(t1, V._g_star_up(t1.h_up, np.array([1, 0, 0, 0], np.int8), k))
    lower = child1 * (1 - 1e-9)
    assert min(b_in[1:].min(), b_out[0]) > lower > max(b_in[0], b_out[1:].max())
    assert V._region_bound(tr, V._g_star_up(tr.h_up, state, k)) < lower  # not covered whole
    weak = V._region_bound(tw, V._g_star_up(tw.h_up, np.array([2, 0, 0, 0], np.int8), k))
    assert weak < lower  # the child z_0 = 0 fails unless it is empty
    ub = objective(X, y, "squared", lam, b1)
    return X, y, k, lam, b1, ub, lower, z_root, z_weak, z1


def _derivation_certificate(case, root_witness, derive, child0=None):
    X, y, k, lam, b1, ub, lower, _, z_weak, z1 = case
    root = branch(0, child0 or TNode(status="pruned", witness=("dual", z_weak)),
                  TNode(status="solved", witness=("dual", z1)),
                  witness=("dual", root_witness), derive=derive)
    return make_certificate(
        X, y, root, problem=dict(loss="squared", k=k, lambda2=lam, fit_intercept=False),
        incumbent=dict(coef=b1, intercept=0.0, objective=ub),
        bounds=dict(lower_bound=lower, upper_bound=ub * (1 + 1e-9), status="node_limit"))


def test_bound_fixings_are_derived_by_the_verifier_and_only_those():
    """The verifier derives the bound fixings of a flagged node from its witness (every free
    j whose region has a bound >= LB). The same tree without the flag, or with a root witness
    that proves nothing (zeta = 0), fails at the child z_0 = 0: a fixing the verifier cannot
    derive is no fixing."""
    case = _derivation_case()
    X, y, z_root = case[0], case[1], case[7]
    rep = verify_certificate(_derivation_certificate(case, z_root, True), X, y)
    assert rep.ok, str(rep)
    assert "4 bound fixings derived" in dict((n, m) for n, _, m in rep.checks)["tree_fixings"]
    assert rep.summary["n_regions"] == 5  # the four derived regions and the leaf z_0 = 1
    for witness, derive in ((z_root, False), (np.zeros(30), True)):
        rep = verify_certificate(_derivation_certificate(case, witness, derive), X, y)
        assert rep.failed_checks == ["leaf_bounds"], str(rep)
        assert "leaf 1 (" in dict(rep.failures)["leaf_bounds"]


def test_a_derived_fixing_empties_a_child_which_is_not_read():
    """The derived fixing z_0 = 1 makes the root's child z_0 = 0 an empty region: its subtree
    is skipped (here a witness outside the domain and a malformed record: neither is read)."""
    case = _derivation_case()
    X, y, z_root = case[0], case[1], case[7]
    junk = branch(2, TNode(status="open", witness=("dual", np.full(30, 1e308))),
                  TNode(status="open", raw=dict(head=0xFF)))
    rep = verify_certificate(_derivation_certificate(case, z_root, True, junk), X, y)
    assert rep.ok, str(rep)
    assert "3 records in empty or covered regions not read" in dict(
        (n, m) for n, _, m in rep.checks)["tree_structure"]
    rep = verify_certificate(_derivation_certificate(case, z_root, False, junk), X, y)
    assert not rep.ok and rep.failed_checks == ["tree_structure"], str(rep)
    assert "node 3: malformed record" in dict(rep.failures)["tree_structure"]


def test_open_leaves_inherit_the_parent_witness():
    """Root relaxed by cvxpy, branched once, both children open: they inherit the root witness."""
    X, y = make_data("squared", n=30, p=6, seed=3)
    val, b = _relaxation_cvxpy(X, y, 1, 0.5, 0.0)
    slack = 1e-6 * max(1.0, abs(val))
    b0, _, _ = solve_restricted(X, y, "squared", 0.5, [0])
    ub = objective(X, y, "squared", 0.5, b0)
    nodes = [dict(id=0, parent=None, branch_var=None, branch_value=None, status="branched",
                  bound=val, witness=("dual", 2 * (X @ b - y))),
             dict(id=1, parent=0, branch_var=3, branch_value=0, status="open", bound=val,
                  witness=None),
             dict(id=2, parent=0, branch_var=3, branch_value=1, status="open", bound=val,
                  witness=None)]
    cert = Certificate.build(
        X, y, problem=dict(loss="squared", k=1, lambda2=0.5, max_abs_coef=None,
                           fit_intercept=False),
        incumbent=dict(coef=b0, intercept=0.0, objective=ub),
        bounds=dict(lower_bound=val - slack, upper_bound=ub * (1 + 1e-12),
                    status="node_limit"),
        nodes=nodes)
    rep = verify_certificate(cert, X, y)
    assert rep.ok, str(rep)
    assert "2 leaves use an ancestor's" in dict((n, m) for n, _, m in rep.checks)[
        "leaf_witnesses"]
    assert rep.certified_lower_bound >= val - slack  # children bounded at least as the root
    assert (ub - val) / max(1.0, ub) > 1e-2  # the k = 1 relaxation is far from tight here...
    assert rep.exit_code == 3  # ... so the certificate is valid but the gap is above tolerance


@pytest.mark.parametrize("loss", ["squared", "logistic", "squared_hinge", "poisson"])
def test_shifted_with_zero_shift_equals_dual_at_its_gradient(loss):
    """Fenchel-Young: with mu -> 0 the shifted (point) bound at b is the dual bound at
    zeta = f'(Xb); for the squared loss compare a tiny shift with the dual, the other losses
    must refuse the shifted form."""
    rng = np.random.default_rng(11)
    X, y = make_data(loss, n=15, p=5, seed=6)
    ym = map_labels(y, loss)
    for fin, fout in [((), ()), ((1,), (3,)), ((0, 2), ())]:
        b = 0.3 * rng.standard_normal(5)
        ld = node_lower_bound(X, ym, Problem(loss, 0.8, 2, 0.7), fin, fout,
                              ("dual", _df(loss, X @ b, ym)))
        assert np.isfinite(ld)
        if loss == "squared":
            ls = node_lower_bound(X, ym, Problem(loss, 0.8, 2, 0.7), fin, fout, ("shifted", b),
                                  eig_shift=1e-12)
            assert ls == pytest.approx(ld, rel=1e-9, abs=1e-9)


def test_certificate_verify_method():
    X, y = make_data("squared", n=15, p=4, seed=0)
    from _certgen import enumeration_certificate

    cert, _ = enumeration_certificate(X, y, "squared", 2, 0.5)
    assert cert.verify(X, y).exit_code == 0
    assert cert.verify(X, y + 1.0).exit_code == 1
    assert cert.verify(X, y, k=3).exit_code == 1
