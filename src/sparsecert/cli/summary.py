"""What ``sparsecert certify`` prints when it is done: the answer first, in plain words.

The default summary is a few lines: the status, what it means (how much better any model with at
most ``k`` features can be, proven), the model with the features' names, how well it fits the
training data (R^2 and RMSE for real responses, accuracy for two labels and the deviance of a
loss that is a negative log-likelihood: the logistic and Poisson losses), what the model's
linear predictor is (the loss registry's :attr:`~sparsecert.solvers.losses.Loss.predictor`), the
objective and its bound, the time (compiling the kernels apart from solving) and the certificate
with the verifier's verdict. ``--verbose`` adds the verifier's report, check by check (the audit
trail).
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence

import numpy as np

from sparsecert.solvers.losses import get_loss
from sparsecert.statuses import OPTIMAL, STATUS_HINTS, what_it_means

__all__ = ["fit_measures", "format_fit", "model_equation", "certify_summary"]

#: width of the label column (``status      : ...``)
_LABEL = 12


def _line(label: str, text: str, width: int = 100) -> str:
    """``label : text``, wrapped under the text's column."""
    head = f"{label:<{_LABEL}}: "
    return textwrap.fill(text, width=max(width, len(head) + 20), initial_indent=head,
                         subsequent_indent=" " * len(head), break_on_hyphens=False)


