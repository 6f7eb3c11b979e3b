"""Certify k-sparse least squares on two real data sets: diabetes and riboflavin.

* diabetes (scikit-learn, 442 x 10): the certified best k = 4 subset;
* riboflavin (Buhlmann et al. 2014, 71 x 4088, p >> n): the certified best k = 3 genes
  (bundled with the package: ``sparsecert.datasets.load_riboflavin``).

Each model is saved with its certificate and re-checked by the standalone verifier; the plot
shows the selected coefficients with the proven optimality gap in the title.

Run: ``python examples/certify_regression.py [--quick] [--out DIR]``
"""

from __future__ import annotations

import numpy as np
from _common import parse_args, savefig, standardize
from matplotlib import pyplot as plt
from sklearn.datasets import load_diabetes

from sparsecert.api import certify, verify
from sparsecert.datasets import feature_names, load_riboflavin


def run(name, X, y, k, lambda2, names, out, time_limit):
    print(f"\n== {name}: n={X.shape[0]} p={X.shape[1]} k={k} lambda2={lambda2:g}")
    res = certify(X, y, k, lambda2, time_limit=time_limit, verbose=0,
                  feature_names=names)
    print(res.summary())
    cert_path = out / f"{name}_certificate.json"
    res.save(cert_path, overwrite=True)  # the example's own output folder
    report = verify(cert_path, X, y)
    print(f"verifier: ok={report.ok} exit code={report.exit_code} ({cert_path.name})")
    fig, ax = plt.subplots(figsize=(6, 3.2))
    sup = list(res.support)
    ax.bar(range(len(sup)), res.coef[sup], color="tab:blue")
    ax.set_xticks(range(len(sup)), [names[j] for j in sup], rotation=30, ha="right")
    ax.axhline(0, color="k", lw=0.5)
    ax.set_ylabel("coefficient (unit-variance X)")
    ax.set_title(f"{name}: certified k={k} ({res.status}, gap {res.gap:.1e}, "
                 f"{res.n_nodes} nodes, {res.time:.1f} s)", fontsize=9)
    savefig(fig, out, f"{name}_coefficients.png")
    return res


def main():
    args = parse_args(__doc__.splitlines()[0])
    d = load_diabetes()
    run("diabetes", standardize(d.data), d.target, 4, 1.0, list(d.feature_names), args.out,
        time_limit=30)

    X, y = load_riboflavin()
    X = standardize(X)
    genes = feature_names("riboflavin")  # the genes' names, in the columns' order
    if args.quick:  # the 500 genes most correlated with y: a fast, still p >> n, instance
        corr = np.abs(X.T @ (y - y.mean()))
        keep = np.sort(np.argsort(-corr)[:500])
        X = X[:, keep]
        names = [genes[j] for j in keep]
    else:
        names = list(genes)
    run("riboflavin", X, y, 3, 100.0, names, args.out, time_limit=40)


if __name__ == "__main__":
    main()
