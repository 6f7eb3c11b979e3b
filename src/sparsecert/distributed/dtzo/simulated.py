r"""P4: a trilevel problem whose levels are black-box simulators (function values only).

Worker ``j`` of ``N`` holds, for each level ``l = 1, 2, 3``, a simulator of a stable linear
system driven by the decision ``z = (x1, x2, x3)``: the state starts at ``s_0 = 0`` and follows
``s_t = A_{l,j} s_{t-1} + B_{l,j} (z - a_{l,j})`` for ``t = 1..T``; the level objective is the
accumulated output energy ::

    f_{l,j}(z) = (c_{l,j} / 2) sum_{t=1}^{T} ||s_t||^2.

A worker (:class:`SimulatorSite`) answers function values by running its simulation and has no
gradient (``has_gradient`` is False; the first-order reference of the solver cannot run on it):
the inner levels can only be explored by zeroth-order estimates.

**Reference solution.** The simulation is linear in its input, so ``s_t = (sum_{i<t} A^i) B
(z - a)`` and ``f_{l,j}(z) = 1/2 ||S_{l,j} (z - a_{l,j})||^2`` with ``S_{l,j}`` the stacked,
scaled step responses. The generator (which built the systems) forms these matrices and hands
them to :class:`~sparsecert.distributed.dtzo.problems.QuadraticTrilevel`, whose closed-form
trilevel solution and true residuals judge the solver; the solver never sees them. The test
checks the simulators' values against the explicit quadratic forms.
"""

from __future__ import annotations

import numpy as np

from sparsecert.distributed.dtzo.problems import QuadraticTrilevel, check_instance

__all__ = ["SimulatorSite", "SimulatedTrilevel", "make_p4"]


class SimulatorSite:
    """One worker's three level simulators (a
    :class:`~sparsecert.distributed.dtzo.trilevel.TrilevelWorker` with values only).

    Parameters
    ----------
    A : array of shape (3, n, n)
        State transitions (spectral radius below 1).
    B : array of shape (3, n, d)
        Input maps.
    a : array of shape (3, d)
        Input offsets (the decision enters as ``z - a``).
    c : array of shape (3,)
        Output weights.
    T : int
        Simulated steps.
    """

    def __init__(self, A: np.ndarray, B: np.ndarray, a: np.ndarray, c: np.ndarray,
                 T: int) -> None:
        self.A, self.B, self.a, self.c, self.T = A, B, a, c, int(T)
        self._At = np.ascontiguousarray(np.transpose(A, (0, 2, 1)))
        self._Bt = np.ascontiguousarray(np.transpose(B, (0, 2, 1)))

    def value(self, level: int, Z: np.ndarray) -> np.ndarray:
        """Simulate level ``level`` for every row of ``Z``: the objective values ``(m,)``."""
        i = int(level) - 1
        Z = np.atleast_2d(np.asarray(Z, dtype=np.float64))
        u = (Z - self.a[i]) @ self._Bt[i]  # the constant input of each run
        s = np.zeros_like(u)
        energy = np.zeros(Z.shape[0])
        for _ in range(self.T):
            s = s @ self._At[i]
            s += u
            energy += np.einsum("mn,mn->m", s, s)
        return 0.5 * self.c[i] * energy

    def has_gradient(self, level: int) -> bool:
        return False

    def gradient(self, level: int, Z: np.ndarray) -> np.ndarray:
        raise NotImplementedError("a simulator answers function values only")


