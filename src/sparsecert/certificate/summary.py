"""The human-readable summary of a certificate document (what ``sparsecert show`` prints),
and the contradictions between its claims.

Reads the document as it is, tolerant of missing or malformed optional fields; numpy-free.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from sparsecert.certificate.schema import LOSS_PARAMETERS
from sparsecert.statuses import what_it_means

__all__ = ["format_summary", "claims_problems"]


def _number(v: Any) -> float | None:
    """v as a finite float, or None (a missing, non-numeric or out-of-range field)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        f = float(v)
    except OverflowError:
        return None
    return f if math.isfinite(f) else None


def _fmt(v: Any, spec: str = "r") -> str:
    """A field for printing: numbers with ``spec`` when they fit a float, else their repr (cut
    short), never an exception."""
    f = _number(v)
    if f is None:
        text = repr(v)
        return text if len(text) <= 40 else text[:37] + "..."
    return repr(v) if spec == "r" else format(f, spec)


def claims_problems(bounds: Mapping[str, Any]) -> list[str]:
    """Why a certificate's claims contradict each other (empty if they do not): a lower bound
    above the upper bound, a stored gap that is not the gap of the bounds, status optimal with
    a gap above the certificate's own tolerances. ``sparsecert show`` marks such a certificate
    INCONSISTENT; the verifier fails the first and the last (checks ``bounds_order`` and
    ``status``; the stored gap is informational, the verifier computes its own)."""
    lb, ub = _number(bounds.get("lower_bound")), _number(bounds.get("upper_bound"))
    if lb is None or ub is None:
        return ["the bounds are not finite numbers"]
    if lb > ub:
        return [f"the lower bound {lb!r} is above the upper bound {ub!r}"]
    from fractions import Fraction

    gap = Fraction(ub) - Fraction(lb)
    rel = gap / max(Fraction(1), abs(Fraction(ub)))
    out = []
    for key, want in (("absolute_gap", gap), ("relative_gap", rel)):
        got = bounds.get(key)
        if got is None:
            continue
        g = _number(got)
        if g is None or abs(Fraction(g) - want) > want / 2 ** 40 + Fraction(1, 2 ** 1000):
            out.append(f"the stored {key.replace('_', ' ')} {_fmt(got)} is not the bounds' "
                       f"{float(want):.6g}")
    rel_tol = _number(bounds.get("rel_gap_tolerance"))
    abs_tol = _number(bounds.get("abs_gap_tolerance"))
    if bounds.get("status") == "optimal" and rel_tol is not None and not (
            rel <= Fraction(rel_tol) or (abs_tol is not None and gap <= Fraction(abs_tol))):
        out.append(f"status optimal with a relative gap {float(rel):.3e} above the "
                   f"certificate's tolerance {rel_tol:g}")
    return out


