"""Reduced-cost fixing: region bounds from one sort against direct and exact references."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pytest
from _bruteforce import solve_support

from sparsecert.bnb.fixing import dual_terms, plan_fixings, root_fixing_counts
from sparsecert.proof.claims import claim_lower, claim_lower_array
from sparsecert.proof.regions import fixing_regions, region_bounds
from sparsecert.solvers.perspective import RelaxationProblem, solve_node


@dataclass
class Terms:
    k_mid: float
    k_lo: float
    lam: float
    h_mid: np.ndarray
    h_hi: np.ndarray


def _masks(p, fixed_in=(), fixed_out=()):
    fi, fo = np.zeros(p, bool), np.zeros(p, bool)
    fi[list(fixed_in)] = True
    fo[list(fixed_out)] = True
    return fi, fo


def _g_node(h, fi, fo, k):
    """g*_node by definition: the S1 terms plus the budget largest free terms (exact)."""
    beta = k - int(fi.sum())
    free = sorted((Fraction(float(h[j])) for j in np.flatnonzero(~(fi | fo))), reverse=True)
    return sum((Fraction(float(v)) for v in h[fi]), Fraction(0)) + sum(free[:max(beta, 0)],
                                                                       Fraction(0))


@pytest.mark.parametrize("seed", range(6))
def test_region_bounds_match_the_definition_exactly(seed):
    rng = np.random.default_rng(seed)
    p, k = 12, 4
    h = rng.exponential(size=p) * rng.choice([1e-3, 1.0, 1e3], size=p)
    h[rng.integers(p)] = h[rng.integers(p)]  # a tie
    fi, fo = _masks(p, fixed_in=[int(rng.integers(p))], fixed_out=[])
    fo[rng.choice(np.flatnonzero(~fi), 2, replace=False)] = True
    K, lam = 50.0 + rng.normal(), 0.3
    reg = region_bounds(Terms(K, K, lam, h, h), fi, fo, k)
    assert sorted(reg.free) == list(np.flatnonzero(~(fi | fo)))
    for i, j in enumerate(reg.free):
        for forced, value, lower in ((1, reg.in_value[i], reg.in_lower[i]),
                                     (0, reg.out_value[i], reg.out_lower[i])):
            fi2, fo2 = fi.copy(), fo.copy()
            (fi2 if forced else fo2)[j] = True
            exact = Fraction(K) - 2 * Fraction(lam) * _g_node(h, fi2, fo2, k)
            assert lower <= exact  # safe
            assert value == pytest.approx(float(exact), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_fixing_regions_bound_each_cut_off_region_exactly(seed):
    """One entry per fixing, in the fixings' order: the region z_j = 1 - v with the base
    fixings, bounded safely below its exact value; a fixing of a variable that is not free at
    the node (or out of range) gets -inf, so no claim can rest on it."""
    rng = np.random.default_rng(100 + seed)
    p, k = 10, 3
    h = rng.exponential(size=p) * rng.choice([1e-2, 1.0, 1e2], size=p)
    fi, fo = _masks(p, fixed_in=[0], fixed_out=[1, 2])
    K, lam = 40.0 + rng.normal(), 0.7
    free = [int(j) for j in rng.permutation(np.arange(3, p))]
    fixings = [(j, int(rng.integers(2))) for j in free] + [(0, 1), (1, 0), (p + 3, 0)]
    values, lowers = fixing_regions(Terms(K, K, lam, h, h), fi, fo, k, fixings)
    assert values.shape == lowers.shape == (len(fixings),)
    for (j, v), value, lower in zip(fixings, values, lowers, strict=True):
        if j not in free:
            assert value == lower == -np.inf
            continue
        fi2, fo2 = fi.copy(), fo.copy()
        (fo2 if v == 1 else fi2)[j] = True  # fixed out (v = 0) cuts off z_j = 1, and back
        exact = Fraction(K) - 2 * Fraction(lam) * _g_node(h, fi2, fo2, k)
        assert Fraction(float(lower)) <= exact
        assert value == pytest.approx(float(exact), rel=1e-12, abs=1e-12)


def test_claim_lower_array_claims_what_the_scalar_rule_claims():
    """Entry by entry the rounding of claim_lower (never above the safe lower bound's side of
    the computed value), -inf wherever either input is not finite."""
    rng = np.random.default_rng(7)
    v = rng.normal(size=200) * 10.0 ** rng.integers(-8, 8, size=200)
    lo = v - np.abs(rng.normal(size=200)) * 10.0 ** rng.integers(-20, 0, size=200) * np.abs(v)
    lo[:5] = v[:5] + 1.0  # a "lower" bound above the value: radius 0
    v[5], lo[6], v[7], lo[7] = np.inf, -np.inf, np.nan, 0.0
    got = claim_lower_array(v, lo)
    want = np.array([claim_lower(float(a), float(b)) for a, b in zip(v, lo, strict=True)])
    assert np.array_equal(got, want)
    ok = np.isfinite(v) & np.isfinite(lo)
    below = ok & (lo <= v)  # a claim never exceeds the safe lower bound it rests on
    assert all(Fraction(float(g)) <= Fraction(float(b))
               for g, b in zip(got[below], lo[below], strict=True))
    assert (got[ok] < v[ok]).all() and np.isneginf(got[~ok]).all()


def test_safe_terms_are_used_for_the_lower_bounds():
    p, k = 8, 2
    h = np.linspace(1.0, 2.0, p)
    h_hi = h * 1.5  # safe upper terms
    fi, fo = _masks(p)
    reg = region_bounds(Terms(30.0, 29.0, 1.0, h, h_hi), fi, fo, k)
    for i, j in enumerate(reg.free):
        fi2 = fi.copy()
        fi2[j] = True
        exact_hi = Fraction(29.0) - 2 * _g_node(h_hi, fi2, fo, k)
        assert reg.in_lower[i] <= exact_hi
        assert reg.in_lower[i] < reg.in_value[i]


def test_no_regions_without_cardinality_coupling():
    h = np.ones(5)
    t = Terms(1.0, 1.0, 1.0, h, h)
    assert region_bounds(t, *_masks(5, fixed_in=[0, 1]), k=2) is None  # budget 0
    assert region_bounds(t, *_masks(5, fixed_out=[0, 1]), k=3) is None  # all free fit


def _tiny(seed=0, n=25, p=8):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    X[:, 1] = X[:, 0] + 0.1 * rng.normal(size=n)
    y = X[:, [0, 3, 5]] @ np.array([1.0, -1.0, 0.7]) + 0.3 * rng.normal(size=n)
    return X, y


@pytest.mark.parametrize("seed", range(3))
def test_regions_bound_every_support_inside_them(seed):
    """Validity against enumeration: each region's bound is below every support in it."""
    X, y = _tiny(seed)
    k, lam = 3, 0.5
    prob = RelaxationProblem.from_data(X, y, lam)
    fi, fo = _masks(X.shape[1], fixed_in=[3], fixed_out=[6])
    res = solve_node(prob, k, fi, fo, rel_tol=1e-3, max_iter=40)  # any witness is valid
    K, h = dual_terms(prob, res.dual)
    reg = region_bounds(Terms(K, K, lam, h, h), fi, fo, k)
    objective = {}
    for size in range(k + 1):
        for S in itertools.combinations(range(X.shape[1]), size):
            if 3 in S and 6 not in S:
                objective[S] = solve_support(X, y, S, "squared", lam)[0]
    for i, j in enumerate(reg.free):
        inside = [v for S, v in objective.items() if j in S]
        outside = [v for S, v in objective.items() if j not in S]
        assert reg.in_lower[i] <= min(inside) + 1e-9
        assert reg.out_lower[i] <= min(outside) + 1e-9


