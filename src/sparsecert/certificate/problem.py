"""The ``problem`` section of a certificate: which problem, on which data.

The writer's one encoding of a problem (section 2.2 of ``docs/certificate-format.md``): the
loss and its parameters, ``k``, ``lambda2``, the box, the intercept, the data's sizes and
hashes, and the problem's optional parts. :meth:`~sparsecert.certificate.Certificate.build`
writes it, :func:`problem_key` gives the fields that say which problem a certificate certifies
(what :func:`~sparsecert.certificate.paths.check_save_path` compares before replacing a file).
numpy, the standard library and the parameter table (:mod:`sparsecert._constraints`) only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from sparsecert._constraints import CONSTRAINTS, check, record_k_fits
from sparsecert.certificate.fields import is_sparse_design
from sparsecert.certificate.schema import (
    EXTENSION_FIELDS,
    HASH_DEFINITION,
    LABEL_RULE,
    LOSS_DEFINITIONS,
    LOSS_PARAMETERS,
    LOSSES,
    OBJECTIVE_DEFINITION,
    SPARSE_HASH_DEFINITION,
    array_sha256,
    check_loss_params,
    data_hash,
)

__all__ = ["PROBLEM_KEYS", "EXTENSION_ARGUMENTS", "problem_section", "problem_key",
           "encode_extensions"]

#: The fields of a certificate's ``problem`` that say which problem it certifies (a loss's
#: parameters are written only for a loss that has them).
PROBLEM_KEYS = ("loss", "k", "lambda2", "max_abs_coef", "fit_intercept", "n_samples",
                "n_features", "X_sha256", "y_sha256", *LOSS_PARAMETERS, *EXTENSION_FIELDS)

#: The problem's optional parts as a caller gives them (by these names, in the ``problem``
#: mapping), before :func:`encode_extensions` writes them.
EXTENSION_ARGUMENTS = ("sample_weight", "offset", "coef_lower", "coef_upper", "always_select",
                       "exclude")


def _bounds_array(v: Any, infinite: float) -> np.ndarray:
    """Per-coefficient bounds as float64, ``None`` (the JSON's infinite bound) as ``infinite``."""
    arr = np.asarray(v)
    if arr.dtype == object:
        arr = np.array([infinite if x is None else x for x in arr.ravel().tolist()],
                       dtype=np.float64).reshape(arr.shape)
    return np.asarray(arr, dtype=np.float64)


def encode_extensions(extensions: Mapping[str, Any] | None, n: int, p: int) -> dict:
    """The problem's optional fields as the certificate writes them (section 2.2 of the
    format): only those that are not neutral, so a certificate of the plain problem is the
    same as before they existed.

    ``extensions`` may hold ``sample_weight`` and ``offset`` (arrays of length n: their
    hashes), ``coef_lower`` and ``coef_upper`` (arrays of length p, every coefficient's bounds
    with the box: lists with null for an infinite bound), ``always_select`` and ``exclude``
    (feature indices: sorted lists).
    """
    ext = dict(extensions or {})
    out: dict[str, Any] = {}
    for name, length in (("sample_weight", n), ("offset", n)):
        v = ext.get(name)
        if v is not None:
            arr = np.asarray(v, dtype=np.float64)
            if arr.shape != (length,) or not np.isfinite(arr).all():
                raise ValueError(f"{name} must be {length} finite numbers, got {arr.shape}")
            out[name + "_sha256"] = array_sha256(arr)
    if ext.get("coef_lower") is not None:
        for name, sign in (("coef_lower", -1.0), ("coef_upper", 1.0)):
            arr = _bounds_array(ext[name], sign * math.inf)
            if arr.shape != (p,) or np.isnan(arr).any() or (sign * arr < 0).any():
                raise ValueError(f"{name} must be {p} bounds with lower <= 0 <= upper")
            out[name] = [None if math.isinf(v) else float(v) for v in arr.tolist()]
    for name in ("always_select", "exclude"):
        idx = sorted(int(j) for j in (ext.get(name) or ()))
        if any(not 0 <= j < p for j in idx) or len(set(idx)) != len(idx):
            raise ValueError(f"{name} must hold distinct feature indices in [0, {p})")
        if idx:
            out[name] = idx
    return out


def _data(X, y) -> tuple[Any, np.ndarray, str | None, str]:
    """The design and labels as hashed, with the design's format and hash (shapes checked)."""
    x_format, x_hash = data_hash(X if is_sparse_design(X) else np.asarray(X))
    X = X if x_format is not None else np.asarray(X)
    y = np.asarray(y)
    if X.ndim != 2 or y.ndim != 1 or X.shape[0] != y.shape[0]:
        raise ValueError(f"X must be (n, p) and y (n,), got {X.shape} and {y.shape}")
    if (x_format is None and X.dtype.kind not in "biuf") or y.dtype.kind not in "biuf":
        raise TypeError("X and y must be numeric arrays")
    return X, y, x_format, x_hash


def problem_section(X, y, problem: Mapping[str, Any]) -> dict:
    """The certificate's ``problem`` section for this problem and data, every field checked.

    Parameters
    ----------
    X, y : ndarray or SparseDesign, ndarray
        The data exactly as the user passed it (hashed as float64; raw labels).
    problem : mapping
        ``loss``, ``k``, ``lambda2``, ``max_abs_coef`` (None or inf = no box),
        ``fit_intercept``, the loss's parameters by name (its defaults when not given);
        optionally ``feature_names`` (informational) and the problem's optional parts by the
        names of :data:`EXTENSION_ARGUMENTS` (see :func:`encode_extensions`).

    Raises
    ------
    ValueError, TypeError
        A field that cannot be encoded (shapes, non-finite values, unknown names, ranges).
    """
    X, y, x_format, x_hash = _data(X, y)
    n, p = (int(d) for d in X.shape)
    loss = check("problem['loss']", problem.get("loss"),
                 replace(CONSTRAINTS["problem['loss']"], choices=lambda: LOSSES))
    k = check("problem['k']", problem.get("k"), record_k_fits(p))
    lambda2 = check("problem['lambda2']", problem.get("lambda2"), CONSTRAINTS["problem['lambda2']"])
    M = problem.get("max_abs_coef")
    M = check("problem['max_abs_coef']", None if isinstance(M, float) and math.isinf(M) else M,
              CONSTRAINTS["problem['max_abs_coef']"])
    loss_params = check_loss_params(loss, {key: problem[key] for key in LOSS_PARAMETERS
                                           if key in problem})
    names = problem.get("feature_names")
    if names is not None:
        names = [str(s) for s in names]
        if len(names) != p:
            raise ValueError(f"feature_names has {len(names)} names for {p} features")
    ext_fields = encode_extensions({key: problem.get(key) for key in EXTENSION_ARGUMENTS},
                                   n, p)
    if len(ext_fields.get("always_select", ())) > k:
        raise ValueError(f"always_select holds more than k = {k} features")
    if set(ext_fields.get("always_select", ())) & set(ext_fields.get("exclude", ())):
        raise ValueError("always_select and exclude overlap")
    return {
        "loss": loss,
        "loss_definition": LOSS_DEFINITIONS[loss],
        **loss_params,
        "k": k,
        "lambda2": lambda2,
        "max_abs_coef": M,
        "fit_intercept": bool(problem.get("fit_intercept", False)),
        "n_samples": n,
        "n_features": p,
        **({} if x_format is None else {"X_format": x_format}),
        "X_sha256": x_hash,
        "y_sha256": array_sha256(y),
        **ext_fields,
        "hash_definition": (HASH_DEFINITION if x_format is None else
                            f"X: {SPARSE_HASH_DEFINITION}; y: {HASH_DEFINITION}"),
        "label_rule": LABEL_RULE,
        "objective_definition": OBJECTIVE_DEFINITION,
        "feature_names": names,
    }


def problem_key(X, y, problem: Mapping[str, Any]) -> dict:
    """The :data:`PROBLEM_KEYS` fields of the certificate that
    :meth:`~sparsecert.certificate.Certificate.build` would write for this problem and data
    (``problem`` as :func:`problem_section` takes it; what ``check_save_path`` compares)."""
    section = problem_section(X, y, problem)
    return {key: section[key] for key in PROBLEM_KEYS if key in section}
