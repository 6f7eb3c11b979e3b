"""Compilations during a search are seen, timed, said, and kept out of the time limit."""

from __future__ import annotations

import numpy as np
from _data import sparse_glm_data
from numba import njit

from sparsecert.bnb import BnBSettings, BranchAndBound
from sparsecert.bnb.compile_watch import CompileWatch
from sparsecert.solvers.perspective import RelaxationProblem


def _fresh_kernels():
    """Two kernels numba has never compiled (new functions, no disk cache): ``outer`` calls
    ``inner``, so compiling ``outer`` compiles ``inner`` inside it."""

    @njit(cache=False)
    def inner(x):
        return x * 2.0 + 1.0

    @njit(cache=False)
    def outer(x):
        return inner(x) - 3.0

    return inner, outer


def test_the_watch_times_the_outermost_compilation_only_while_active():
    inner, outer = _fresh_kernels()
    started, ended = [], []
    watch = CompileWatch(started.append, lambda name, s: ended.append((name, s)))
    with watch:
        assert outer(1.5) == 1.0
        assert outer(2.5) == 3.0  # the same types: no second compilation
    assert watch.kernels == [started[0]] and len(ended) == 1
    assert started[0].endswith("outer")
    assert watch.seconds > 0.0 and watch.seconds == ended[0][1]
    # after the block the listener is gone: a new compilation is not counted
    _, other = _fresh_kernels()
    assert other(1.0) == 0.0
    assert len(watch.kernels) == 1 and len(ended) == 1


def test_a_nested_watch_of_another_thread_counts_its_own_depth():
    import threading

    watch = CompileWatch()
    with watch:
        kernels = [_fresh_kernels()[1] for _ in range(2)]
        threads = [threading.Thread(target=k, args=(1.0,)) for k in kernels]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(watch.kernels) == 2 and all(k.endswith("outer") for k in watch.kernels)


def test_a_search_reports_a_compilation_as_compile_time_and_says_so():
    X, y = sparse_glm_data("squared", 30, 10, seed=4)[:2]
    prob = RelaxationProblem.from_data(X, y, 0.1)
    lines: list[str] = []
    _, kernel = _fresh_kernels()

    def callback(node, res):  # a kernel missing from the cache, first called in the search
        kernel(np.float64(node.id))

    s = BnBSettings(node_limit=5, verbose=1, log=lines.append)
    eng = BranchAndBound(prob, 3, s, node_callback=callback)
    res = eng.run()
    said = [ln for ln in lines if ln.startswith("compiling ") or ln.startswith("compiled ")]
    assert len(said) == 2 and "outer" in said[0] and "not in numba's cache" in said[0]
    assert res.compile_time > 0.0
    # a second run has nothing left to compile: no compile time, nothing said
    lines.clear()
    again = eng.run()
    assert again.compile_time == 0.0
    assert not [ln for ln in lines if ln.startswith("compil")]