def test_plan_fixes_out_below_the_top_and_in_inside_it():
    p, k = 10, 3
    h = np.array([9.0, 8.0, 7.0, 1.0, 0.5, 0.4, 0.3, 0.2, 0.1, 0.05])
    t = Terms(100.0, 100.0, 1.0, h, h)
    fi, fo = _masks(p)
    node_bound = 100.0 - 2 * (9 + 8 + 7)
    # cutoff just above the node bound: forcing in a small term or out a big one passes it
    plan = plan_fixings(t, fi, fo, k, cutoff=node_bound + 2 * (7 - 0.5) - 1e-9)
    fixed = dict(plan.fixings)
    assert {j for j, v in fixed.items() if v == 0} == {4, 5, 6, 7, 8, 9}
    # forcing j out costs 2 (h_j - h_4) = 2 (h_j - 1): >= 13 for j = 0, 1, not for j = 2
    assert {j for j, v in fixed.items() if v == 1} == {0, 1}
    reg = region_bounds(t, fi, fo, k)
    for (j, v), b in zip(plan.fixings, plan.region_bounds, strict=True):
        i = int(np.flatnonzero(reg.free == j)[0])
        lower, value = (reg.in_lower[i], reg.in_value[i]) if v == 0 else (reg.out_lower[i],
                                                                           reg.out_value[i])
        assert b == claim_lower_array(np.array([value]), np.array([lower]))[0] and b <= lower
    assert not plan.covers_node
    assert plan_fixings(t, fi, fo, k, cutoff=np.inf).fixings == []


