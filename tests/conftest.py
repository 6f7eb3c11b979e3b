"""Shared test configuration and helpers.

Helpers shared by the test files (one place each):

* ``_bruteforce.py``: the one brute-force reference (every support, solved without the package);
* ``_certgen.py``: genuine certificates of tiny problems built without the solver;
* ``_data.py``: small sparse GLM data sets (``sparse_glm_data``);
* the ``mpiexec`` fixture below: the ``mpiexec`` next to the interpreter (else on ``PATH``), or a
  skip naming why MPI is unavailable.

Optional packages are skipped where a test needs them (``pytest.importorskip`` inside that
test), never for a whole file.

``SPARSECERT_REQUIRE_MPI=1`` (set by ``.ci/run``, which installs the ``[mpi]`` extra) turns
the skip of any test marked ``mpi`` into a failure: in CI a missing mpi4py, MPI library or
``mpiexec`` must fail loudly instead of silently skipping the distributed tests.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

REQUIRE_MPI = os.environ.get("SPARSECERT_REQUIRE_MPI", "") not in ("", "0")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if REQUIRE_MPI and rep.skipped and item.get_closest_marker("mpi") is not None:
        reason = rep.longrepr[-1] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
        rep.outcome = "failed"
        rep.longrepr = (f"MPI test skipped but SPARSECERT_REQUIRE_MPI is set (CI installs the "
                        f"[mpi] extra): {reason}")


def find_mpiexec() -> str | None:
    """The ``mpiexec`` next to the running interpreter (a venv's MPICH), else the one on PATH."""
    here = Path(sys.executable).parent / "mpiexec"
    return str(here) if here.exists() else shutil.which("mpiexec")


@pytest.fixture
def mpiexec() -> str:
    """Path of ``mpiexec``; skips the test (with the reason) when MPI cannot run here."""
    from sparsecert.distributed.comm import mpi_available

    ok, reason = mpi_available()
    if not ok:
        pytest.skip(f"MPI unavailable: {reason}")
    exe = find_mpiexec()
    if exe is None:
        pytest.skip("MPI unavailable: no mpiexec next to the interpreter or on PATH")
    return exe
