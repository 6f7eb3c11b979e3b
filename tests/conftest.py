"""Shared test configuration and helpers.

The tests are grouped by wing and concept: ``glm/`` holds the certified-GLM wing's (``front/``
the entry points, records and parameter table; ``cli/`` the command line; ``bnb/`` the engine;
``solvers/`` the losses, the relaxation and the heuristics; ``certificate/`` the format, the
writer and the verifier; ``soundness/`` the attacks on the verifier and its exact references,
``_exact.py`` and the fuzzing campaign ``_fuzz.py``), ``distributed/`` the distributed wing's
(communication, bits and encoders, the three methods, MPI runs), ``project/`` what spans the
project (the architecture, the docs and their examples, the examples, the benchmarks'
claims).

Helpers shared by the test files of every folder (one place each, importable by name):

* ``_bruteforce.py``: the one brute-force reference (every support, solved without the package);
* ``_certgen.py``: genuine certificates of tiny problems built without the solver;
* ``_data.py``: small sparse GLM data sets (``sparse_glm_data``);
* the ``mpiexec`` fixture below: the ``mpiexec`` next to the interpreter (else on ``PATH``), or a
  skip naming why MPI is unavailable;
* the ``timeout(seconds)`` marker below: a test that runs processes, threads or an executor
  carries one, so that nothing can hang the suite.

No test can hang: ``faulthandler_timeout`` (pyproject.toml) prints every thread's traceback
when a test runs longer than it; a test marked ``timeout(seconds)`` fails once its time is up
(a ``TimeoutError`` raised in the test's thread, which a wait on a future, a lock or a
subprocess lets through), and if it still has not returned a minute later (a pool that cannot
be shut down, a spawn stuck in a C call) the run stops with every thread's traceback instead of
waiting forever. Every subprocess is started with a ``timeout=``.

Every test runs in its own empty working directory (``run_in_a_temporary_directory``, autouse):
a file that the user's own commands left in the directory pytest was started from (the
Quickstart's ``sparsecert certify`` writes ``sparsecert-certificate.json`` into the clone's
root) is never seen by a test, and nothing a test writes by mistake lands there. A relative
``PYTHONPATH`` (``PYTHONPATH=src``) is made absolute first, so subprocesses still find the
package.

Optional packages are skipped where a test needs them (``pytest.importorskip`` inside that
test), never for a whole file.

``SPARSECERT_REQUIRE_MPI=1`` (set by ``.ci/run``, which installs the ``[mpi]`` extra) turns
the skip of any test marked ``mpi`` into a failure: in CI a missing mpi4py, MPI library or
``mpiexec`` must fail loudly instead of silently skipping the distributed tests.
"""

from __future__ import annotations

import faulthandler
import os
import shutil
import signal
import sys
from pathlib import Path

import pytest

REQUIRE_MPI = os.environ.get("SPARSECERT_REQUIRE_MPI", "") not in ("", "0")
#: seconds after a ``timeout`` test's own time before the run is stopped (its cleanup hangs)
HARD_STOP_GRACE = 60.0


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """The ``timeout(seconds)`` marker (pytest-timeout's, when that plugin is installed)."""
    marker = item.get_closest_marker("timeout")
    if (marker is None or not hasattr(signal, "setitimer")
            or item.config.pluginmanager.hasplugin("timeout")):
        yield
        return
    seconds = float(marker.args[0])

    def expire(signum, frame):
        raise TimeoutError(f"{item.nodeid} ran longer than its timeout of {seconds:g} s")

    # the tracebacks go where pytest's own faulthandler writes them (not the captured stderr)
    from _pytest.faulthandler import fault_handler_stderr_fd_key

    stderr = item.config.stash.get(fault_handler_stderr_fd_key, None) or sys.__stderr__
    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    faulthandler.dump_traceback_later(seconds + HARD_STOP_GRACE, exit=True, file=stderr)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        # back to pytest's own watch (faulthandler_timeout) for the rest of the test
        watch = float(item.config.getini("faulthandler_timeout") or 0.0)
        if watch > 0:
            faulthandler.dump_traceback_later(watch, file=stderr)
        else:
            faulthandler.cancel_dump_traceback_later()

# the tests change directory (below): entries of a relative PYTHONPATH must keep naming the
# folders they named when pytest started, for the subprocesses that inherit it
if os.environ.get("PYTHONPATH"):
    os.environ["PYTHONPATH"] = os.pathsep.join(
        os.path.abspath(entry) if entry else entry
        for entry in os.environ["PYTHONPATH"].split(os.pathsep))


@pytest.fixture(autouse=True)
def run_in_a_temporary_directory(tmp_path, monkeypatch):
    """Each test's working directory is its own empty ``tmp_path``, never the directory pytest
    was started from (which may hold the user's files, such as the certificate the Quickstart's
    first command writes)."""
    monkeypatch.chdir(tmp_path)


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