def test_plan_covers_the_node_when_more_must_be_in_than_the_budget():
    # only top-beta variables can be forced in while the node's own bound is below the cutoff;
    # at or above it every free variable qualifies and the fixings cover the node
    p, k = 6, 2
    h = np.array([5.0, 4.0, 0.1, 0.2, 0.3, 0.4])
    t = Terms(20.0, 20.0, 1.0, h, h)
    node_bound = 20.0 - 2 * 9.0
    plan = plan_fixings(t, *_masks(p), k, cutoff=node_bound - 1.0)
    assert plan.covers_node
    assert plan.fixings == [(0, 1), (1, 1)]  # the budget's worth, in rank order
    # the remainder (0 and 1 in, the rest out) lies in the region z_5 = 0 of the next candidate,
    # whose bound is the node's (g* = 9), not in the fixings' own regions (g* = 4.4 and 5.4)
    assert plan.remainder_bound == pytest.approx(node_bound, rel=1e-12)
    assert plan.remainder_bound <= node_bound
    assert min(plan.region_bounds) > node_bound
    assert not plan_fixings(t, *_masks(p), k, cutoff=node_bound + 1.0).covers_node


def test_riboflavin_like_root_fixes_at_the_optimum():
    """A root witness fixes variables only when the gap is small relative to the terms."""
    X, y = _tiny(5, n=20, p=30)
    prob = RelaxationProblem.from_data(X, y, 5.0)
    res = solve_node(prob, 2, rel_tol=1e-10, max_iter=20000)
    n_out, n_in = root_fixing_counts(prob, 2, res, res.lower_bound * 1.001)
    assert n_out > 0
    assert root_fixing_counts(prob, 2, res, res.lower_bound * 100.0) == (0, 0)


# ---------------------------------------------------------------------------------------------
# in the search
# ---------------------------------------------------------------------------------------------
FIXING_CASES = [  # (n, p, k, lambda2, loss, intercept, eig_shift): fixings fire in each
    (20, 30, 2, 5.0, "squared", False, None),  # p > n: dual witnesses
    (40, 12, 3, 1.0, "squared", False, "auto"),  # shifted witnesses
    (60, 15, 3, 1.0, "squared", True, "auto"),  # shifted, centred intercept
    (40, 12, 2, 1.0, "logistic", True, None),  # zero-sum dual witnesses
]


