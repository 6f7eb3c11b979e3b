"""Where a certificate is written: its proof file's path, and the checks made before a file
is replaced (a user's file is never overwritten silently).

numpy and the standard library only.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any

from sparsecert.certificate.problem import PROBLEM_KEYS
from sparsecert.certificate.schema import FORMAT_NAME, PROOF_MAGIC, PROOF_SUFFIX

__all__ = ["proof_path", "sidecar_path", "check_save_path"]

_CERT_PREFIX = re.compile(rb'\A\s*\{\s*"format"\s*:\s*"' + FORMAT_NAME.encode() + rb'"')


def proof_path(json_path: str | os.PathLike) -> str:
    """The proof file of a certificate: next to it, same name, extension ``.proof``
    (``cert.json`` -> ``cert.proof``)."""
    path = os.fspath(json_path)
    root, ext = os.path.splitext(path)
    return (root if ext.lower() == ".json" else path) + PROOF_SUFFIX


#: the proof file is the certificate's sidecar (the name the rest of the package uses)
sidecar_path = proof_path


def _is_certificate_json(path: str) -> bool:
    """The file starts like a sparsecert certificate (any format version)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    return bool(_CERT_PREFIX.match(head))


def _is_proof_file(path: str) -> bool:
    """The file starts like a sparsecert proof file."""
    try:
        with open(path, "rb") as fh:
            return fh.read(len(PROOF_MAGIC)) == PROOF_MAGIC
    except OSError:
        return False


def _other_problem(path: str, problem: Mapping[str, Any]) -> str:
    """How the certificate at ``path`` differs from ``problem`` ('' if it certifies it)."""
    try:
        with open(path, encoding="utf-8") as fh:
            old = json.load(fh)["problem"]
        diff = [key for key in PROBLEM_KEYS if old.get(key) != problem.get(key)]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return "it cannot be read"
    data = [key for key in diff if key in ("n_samples", "n_features", "X_sha256", "y_sha256")]
    said = [f"{key} = {old.get(key)!r}, not {problem.get(key)!r}" for key in diff
            if key not in data]
    return ", ".join(said + (["other data"] if data else []))


def check_save_path(path: str | os.PathLike, overwrite: bool = False,
                    problem: Mapping[str, Any] | None = None) -> tuple[str, str]:
    """The checks :meth:`~sparsecert.certificate.Certificate.save` makes before writing
    anything, on their own, so that a caller can refuse a bad output path before a long solve.

    With ``problem`` (the :data:`PROBLEM_KEYS` of the certificate to be written, see
    :func:`~sparsecert.certificate.problem.problem_key`), an existing certificate at ``path``
    is replaced only if it certifies the same problem on the same data (re-running the same
    job); a certificate of another problem is the user's result and is kept unless
    ``overwrite``.

    Returns
    -------
    (json_path, proof_path)

    Raises
    ------
    ValueError
        ``path`` does not end in ``.json``.
    IsADirectoryError
        ``path`` or its proof path is a directory.
    FileNotFoundError
        The folder of ``path`` does not exist.
    FileExistsError
        A file that is not a sparsecert certificate (or proof file), or a certificate of another
        problem than ``problem``, would be replaced and ``overwrite`` is false.
    """
    path = os.fspath(path)
    if not path.lower().endswith(".json") or os.path.basename(path).lower() == ".json":
        raise ValueError(f"a certificate path must end in .json (its proof file is the .proof "
                         f"of the same name), got {path!r}")
    spath = proof_path(path)
    if os.path.isdir(path) or os.path.isdir(spath):
        raise IsADirectoryError(f"{path if os.path.isdir(path) else spath} is a directory")
    folder = os.path.dirname(path) or os.curdir
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"folder {folder} does not exist (create it first)")
    if not overwrite:
        for f, ours, what in ((path, _is_certificate_json, "a sparsecert certificate"),
                              (spath, _is_proof_file, "a sparsecert proof file")):
            if os.path.lexists(f) and not ours(f):
                raise FileExistsError(f"{f} exists and is not {what}: refusing to replace "
                                      "it (choose another name, or overwrite=True / --force)")
        if problem is not None and os.path.lexists(path):
            other = _other_problem(path, problem)
            if other:
                raise FileExistsError(f"{path} holds a certificate of another problem "
                                      f"({other}): refusing to replace it (choose another "
                                      "name, or overwrite=True / --force)")
    return path, spath