class SimulatedTrilevel:
    """P4 (see the module docstring): ``worker(j)`` is worker ``j``'s simulators; ``reference``
    the equivalent quadratic problem (oracle only); ``metrics`` its errors and residuals.

    Parameters
    ----------
    dims : tuple of int
    A, B, a, c : arrays of shapes (N, 3, n, n), (N, 3, n, d), (N, 3, d), (N, 3)
    T : int
    """

    def __init__(self, dims: tuple[int, int, int], A: np.ndarray, B: np.ndarray,
                 a: np.ndarray, c: np.ndarray, T: int) -> None:
        self.dims = tuple(int(v) for v in dims)
        self.d = int(sum(self.dims))
        self.n_workers = int(A.shape[0])
        if B.shape[-1] != self.d or a.shape != (self.n_workers, 3, self.d):
            raise ValueError("the input maps and offsets must act on z of length sum(dims)")
        self.A, self.B, self.a, self.c, self.T = A, B, a, c, int(T)
        S = [np.stack([self.step_responses(j, lev) for j in range(self.n_workers)])
             for lev in range(3)]
        self.reference = QuadraticTrilevel(self.dims, S, [a[:, lev] for lev in range(3)],
                                           np.zeros(self.d))
        self.x1_star, self.z_star = self.reference.x1_star, self.reference.z_star

    def step_responses(self, j: int, lev: int) -> np.ndarray:
        """``S_{l,j}``: ``sqrt(c) [M_1 B; ...; M_T B]`` with ``M_t = sum_{i<t} A^i``
        (``f_{l,j}(z) = 1/2 ||S_{l,j} (z - a_{l,j})||^2``)."""
        A, B = self.A[j, lev], self.B[j, lev]
        rows, M, P = [], np.zeros_like(A), np.eye(A.shape[0])
        for _ in range(self.T):
            M = M + P
            P = P @ A
            rows.append(M @ B)
        return np.sqrt(self.c[j, lev]) * np.vstack(rows)

    def worker(self, j: int) -> SimulatorSite:
        if not 0 <= int(j) < self.n_workers:
            raise ValueError(f"worker must be in [0, {self.n_workers}), got {j!r}")
        j = int(j)
        return SimulatorSite(self.A[j], self.B[j], self.a[j], self.c[j], self.T)

    def initial_point(self) -> np.ndarray:
        return np.zeros(self.d)

    def metrics(self, z: np.ndarray) -> dict[str, float]:
        """Errors and true residuals against the reference solution (oracle only)."""
        return self.reference.metrics(z)


def make_p4(n_workers: int = 3, dims: tuple[int, int, int] = (20, 50, 50), T: int = 4,
            seed: int = 0, heterogeneity: float = 1.0) -> SimulatedTrilevel:
    """A random instance of P4: ``A = 0.5 Q`` (``Q`` a random orthogonal matrix),
    ``B = I + 0.3 G / sqrt(d)`` (``G`` Gaussian), offsets spread by ``heterogeneity``
    around a common centre, and weights ``c`` making the largest singular value of each
    ``S_{l,j}`` equal to ``1.4 / sqrt(N)``.

    Parameters
    ----------
    n_workers : int
    dims : (d1, d2, d3)
    T : int
        Simulated steps (>= 1).
    seed : int
    heterogeneity : float
    """
    check_instance(n_workers, dims, heterogeneity)
    if int(T) != T or T < 1:
        raise ValueError(f"T must be a positive integer, got {T!r}")
    rng = np.random.default_rng(seed)
    N, d = int(n_workers), int(sum(dims))
    A = np.empty((N, 3, d, d))
    B = np.empty((N, 3, d, d))
    a = np.empty((N, 3, d))
    centre = rng.standard_normal((3, d))
    for j in range(N):
        for lev in range(3):
            q, r = np.linalg.qr(rng.standard_normal((d, d)))
            A[j, lev] = 0.5 * q * np.sign(np.diag(r))
            B[j, lev] = np.eye(d) + 0.3 * rng.standard_normal((d, d)) / np.sqrt(d)
            a[j, lev] = centre[lev] + heterogeneity * rng.standard_normal(d)
    c = np.ones((N, 3))
    prob = SimulatedTrilevel(tuple(int(v) for v in dims), A, B, a, c, int(T))
    for j in range(N):  # scale: the largest singular value of S_{l,j} becomes 1.4 / sqrt(N)
        for lev in range(3):
            smax = np.linalg.norm(prob.step_responses(j, lev), 2)
            c[j, lev] = (1.4 / np.sqrt(N) / smax) ** 2
    return SimulatedTrilevel(prob.dims, A, B, a, c, int(T))