def _case_data(n, p, loss, seed=0):
    X, y = _tiny(seed, n=n, p=p)
    if loss == "logistic":
        y = np.where(y > 0, 1.0, -1.0)
    return X, y


def _engine(case, **kw):
    from sparsecert.bnb import BnBSettings, BranchAndBound

    n, p, k, lam, loss, icpt, shift = case
    X, y = _case_data(n, p, loss)
    prob = RelaxationProblem.from_data(X, y, lam, loss=loss, fit_intercept=icpt,
                                       eig_shift=shift)
    return BranchAndBound(prob, k, BnBSettings(verbose=0, **kw))


@pytest.mark.parametrize("case", FIXING_CASES)
def test_search_with_fixing_reaches_the_enumerated_optimum(case):
    from _bruteforce import brute_force

    n, p, k, lam, loss, icpt, _ = case
    X, y = _case_data(n, p, loss)
    want, support = brute_force(X, y, k, loss, lam, fit_intercept=icpt)
    eng = _engine(case)
    res = eng.run()
    assert res.status == "optimal"
    assert eng.n_fixed > 0
    assert res.upper_bound == pytest.approx(want, rel=1e-7)
    assert res.lower_bound <= want + 1e-9 * abs(want)
    fixed = [nd for nd in res.nodes if nd.bound_fixings]
    for nd in fixed:  # extended fixings include the bound fixings; base ones do not
        base_in, base_out = nd.base_fixings()
        for j, v in nd.bound_fixings:
            assert (nd.fixed_in if v else nd.fixed_out)[j]
            assert not (base_in[j] or base_out[j])
        assert nd.witness is not None  # a node with fixings keeps its witness


@pytest.mark.timeout(300)
def test_fixings_do_not_depend_on_the_executor():
    case = FIXING_CASES[0]
    a = _engine(case, batch_size=3, rel_gap=0.0, abs_gap=0.0).run()
    b = _engine(case, batch_size=3, rel_gap=0.0, abs_gap=0.0, n_jobs=2).run()
    sig = [[(nd.id, nd.parent, nd.status, tuple(nd.bound_fixings)) for nd in r.nodes]
           for r in (a, b)]
    assert any(nd.bound_fixings for nd in a.nodes)
    assert sig[0] == sig[1]
    assert a.lower_bound == b.lower_bound


# ---------------------------------------------------------------------------------------------
# in the certificate
# ---------------------------------------------------------------------------------------------
CERT_CASES = [  # (n, p, k, lambda2, loss, intercept, eig_shift): both losses, +/- intercept
    (20, 30, 2, 5.0, "squared", False, None),
    (20, 30, 2, 5.0, "squared", True, None),
    (60, 15, 3, 1.0, "squared", True, "auto"),
    (40, 12, 2, 1.0, "logistic", True, None),
    (40, 12, 2, 1.0, "logistic", False, None),
]


def _certified(case, seed=0):
    import sparsecert

    n, p, k, lam, loss, icpt, shift = case
    X, y = _case_data(n, p, loss, seed)
    res = sparsecert.certify(X, y, k, lam, loss=loss, fit_intercept=icpt, eig_shift=shift,
                             verbose=0)
    return X, y, res


@pytest.mark.parametrize("case", CERT_CASES)
def test_certificates_with_fixings_verify_and_reach_the_optimum(case, tmp_path):
    from _bruteforce import brute_force

    import sparsecert

    n, p, k, lam, loss, icpt, _ = case
    X, y, res = _certified(case, seed=1)
    want, _ = brute_force(X, y, k, loss, lam, fit_intercept=icpt)
    assert res.status == "optimal"
    assert res.objective == pytest.approx(want, rel=1e-7)
    assert res.lower_bound <= want
    fixing_nodes = [nd for nd in res.certificate.nodes if nd["derive"]]
    assert fixing_nodes  # the run made fixings, and the certificate says where
    for nd in fixing_nodes:  # ... each with the node's witness (own or inherited)
        cur = nd
        while cur["witness"] is None:
            cur = res.certificate.nodes[cur["parent"]]
        assert res.certificate.witness(*cur["witness"]) is not None
    res.save(tmp_path / "c.json")
    report = sparsecert.verify(tmp_path / "c.json", X, y)
    assert report.ok, str(report)


