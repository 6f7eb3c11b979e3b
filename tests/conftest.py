"""Shared test configuration.

``SPARSECERT_REQUIRE_MPI=1`` (set by ``.ci/run``, which installs the ``[mpi]`` extra) turns
the skip of any test marked ``mpi`` into a failure: in CI a missing mpi4py, MPI library or
``mpiexec`` must fail loudly instead of silently skipping the distributed tests.
"""

from __future__ import annotations

import os

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
