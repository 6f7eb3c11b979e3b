"""One call for the node's perspective term with the symmetric box ``M`` (``bounds`` None) or
with per-coefficient bounds (a :class:`~._coef_bounds.CoefBounds`).

Resolved when the caller is typed (numba overloads): a kernel compiled for ``bounds=None`` calls
the box's kernel (:mod:`._gfun`, :mod:`._prox`) directly and contains none of the bounds' code
(:mod:`._coef_bounds`, :mod:`._coef_bounds_prox`).
"""

from __future__ import annotations

from numba import types
from numba.extending import overload

from sparsecert.solvers.perspective._coef_bounds import g_node_b, gstar_node_b, relaxed_z_b
from sparsecert.solvers.perspective._coef_bounds_prox import prox_node_b
from sparsecert.solvers.perspective._gfun import g_node, gstar_node, relaxed_z_into
from sparsecert.solvers.perspective._prox import prox_node

__all__ = ["g_node_any", "gstar_node_any", "prox_node_any", "relaxed_z_any_into"]


def g_node_any(b, state, budget, M, bounds):
    """``g_node`` with the box ``M`` (``bounds`` None) or with the per-coefficient bounds."""
    if bounds is None:
        return g_node(b, state, budget, M)
    return g_node_b(b, state, budget, bounds)


def gstar_node_any(a, state, budget, M, bounds):
    """``g*_node`` with the box ``M`` (``bounds`` None) or with the per-coefficient bounds."""
    if bounds is None:
        return gstar_node(a, state, budget, M)
    return gstar_node_b(a, state, budget, bounds)


def prox_node_any(v, state, budget, tau, M, bounds):
    """``prox_{tau g_node}`` with the box ``M`` (``bounds`` None) or with the bounds."""
    if bounds is None:
        return prox_node(v, state, budget, tau, M)
    return prox_node_b(v, state, budget, tau, bounds)


def relaxed_z_any_into(b, state, budget, z, bounds):
    """The minimising ``z`` of ``g_node`` at ``b`` into ``z`` (the box's, or the bounds')."""
    if bounds is None:
        relaxed_z_into(b, state, budget, z)
    else:
        z[:] = relaxed_z_b(b, state, budget, bounds)


@overload(g_node_any)
def _ol_g_node_any(b, state, budget, M, bounds):
    if isinstance(bounds, types.NoneType):
        def impl(b, state, budget, M, bounds):
            return g_node(b, state, budget, M)
    else:
        def impl(b, state, budget, M, bounds):
            return g_node_b(b, state, budget, bounds)
    return impl


@overload(gstar_node_any)
def _ol_gstar_node_any(a, state, budget, M, bounds):
    if isinstance(bounds, types.NoneType):
        def impl(a, state, budget, M, bounds):
            return gstar_node(a, state, budget, M)
    else:
        def impl(a, state, budget, M, bounds):
            return gstar_node_b(a, state, budget, bounds)
    return impl


@overload(prox_node_any)
def _ol_prox_node_any(v, state, budget, tau, M, bounds):
    if isinstance(bounds, types.NoneType):
        def impl(v, state, budget, tau, M, bounds):
            return prox_node(v, state, budget, tau, M)
    else:
        def impl(v, state, budget, tau, M, bounds):
            return prox_node_b(v, state, budget, tau, bounds)
    return impl