def _xlogy(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``x log y`` with ``0 log y = 0``."""
    out = np.zeros(np.broadcast(x, y).shape)
    nz = x != 0
    out[nz] = x[nz] * np.log(y[nz])
    return out


def _binary_deviance(y: np.ndarray, u: np.ndarray, w: np.ndarray | None = None) -> float:
    """``2 sum w log(1 + exp(-y u))`` for labels ``y`` in {-1, +1} (stable for large ``|u|``;
    ``w``: all 1 if None)."""
    terms = np.logaddexp(0.0, -y * u)
    return float(2.0 * (np.sum(terms) if w is None else w @ terms))


def fit_measures(loss: str, X: np.ndarray, y: np.ndarray, coef: np.ndarray,
                 intercept: float, fit_intercept: bool = True, *,
                 sample_weight: np.ndarray | None = None,
                 offset: np.ndarray | None = None) -> dict[str, float]:
    """How well a linear model fits ``(X, y)``, in the measures a statistician reads.

    Parameters
    ----------
    loss : str
        A name of the loss registry (its target rule and capabilities choose the measures).
    X : numpy.ndarray of shape (n, p)
    y : numpy.ndarray of shape (n,)
        The target as the loss uses it (classification labels coded -1/+1).
    coef : numpy.ndarray of shape (p,)
    intercept : float
    fit_intercept : bool
        Whether the model has an intercept (the null model of the deviances is then the
        intercept-only model, else the zero model; both with the offsets).
    sample_weight, offset : numpy.ndarray of shape (n,), optional
        The problem's per-sample weights (every sum and mean below is weighted) and offsets
        (added to the linear predictor).

    Returns
    -------
    dict
        Real responses (least squares, Huber): ``r2`` (1 - SSE / sum (y - mean y)^2; NaN for a
        constant y) and ``rmse``. Two labels: ``accuracy`` (sign of ``x^T b + c``), and for a
        negative log-likelihood (logistic) ``deviance`` (``2 sum log(1 + exp(-y u))``) and
        ``null_deviance``. Counts (Poisson): ``deviance`` (``2 sum y log(y / mu) - (y - mu)``,
        ``mu = exp(u)``) and ``null_deviance``.
    """
    n = y.shape[0]
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    o = np.zeros(n) if offset is None else np.asarray(offset, dtype=float)
    u = X @ np.asarray(coef, dtype=float) + float(intercept) + o
    f = get_loss(loss)
    if f.target == "real":
        sse = float(w @ (y - u) ** 2)
        ybar = float(w @ y) / float(w.sum())
        sst = float(w @ (y - ybar) ** 2)
        return {"r2": 1.0 - sse / sst if sst > 0 else math.nan,
                "rmse": math.sqrt(sse / float(w.sum()))}
    if f.needs_binary_labels:
        out = {"accuracy": float(w @ (np.where(u > 0, 1.0, -1.0) == y)) / float(w.sum())}
        if f.neg_log_likelihood:
            out["deviance"] = _binary_deviance(y, u, w)
            if fit_intercept and offset is None:  # intercept only: the share of +1 labels
                share = float(w @ (y > 0)) / float(w.sum())
                u0 = (math.log(share / (1.0 - share)) if 0 < share < 1
                      else math.copysign(math.inf, share - 0.5))
                out["null_deviance"] = _binary_deviance(y, np.full(n, u0), w)
            elif fit_intercept:  # the offsets and the best intercept
                from scipy.optimize import minimize_scalar

                best = minimize_scalar(lambda c: _binary_deviance(y, o + c, w))
                out["null_deviance"] = min(float(best.fun), _binary_deviance(y, o, w))
            else:
                out["null_deviance"] = _binary_deviance(y, o, w)
        return out
    if f.target == "counts":
        mu = np.exp(u)
        # the intercept-only model with the offsets: exp(c + o), sum w exp(c + o) = sum w y
        mu0 = (np.exp(o) * (float(w @ y) / float(w @ np.exp(o))) if fit_intercept
               else np.exp(o))

        def deviance(m: np.ndarray) -> float:
            return float(2.0 * (w @ (_xlogy(y, np.where(y > 0, y, 1.0) / m) - (y - m))))

        return {"deviance": deviance(mu), "null_deviance": deviance(mu0)}
    # the name was checked by the registry (get_loss): a loss whose target rule has no measures
    raise ValueError(f"no fit measures for the {loss} loss's target rule {f.target!r}")


def format_fit(loss: str, measures: dict[str, float], n: int) -> str:
    """The fit measures in one line (on the ``n`` training samples)."""
    parts = []
    if "r2" in measures:
        parts.append(f"R^2 = {measures['r2']:.4g}")
    if "rmse" in measures:
        parts.append(f"RMSE = {measures['rmse']:.4g}")
    if "accuracy" in measures:
        parts.append(f"accuracy = {measures['accuracy']:.4g}")
    if "deviance" in measures:
        parts.append(f"deviance = {measures['deviance']:.4g} (null deviance "
                     f"{measures['null_deviance']:.4g})")
    return ", ".join(parts) + f", on the {n} training samples"


def _label(names: Sequence[str] | None, j: int) -> str:
    return names[j] if names and names[j] else f"b[{j}]"


def model_equation(loss: str, coef: np.ndarray, intercept: float, fit_intercept: bool,
                   names: Sequence[str] | None = None,
                   labels: Sequence[float] | None = None) -> str:
    """The fitted model as an equation over the selected features, e.g.
    ``y = 152.1 - 199.1 sex + 494.4 bmi``; the left side says what the linear predictor is for
    the loss (the log-odds of the label coded +1, the log of the Poisson mean)."""
    coef = np.asarray(coef, dtype=float)
    support = np.flatnonzero(coef)
    lhs = get_loss(loss).predictor.format(positive=_number(labels[1]) if labels else "+1")
    terms = []
    if fit_intercept:
        terms.append(f"{intercept:.6g}")
    for j in support:
        term = f"{abs(coef[j]):.6g} {_label(names, int(j))}"
        if terms:
            terms.append(f"- {term}" if coef[j] < 0 else f"+ {term}")
        else:
            terms.append(f"-{term}" if coef[j] < 0 else term)
    return f"{lhs} = " + (" ".join(terms) if terms else "0")


def _number(v: float) -> str:
    return f"{v:g}"


def _seconds(t: float) -> str:
    return f"{t:.2f} s" if t < 100 else f"{t:.0f} s"


def certify_summary(result, report, prepared, options, *, names, out: str,
                    sidecar: str) -> list[str]:
    """The lines ``sparsecert certify`` prints after the search (without ``--verbose``).

    ``prepared`` is the problem solved (:class:`sparsecert._validation.PreparedProblem`: its
    data, the labels and the problem's record), ``options`` its search options (the gap
    asked); the fit measures and the objective are weighted by the problem's sample weights,
    the offsets are in the predictor. ``names`` are the features' names (or None), ``out``
    and ``sidecar`` the certificate's files.
    """
    k, loss, lambda2 = prepared.spec.k, prepared.spec.loss, prepared.spec.lambda2
    fit_intercept, rel_gap = prepared.spec.fit_intercept, options.rel_gap
    X, sample_weight, offset = prepared.X, prepared.sample_weight, prepared.offset
    status = result.status
    ok = bool(report.ok)
    lines = [_line("status", status if status == OPTIMAL else
                   f"{status} ({STATUS_HINTS.get(status, '')}; the gap asked was "
                   f"{rel_gap:g})")]
    meaning = what_it_means(k, result.objective, result.lower_bound, proven=ok)
    if not ok:
        meaning += "; the certificate did NOT verify"
    lines.append(_line("meaning", meaning))
    coef = np.asarray(result.coef, dtype=float)
    equation = model_equation(loss, coef, result.intercept, fit_intercept, names,
                              prepared.labels)
    lines.append(_line("model", equation if offset is None else equation + " + offset"))
    measures = fit_measures(loss, X, prepared.y_used, coef, result.intercept, fit_intercept,
                            sample_weight=sample_weight, offset=offset)
    fit = format_fit(loss, measures, X.shape[0])
    lines.append(_line("fit", fit if sample_weight is None else fit + " (weighted)"))
    weighted = "" if sample_weight is None else "weighted "
    what = (f"sum of {weighted}squared errors" if get_loss(loss).has_closed_form_refit
            else f"sum of {weighted}{loss} losses")
    lines.append(_line("objective", f"{result.objective:.10g} ({what} + {lambda2:g} ||b||^2), "
                                    f"lower bound {result.lower_bound:.10g}"))
    search = getattr(result, "search", None)
    compiling = float(getattr(search, "compile_time", 0.0) or 0.0)
    solving = max(0.0, result.time - compiling)
    nodes = f"{result.n_nodes} node" + ("" if result.n_nodes == 1 else "s")
    if compiling > 0:
        lines.append(_line("time", f"{_seconds(result.time)}: {_seconds(compiling)} compiling "
                                   f"the numerical kernels (first run only; cached for later "
                                   f"runs) and {_seconds(solving)} solving ({nodes})"))
    else:
        lines.append(_line("time", f"{_seconds(solving)} solving ({nodes})"))
    verdict = ("VERIFIED" if ok else "FAILED: " + ", ".join(report.failed_checks))
    lines.append(_line("certificate", f"{out} (+ {sidecar}): {verdict} by the standalone "
                                      f"verifier ({len(report.checks)} checks; --verbose "
                                      f"lists them)"))
    return lines