def test_fixings_the_verifier_cannot_derive_are_no_fixings():
    """The certificate flags the nodes whose bound fixings the verifier derives from their
    witness. Without the flags, or with a root witness that proves nothing (the dual point
    zeta = 0), the regions below stay as large as the branchings make them, and the claimed
    bound fails."""
    from _certgen import forge, reforge

    from sparsecert.certificate import verify_certificate

    X, y, res = _certified(CERT_CASES[0])
    cert = res.certificate
    doc, root = forge(cert)
    assert root.derive and root.witness is not None
    assert verify_certificate(reforge(doc, root), X, y).ok  # the re-encoding itself is genuine
    for nd in root.preorder():
        nd.derive = False
    rep = verify_certificate(reforge(doc, root), X, y)
    assert not rep.ok and set(rep.failed_checks) == {"leaf_bounds"}, str(rep)
    doc, root = forge(cert)
    root.witness = ("dual", np.zeros(X.shape[0]))
    rep = verify_certificate(reforge(doc, root), X, y)
    assert not rep.ok and set(rep.failed_checks) == {"leaf_bounds"}, str(rep)


@pytest.mark.parametrize("loss,icpt", [("squared", True), ("logistic", True),
                                       ("squared", False)])
def test_terms_on_the_columns_not_fixed_out_are_those_of_the_whole_witness(loss, icpt):
    from sparsecert.bnb.evaluate import node_witness
    from sparsecert.bnb.fixing import WitnessTerms, fixing_plan

    rng = np.random.default_rng(4)
    n, p, k = 12, 40, 4
    X = rng.standard_normal((n, p)) + 0.5
    u = X[:, 0] - X[:, 5]
    y = u + 0.3 * rng.standard_normal(n) if loss == "squared" else np.sign(u + 0.1)
    prob = RelaxationProblem.from_data(X, y, 0.5, loss=loss, fit_intercept=icpt)
    fi, fo = _masks(p, fixed_in=(5,), fixed_out=range(20, 37))
    res = solve_node(prob, k, fi, fo, rel_tol=1e-9)
    witness = node_witness(prob, res)
    cols = np.flatnonzero(~fo)
    terms = WitnessTerms(prob)
    whole, sub = terms.safe(witness), terms.safe(witness, cols)
    assert (sub.k_mid, sub.k_lo, sub.lam) == (whole.k_mid, whole.k_lo, whole.lam)
    np.testing.assert_allclose(sub.h_mid[cols], whole.h_mid[cols], rtol=1e-13)
    np.testing.assert_allclose(sub.h_hi[cols], whole.h_hi[cols], rtol=1e-13)
    assert np.all(sub.h_hi[fo] == np.inf)  # never read; a bound from them would be -inf
    K, lam, h = terms.plain(witness, cols)
    K0, lam0, h0 = terms.plain(witness)
    assert (K, lam) == (K0, lam0)
    np.testing.assert_allclose(h[cols], h0[cols], rtol=1e-13)
    # the plans from both agree (cutoffs just above the node's bound fix some variables)
    n_fixed = 0
    for rise in (1e-3, 1e-2, 1e-1):
        cut = res.lower_bound + rise * abs(res.lower_bound)
        a = plan_fixings(whole, fi, fo, k, cut * (1 + 1e-9))
        b = fixing_plan(terms, witness, fi, fo, k, cut)
        assert a.fixings == ([] if b is None else b.fixings)
        n_fixed += len(a.fixings)
    assert n_fixed > 0
