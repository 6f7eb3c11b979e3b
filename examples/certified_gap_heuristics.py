"""How far are heuristic sparse models from the best? Their certified gaps on riboflavin.

Three heuristics pick ``k`` of riboflavin's 4088 genes (bundled data, standardised), each model
refitted with the ridge penalty ``lambda2`` on its support: a Lasso refit (the largest Lasso
support of at most ``k`` genes on scikit-learn's path), forward stepwise selection (greedy),
and an L0Learn-style local search (greedy, then single swaps while they improve). abess's
model joins them when abess is installed (skipped with a note otherwise).
:func:`sparsecert.certified_gap` then proves, within a time budget, a lower bound on the
best objective of any ``k``-gene model and so how far each model is at most from it; each
certificate is re-checked by the standalone verifier.

Run: ``python examples/certified_gap_heuristics.py [--quick] [--out DIR]`` (``--quick``: the
diabetes data, 442 x 10, and a short budget)
"""

from __future__ import annotations

import numpy as np
from _common import parse_args, savefig
from matplotlib import pyplot as plt
from sklearn.linear_model import lasso_path

import sparsecert
from sparsecert.datasets import load_diabetes, load_riboflavin, standardize


def ridge_refit(X, y, support, lambda2):
    """The exact minimiser of ``||y - X_S b - c||^2 + lambda2 ||b||^2`` on ``support``."""
    support = sorted(support)
    coef = np.zeros(X.shape[1])
    if not support:
        return coef, float(y.mean())
    A = X[:, support] - X[:, support].mean(axis=0)
    b = np.linalg.solve(A.T @ A + lambda2 * np.eye(len(support)), A.T @ (y - y.mean()))
    coef[support] = b
    return coef, float(y.mean() - X[:, support].mean(axis=0) @ b)


def objective(X, y, coef, c, lambda2):
    r = y - X @ coef - c
    return float(r @ r + lambda2 * coef @ coef)


def lasso_refit(X, y, k, lambda2):
    """The largest support of at most k on the Lasso path, refitted."""
    Xc, yc = X - X.mean(0), y - y.mean()
    top = np.abs(Xc.T @ yc).max() / len(y)  # the smallest alpha with the empty model
    _, coefs, _ = lasso_path(Xc, yc, alphas=np.geomspace(top, 1e-4 * top, 200))
    sizes = (coefs != 0).sum(axis=0)
    best = np.flatnonzero(sizes <= k).max()
    return ridge_refit(X, y, np.flatnonzero(coefs[:, best]), lambda2)


def forward_stepwise(X, y, k, lambda2):
    """Greedy: add the feature that lowers the refitted objective most, k times."""
    support: list[int] = []
    Xc = X - X.mean(0)
    for _ in range(k):
        coef, c = ridge_refit(X, y, support, lambda2)
        r = y - X @ coef - c
        score = np.abs(Xc.T @ r)  # screen by correlation with the residual, then refit
        score[support] = -1
        cands = np.argsort(score)[::-1][:20]
        vals = [objective(X, y, *ridge_refit(X, y, support + [int(j)], lambda2), lambda2)
                for j in cands]
        support.append(int(cands[int(np.argmin(vals))]))
    return ridge_refit(X, y, support, lambda2)


def swap_search(X, y, k, lambda2, start, n_candidates=30):
    """L0Learn-style local search: single swaps (out one of the support, in one of the
    n_candidates features most correlated with the residual) while the objective drops."""
    support = sorted(np.flatnonzero(start[0]).tolist())
    best = objective(X, y, *start, lambda2)
    Xc = X - X.mean(0)
    improved = True
    while improved:
        improved = False
        coef, c = ridge_refit(X, y, support, lambda2)
        score = np.abs(Xc.T @ (y - X @ coef - c))
        score[support] = -1
        for j_in in np.argsort(score)[::-1][:n_candidates]:
            for j_out in support:
                trial = sorted(set(support) - {j_out} | {int(j_in)})
                val = objective(X, y, *ridge_refit(X, y, trial, lambda2), lambda2)
                if val < best * (1 - 1e-12):
                    best, support, improved = val, trial, True
                    break
            if improved:
                break
    return ridge_refit(X, y, support, lambda2)


def abess_model(X, y, k, lambda2):
    """abess's best-subset model of size k, refitted (None when abess is not installed)."""
    try:
        from abess.linear import LinearRegression
    except ImportError:
        print("skipping abess: not installed (pip install abess)")
        return None
    m = LinearRegression(support_size=k).fit(X, y)
    return ridge_refit(X, y, np.flatnonzero(m.coef_), lambda2)


def main():
    args = parse_args(__doc__.splitlines()[0])
    if args.quick:
        X, y = load_diabetes()
        X, y = standardize(X, y)
        k, lambda2, budget, data = 4, 0.01, 5.0, "diabetes (442 x 10)"
    else:
        X, y = load_riboflavin(standardize=True)
        k, lambda2, budget, data = 5, 1.0, 30.0, "riboflavin (71 x 4088)"
    greedy = forward_stepwise(X, y, k, lambda2)
    models = {"Lasso refit": lasso_refit(X, y, k, lambda2), "forward stepwise": greedy,
              "greedy + swaps": swap_search(X, y, k, lambda2, greedy)}
    ab = abess_model(X, y, k, lambda2)
    if ab is not None:
        models["abess"] = ab
    print(f"{data}, k = {k}, lambda2 = {lambda2:g}, {budget:g} s per model")
    rows = []
    for name, (coef, c) in models.items():
        g = sparsecert.certified_gap(X, y, coef, c, k=k, lambda2=lambda2, time_limit=budget)
        report = sparsecert.verify(g.certificate, X, y)
        rows.append((name, g))
        print(f"{name:>17}: objective {g.objective:.6g}  proven lower bound {g.lower_bound:.6g}"
              f"  gap {100 * g.gap:6.2f}%  ({g.status}, {g.n_nodes} nodes, {g.time:.1f} s; "
              f"certificate {'verified' if report.ok else 'FAILED'})  features "
              f"{np.flatnonzero(coef).tolist()}")
    best = min(g.best_objective for _, g in rows)
    lower = max(g.lower_bound for _, g in rows)
    print(f"best objective found by any search: {best:.6g}; best proven lower bound: "
          f"{lower:.6g}")

    fig, ax = plt.subplots(figsize=(7, 3.4))
    names = [n for n, _ in rows]
    ax.bar(names, [100 * g.gap for _, g in rows], color="tab:blue")
    for i, (_, g) in enumerate(rows):
        ax.text(i, 100 * g.gap, f"{100 * g.gap:.2f}%", ha="center", va="bottom", fontsize=8)
    ax.set_ylabel("certified gap to the best (%)")
    ax.set_title(f"{data}, k = {k}: how far each heuristic is at most from optimal "
                 f"(proven in {budget:g} s each)", fontsize=8)
    savefig(fig, args.out, "certified_gap_heuristics.png")


if __name__ == "__main__":
    main()
