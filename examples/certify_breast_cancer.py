"""Certified k-sparse logistic regression on the breast cancer data (scikit-learn, 569 x 30).

The estimator :class:`~sparsecert.estimators.KSparseLogisticRegression` selects the provably
best ``k`` features (for the penalised logistic loss) on a training split; the plot shows the
held-out accuracy and the certified objective for each ``k``, and the selected coefficients.

The features are standardised (in a pipeline) and the model has an unpenalised intercept.

Run: ``python examples/certify_breast_cancer.py [--quick] [--out DIR]``
"""

from __future__ import annotations

import numpy as np
from _common import parse_args, savefig
from matplotlib import pyplot as plt
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sparsecert.estimators import KSparseLogisticRegression


def main():
    args = parse_args(__doc__.splitlines()[0])
    data = load_breast_cancer()
    names = np.asarray(data.feature_names)
    X = data.data
    if args.quick:  # the ten "mean ..." features only
        X, names = X[:, :10], names[:10]
    labels = data.target_names[data.target]  # strings: "malignant" / "benign"
    Xtr, Xte, ytr, yte = train_test_split(X, labels, test_size=0.3, random_state=0,
                                          stratify=labels)
    ks = [1, 2] if args.quick else [1, 2, 3, 4, 5, 6]
    rows = []
    for k in ks:
        model = make_pipeline(StandardScaler(), KSparseLogisticRegression(
            k=k, lambda2=10.0, time_limit=20))
        model.fit(Xtr, ytr)
        est = model[-1]
        acc = model.score(Xte, yte)
        rows.append((k, est.objective_, est.gap_, est.status_, acc, est.support_))
        print(f"k={k}: objective {est.objective_:.6g}  gap {est.gap_:.1e}  {est.status_:>9}  "
              f"{est.result_.n_nodes:>5} nodes  {est.result_.time:5.2f} s  test accuracy "
              f"{acc:.3f}  features {names[est.support_].tolist()}")
    print(f"classes_ = {est.classes_.tolist()} (classes_[0] is coded -1)")

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    ax = axes[0]
    ax.plot(ks, [r[4] for r in rows], "o-", label="test accuracy")
    ax.set_xticks(ks)
    ax.set_xlabel("k (number of features)")
    ax.set_ylabel("held-out accuracy")
    ax2 = ax.twinx()
    ax2.plot(ks, [r[1] for r in rows], "s--", color="tab:red", label="certified objective")
    ax2.set_ylabel("certified objective", color="tab:red")
    ax.set_title("held-out accuracy and certified objective against k", fontsize=9)
    lines = ax.get_lines() + ax2.get_lines()  # one legend for both axes
    ax.legend(lines, [ln.get_label() for ln in lines], fontsize=8, loc="center right")
    ax = axes[1]
    sup = rows[-1][5]
    ax.barh(range(len(sup)), est.coef_[sup])
    ax.set_yticks(range(len(sup)), names[sup], fontsize=8)
    ax.set_xlabel(f"coefficient (k={ks[-1]}, standardised features)")
    ax.axvline(0, color="k", lw=0.5)
    ax.set_title(f"the certified k={ks[-1]} model (> 0: towards '{est.classes_[1]}')",
                 fontsize=9)
    fig.suptitle("breast cancer: certified k-sparse logistic regression", fontsize=10)
    savefig(fig, args.out, "breast_cancer_logistic.png")


if __name__ == "__main__":
    main()