def format_summary(data: dict, audit: bool = False, nodes: list[dict] | None = None) -> str:
    """Human summary of a certificate document (tolerant of missing optional fields).

    What the certificate states, unchecked: the problem, the status and what it means in plain
    words (claimed: ``sparsecert verify`` proves it on the data), the model, the bounds, the
    tree (the document's summary of it). With ``audit``, every node of the tree follows
    (``nodes``, decoded from the proof file by the caller), one line each (its position in
    preorder, its parent, the branching, status, witness, whether the verifier derives its bound
    fixings): the tree the verifier walks. A certificate whose claims contradict each other
    (:func:`claims_problems`) is marked INCONSISTENT instead of showing its status and meaning.
    """
    pr, inc, bd = data.get("problem", {}), data.get("incumbent", {}), data.get("bounds", {})
    tree = data.get("tree", {}) if isinstance(data.get("tree"), dict) else {}
    by_status = tree.get("leaves") if isinstance(tree.get("leaves"), dict) else {}
    kinds = tree.get("witnesses") if isinstance(tree.get("witnesses"), dict) else {}
    proof = data.get("proof", {}) if isinstance(data.get("proof"), dict) else {}
    size = _number(proof.get("bytes"))
    coef = inc.get("coef", [])
    supp = inc.get("support", [])
    names = pr.get("feature_names") or None
    M = pr.get("max_abs_coef")
    params = "".join(f" ({key}={_fmt(pr.get(key))})" for key in LOSS_PARAMETERS if key in pr)
    prod = data.get("producer", {})
    elapsed = prod.get("elapsed")
    elapsed = f"{_fmt(elapsed, '.2f')} s" if _number(elapsed) is not None else "?"
    problems = claims_problems(bd)
    status = (f"INCONSISTENT (claims {bd.get('status')}): {'; '.join(problems)}"
              if problems else f"{bd.get('status')}")

    def label(j: int) -> str:
        return names[j] if names and j < len(names) else f"b[{j}]"

    lines = [
        f"sparsecert certificate (format {data.get('format')} v{data.get('format_version')})",
        f"  problem   : {pr.get('loss')} loss{params}, n={pr.get('n_samples')}, "
        f"p={pr.get('n_features')}, k={pr.get('k')}, lambda2={_fmt(pr.get('lambda2'))}, "
        f"max_abs_coef={'None' if M is None else _fmt(M)}, "
        f"fit_intercept={pr.get('fit_intercept')}",
        *([f"  also      : {extra}"] if (extra := _extensions_line(pr, label)) else []),
        f"  status    : {status}",
        "  meaning   : "
        + ("none: the claims contradict each other" if problems else
           _meaning(pr.get('k'), bd.get('upper_bound'), bd.get('lower_bound'))),
        f"  objective : {_fmt(bd.get('upper_bound'))} (upper bound)",
        f"  lower bd  : {_fmt(bd.get('lower_bound'))}",
        f"  gap       : absolute {_fmt(bd.get('absolute_gap'))}, relative "
        f"{_fmt(bd.get('relative_gap'))} = {bd.get('relative_gap_definition')} (tolerance "
        f"{_fmt(bd.get('rel_gap_tolerance'))})",
        f"  support   : {supp} ({len(supp)} of {len(coef)} features)",
        "  coef      : " + ", ".join(f"{label(j)}={_fmt(coef[j], '.6g')}" for j in supp
                                     if isinstance(j, int) and 0 <= j < len(coef)),
        f"  intercept : {_fmt(inc.get('intercept'))}",
        f"  tree      : {tree.get('n_nodes', '?')} nodes, {tree.get('n_leaves', '?')} leaves "
        f"({', '.join(f'{v} {k}' for k, v in sorted(by_status.items()))}), depth "
        f"{tree.get('depth', '?')}, witnesses {kinds or 'none'}, {tree.get('n_derive', '?')} "
        "nodes whose bound fixings the verifier derives",
        "  proof     : " + (f"{size / 2 ** 20:.2f} MB" if size is not None else "?")
        + (f" ({size / max(1, tree.get('n_nodes') or 1):.0f} bytes a node)"
           if size is not None and isinstance(tree.get("n_nodes"), int) else ""),
        f"  eig shift : {_fmt(data.get('relaxation', {}).get('eig_shift'))}",
        f"  producer  : sparsecert {prod.get('version')}, python {prod.get('python')}, "
        f"numpy {prod.get('numpy')}, {prod.get('time_utc')}, elapsed {elapsed}",
    ]
    if audit:
        nodes = nodes or []
        lines.append(f"  nodes     : {len(nodes)} in preorder (position: parent, branching "
                     "z_j = 0/1, status, witness, derived bound fixings); 'sparsecert verify' "
                     "checks them on the data")
        lines.extend(f"    {_node_line(nd, label)}" for nd in nodes)
    else:
        lines.append("  (--audit lists every node of the tree; 'sparsecert verify CERT --data "
                     "FILE' checks the certificate and prints each check)")
    return "\n".join(lines)


def _extensions_line(pr: dict, label) -> str:
    """The problem's optional parts (section 2.2 of the format) in a few words ('' for the
    plain problem): what a model is compared with besides k and the box."""
    parts = []
    if pr.get("sample_weight_sha256"):
        parts.append("weighted samples (the weights are data: verify needs them)")
    if pr.get("offset_sha256"):
        parts.append("offsets (data, like the weights)")
    lower, upper = pr.get("coef_lower"), pr.get("coef_upper")
    if isinstance(lower, list) and isinstance(upper, list):
        signs = sum(1 for v in lower if v == 0)
        bounded = sum(1 for a, b in zip(lower, upper, strict=False)
                      if a is not None or b is not None)
        parts.append(f"bounds on {bounded} coefficient(s)"
                     + (f", {signs} of them >= 0" if signs else ""))
    for key, what in (("always_select", "forced in"), ("exclude", "excluded")):
        idx = pr.get(key)
        if isinstance(idx, list) and idx:
            shown = ", ".join(label(j) if isinstance(j, int) else "?" for j in idx[:8])
            parts.append(f"{what}: {shown}" + (f" (+{len(idx) - 8})" if len(idx) > 8 else ""))
    return "; ".join(parts)


def _meaning(k, upper, lower) -> str:
    """What the claimed bounds mean, in plain words (:func:`~sparsecert.statuses.what_it_means`)."""
    if not isinstance(k, int) or _number(upper) is None or _number(lower) is None:
        return "?"
    return what_it_means(k, float(upper), float(lower), proven=False)


def _node_line(nd: dict, label) -> str:
    """One node of the tree for ``sparsecert show --audit``."""
    var = nd.get("branch_var")
    branch = "root" if nd.get("parent") is None else (
        f"parent {nd.get('parent')}, z[{label(var) if isinstance(var, int) else var}] = "
        f"{nd.get('branch_value')}")
    witness = nd.get("witness")
    return (f"{nd.get('index')}: {branch}, {nd.get('status')}"
            + (f", witness {witness[0]} {witness[1]}" if witness else "")
            + (", bound fixings derived" if nd.get("derive") else ""))
