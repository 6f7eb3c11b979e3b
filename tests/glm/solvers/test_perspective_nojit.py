"""The kernels' pure-Python path (NUMBA_DISABLE_JIT=1), run in a subprocess, against cvxpy."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

SRC = Path(__file__).resolve().parents[3] / "src"

SCRIPT = textwrap.dedent(
    """
    import numpy as np, numba, cvxpy as cp
    assert numba.config.DISABLE_JIT
    from sparsecert.solvers.perspective import perspective_relaxation
    rng = np.random.default_rng(0)
    X = rng.standard_normal((15, 6)); y = X[:, 0] - X[:, 2] + 0.3 * rng.standard_normal(15)
    k, lam = 2, 0.5
    for M in (None, 0.5):
        r = perspective_relaxation(X, y, k, lam, max_abs_coef=M, fixed_out=[1], rel_tol=1e-9)
        b, z, s = cp.Variable(6), cp.Variable(6), cp.Variable(6)
        cons = [z >= 0, z <= 1, cp.sum(z) <= k, z[1] == 0, b[1] == 0]
        cons += [cp.quad_over_lin(b[j], z[j]) <= s[j] for j in range(6)]
        if M is not None:
            cons.append(cp.abs(b) <= M * z)
        pr = cp.Problem(cp.Minimize(cp.sum_squares(y - X @ b) + lam * cp.sum(s)), cons)
        pr.solve(solver=cp.CLARABEL)
        assert r.status == "converged", r.status
        assert abs(r.objective - pr.value) <= 1e-6 * abs(pr.value), (r.objective, pr.value)
        assert r.lower_bound <= pr.value * (1 + 1e-8)
    r = perspective_relaxation(X, np.sign(y), k, lam, loss="logistic", fixed_in=[0], max_iter=30)
    assert r.lower_bound <= r.objective
    print("OK")
    """
)


def test_python_path_without_jit():
    env = dict(os.environ)
    env["NUMBA_DISABLE_JIT"] = "1"
    env["PYTHONPATH"] = str(SRC) + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "OK" in out.stdout
