"""The first run's compilation (sparsecert/firstrun): a tiny problem of the real problem's
configuration, the node kernel compiled in a second process that announces the kernels both
processes share, and the transpose without a kernel when small; the room and the search import
no circle."""

import numpy as np
import pytest

from sparsecert.firstrun import cache as compiled
from sparsecert.firstrun import precompile, warmup
from sparsecert.solvers.perspective import RelaxationProblem
from sparsecert.solvers.perspective._linalg import SMALL_TRANSPOSE, c_transpose, transpose


def _applies(prob):
    return compiled.zspace_applies(prob)


@pytest.mark.parametrize("loss, n, p, kw, zspace", [
    ("squared", 60, 10, {"eig_shift": "auto", "fit_intercept": True}, False),  # shifted
    ("squared", 150, 10, {"fit_intercept": True}, True),                       # no shift
    ("squared", 30, 200, {}, True),
    ("squared", 30, 200, {"max_abs_coef": 2.0}, False),                        # box
    ("logistic", 30, 200, {}, False),
    ("logistic", 30, 200, {"fit_intercept": True}, False),                     # carried intercept
    ("poisson", 40, 5, {"max_abs_coef": 3.0}, False),
])
def test_tiny_problem_has_the_real_problems_configuration(loss, n, p, kw, zspace):
    """The tiny problem's kernels take the real problem's argument types, and the node
    strategies that apply to both are the same (where z-space applies, the search races it
    against FISTA, so the warm-up compiles both)."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((n, p))
    u = X[:, 0] - X[:, 1]
    y = {"squared": u, "logistic": np.where(u > 0, 1.0, -1.0),
         "poisson": rng.poisson(np.exp(0.3 * u)).astype(float)}[loss]
    prob = RelaxationProblem.from_data(X, y, 1.0, loss=loss, **kw)
    config = warmup.tiny_config(prob)
    tiny = warmup.tiny_problem(*config)
    assert _applies(tiny) == _applies(prob) == zspace
    assert (tiny.loss, tiny.M < np.inf, tiny.fit_intercept, tiny.mu > 0, tiny.icpt) == (
        prob.loss, prob.M < np.inf, prob.fit_intercept, prob.mu > 0, prob.icpt)
    assert tiny.n_samples * tiny.n_features <= 120 * 500


def test_node_kernel_compiled_in_a_second_process_is_then_cached():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 6))
    prob = RelaxationProblem.from_data(X, X[:, 0], 1.0, fit_intercept=True, eig_shift="auto")
    config = warmup.tiny_config(prob)
    child = warmup._spawn(config)
    warmup._release(child)  # the node kernel's other callees: compiled by the child itself
    assert child is not None and child.wait(timeout=300) == 0
    warmup.compile_node_kernel(config)  # in-process too (no error, same types)
    assert warmup.needs_compiling(prob) is False


def test_small_transposes_use_numpy_and_agree_with_the_kernel():
    rng = np.random.default_rng(0)
    for shape in [(3, 5), (70, 40), (SMALL_TRANSPOSE // 64 + 1, 64)]:
        X = rng.standard_normal(shape)
        XT = c_transpose(X)
        assert XT.flags.c_contiguous and np.array_equal(XT, X.T)
    Y = rng.standard_normal((9, 7))
    assert np.array_equal(transpose(Y), Y.T)


def test_spawned_process_fails_cleanly_on_a_bad_configuration():
    child = warmup._spawn(("no-such-loss", False, False, False, 8, 6))
    done = warmup._watch(child)
    assert child is not None and child.wait(timeout=300) != 0
    assert done.wait(timeout=60)  # a failed process releases the waiting one too
    assert warmup._watch(None).is_set()


def test_compiling_process_says_when_the_shared_kernels_are_cached():
    """The second process announces the shared kernels, which are then in numba's cache for
    the argument types the bound evaluation of this process passes."""
    from sparsecert.firstrun.cache import is_cached
    from sparsecert.solvers.perspective._gfun import g_node, gstar_node

    rng = np.random.default_rng(2)
    X = rng.standard_normal((40, 7))
    prob = RelaxationProblem.from_data(X, X[:, 1], 1.0, fit_intercept=True, eig_shift="auto")
    config = warmup.tiny_config(prob)
    child = warmup._spawn(config)
    assert child is not None
    lines = child.communicate(timeout=300)[0].splitlines()
    assert child.returncode == 0 and lines == [warmup.SHARED_DONE]
    tiny = warmup.tiny_problem(*config)
    state = np.full(tiny.n_features, 2, dtype=np.int8)
    b = np.zeros(tiny.n_features)
    for kernel in (g_node, gstar_node):
        assert is_cached(kernel, (b, state, 1, float(tiny.M))) is True
    assert warmup.needs_compiling(prob) is False


_LISTEN = """
import json, os, sys
from numba.core import event
from sparsecert.firstrun import precompile, warmup

names = []

class Listener(event.Listener):
    def on_start(self, e):
        pass

    def on_end(self, e):
        names.append(e.data["dispatcher"].py_func.__name__)

config = (sys.argv[1], sys.argv[2] == "1", sys.argv[3] == "1", sys.argv[4] == "1", 8, 6)
hint = [precompile.node_kernel_cached_somewhere()]
precompile.compile_shared(config)
precompile.compile_node_callees(warmup.tiny_problem(*config))
event.register("numba:compile", Listener())
precompile.compile_node_kernel(config)
hint.append(precompile.node_kernel_cached_somewhere())
print(json.dumps(hint))
print(json.dumps(names))
"""


@pytest.mark.slow
def test_the_node_kernel_finds_all_its_callees_compiled(tmp_path):
    """What the two processes compile before the node kernel is every kernel it calls, with
    the argument types it passes: compiling it then compiles nothing else (no kernel twice).
    With a carried intercept (logistic), which the node kernel then also calls; the argument
    types do not depend on the loss otherwise."""
    import json
    import os
    import subprocess
    import sys

    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", _LISTEN, "logistic", "0", "1", "0"],
                         env=env, capture_output=True, text=True, timeout=600, check=True)
    compiled = [n for n in json.loads(out.stdout.splitlines()[-1])
                if not n.startswith(("impl", "ol_", "_ol_"))]
    assert compiled == ["fista_chunk"]
    # the command line's hint (a first run: start the compiling process early) reads the cache
    assert json.loads(out.stdout.splitlines()[-2]) == [False, True]


def _loaded_in_a_new_process(code: str, modules: tuple[str, ...]) -> list[str]:
    """The ``modules`` a new interpreter has loaded after running ``code``."""
    import ast
    import subprocess
    import sys

    code += f"; import sys; print(sorted(m for m in {modules!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    return ast.literal_eval(out.strip())


def test_compiling_process_imports_neither_the_search_nor_scikit_learn():
    assert _loaded_in_a_new_process("import sparsecert.firstrun.precompile",
                                    ("sparsecert.bnb", "sklearn", "scipy.optimize",
                                     "sparsecert.firstrun.warmup")) == []


def test_the_search_does_not_import_scipy_optimize():
    """A first run pays for every import before it can start compiling: the command and the
    search leave scipy.optimize (only boxed refits use it) to the runs that need it."""
    assert _loaded_in_a_new_process("import sparsecert.cli.main, sparsecert.bnb.search",
                                    ("scipy.optimize",)) == []


def test_a_z_space_problem_asks_for_both_node_kernels(monkeypatch):
    """A problem whose nodes can be solved in z-space races z-space against FISTA on one
    node: the first-run check reads the cache of both node kernels, with the argument types
    their solves pass; a problem without z-space asks for the FISTA kernel only."""
    from sparsecert.solvers.perspective import _fista, _linalg, _zspace, solve_node

    rng = np.random.default_rng(5)
    X = rng.standard_normal((12, 60))
    prob = RelaxationProblem.from_data(X, X[:, 0] - X[:, 3], 1.0, fit_intercept=True)
    assert _applies(prob)
    for solver in ("zspace", "fista"):  # compiles or loads both loops for these types
        solve_node(prob, 3, solver=solver)
    _linalg.design_norm_sq(prob.design)  # and a working set's step size (the warm-up's)
    assert warmup.needs_compiling(prob) is False
    asked = []
    monkeypatch.setattr(compiled, "is_cached",
                        lambda dispatcher, args: asked.append(dispatcher) or True)
    compiled.node_kernels_cached(prob)
    assert asked == [_fista.fista_chunk, _linalg._lanczos_top, _zspace.zspace_chunk]
    boxed = RelaxationProblem.from_data(X, X[:, 0], 1.0, max_abs_coef=2.0)
    asked.clear()
    compiled.node_kernels_cached(boxed)
    assert asked == [_fista.fista_chunk, _linalg._lanczos_top]


@pytest.mark.timeout(300)
def test_an_interrupted_warm_up_stops_the_compiling_process(monkeypatch):
    """Ctrl-C (or a notebook's interrupt, which reaches this process only) during the first
    run's compilation stops the second process instead of waiting for its node kernel."""
    import subprocess
    import sys

    spawned = []

    def spawn(config, claims=None):  # a stand-in that would end two seconds after its release
        code = "import sys, time; sys.stdin.read(); time.sleep(2)"
        spawned.append(subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True))
        return spawned[-1]

    def interrupted(tiny, claims=None):
        raise KeyboardInterrupt

    monkeypatch.setattr(warmup, "_spawn", spawn)
    monkeypatch.setattr(warmup, "compile_node_callees", interrupted)
    rng = np.random.default_rng(2)
    X = rng.standard_normal((60, 10))
    prob = RelaxationProblem.from_data(X, X[:, 0], 1.0, fit_intercept=True, eig_shift="auto")
    with pytest.raises(KeyboardInterrupt):
        warmup.warm_up(prob)
    assert len(spawned) == 1
    assert spawned[0].returncode is not None and spawned[0].returncode < 0  # killed, not awaited


def test_compiling_process_loads_no_solver_and_no_eigen_solver():
    """The second process imports only the kernels before it compiles: building its tiny
    problem (shifted least squares, the default job's configuration) loads neither the
    solvers nor an eigen-solver (numba loads scipy.linalg itself once it compiles)."""
    code = ("from sparsecert.firstrun import precompile as p; "
            "t = p.tiny_problem('squared', False, True, True, 8, 6); assert t.mu > 0")
    assert _loaded_in_a_new_process(code, ("scipy.linalg", "sparsecert.solvers.perspective.api",
                                           "sparsecert.solvers.perspective.full")) == []


def test_a_prestarted_process_ends_when_its_input_ends_without_a_configuration():
    child = precompile.spawn(None)
    assert child is not None
    out, _ = child.communicate("", timeout=300)
    assert child.returncode == 0 and out.splitlines() == [warmup.SHARED_DONE]


def test_the_shared_kernels_have_the_same_argument_types_in_every_configuration():
    """What lets a process started early compile the shared kernels before it knows the
    configuration."""
    from numba import typeof

    def types(config):
        return [(kernel, tuple(typeof(a) for a in args))
                for kernel, args in precompile.shared_calls(config)]

    expected = types(precompile.SHARED_CONFIG)
    for loss in ("squared", "logistic", "poisson", "squared_hinge"):
        for boxed in (False, True):
            for icpt in (False, True):
                for n, p in ((8, 6), (8, 40), (120, 6)):
                    shifted = loss == "squared" and not boxed
                    assert types((loss, boxed, icpt, shifted, n, p)) == expected


def test_the_warm_up_takes_the_prestarted_process(monkeypatch):
    """The process the command line started early compiles for the warm-up (no second one is
    started), and ends normally once the node kernel is compiled."""

    def no_spawn(config, claims=None):
        raise AssertionError("a second compiling process was started")

    monkeypatch.setattr(warmup, "_spawn", no_spawn)
    monkeypatch.setattr(precompile, "node_kernel_cached_somewhere", lambda: False)
    rng = np.random.default_rng(3)
    X = rng.standard_normal((60, 8))
    prob = RelaxationProblem.from_data(X, X[:, 0], 1.0, fit_intercept=True, eig_shift="auto")
    precompile.prestart()
    child = precompile._prestarted[0]
    warmup.warm_up(prob)
    assert child.returncode == 0  # awaited: it compiled the node kernel and ended
    assert precompile.take_prestarted() is None
    assert warmup.needs_compiling(prob) is False


def test_a_prestarted_process_nobody_needs_is_ended(tmp_path):
    """A run with nothing to compile (the cache said otherwise) or a quiet one does not leave
    the early process behind: the command ends it whatever happens."""
    from sparsecert.cli import main

    started = []
    real_spawn = precompile.spawn

    def spawn(config, claims=None):
        started.append(real_spawn(config, claims))
        return started[-1]

    rng = np.random.default_rng(4)
    X = rng.standard_normal((40, 6))
    data = tmp_path / "d.npz"
    np.savez(data, X=X, y=X[:, 0] + 0.1 * rng.standard_normal(40))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(precompile, "spawn", spawn)
        mp.setattr(warmup, "needs_compiling", lambda problem: False)
        mp.setattr(precompile, "node_kernel_cached_somewhere", lambda: False)
        code = main(["certify", "--data", str(data), "--k", "2", "--lambda2", "1",
                     "--out", str(tmp_path / "c.json")])
        assert code == 0
        assert len(started) == 1 and started[0].poll() is not None
        assert precompile.take_prestarted() is None
        code = main(["certify", "--data", str(data), "--k", "2", "--lambda2", "1", "--quiet",
                     "--out", str(tmp_path / "c2.json")])
        assert code == 0 and len(started) == 1  # a quiet run compiles silently, in-process
        mp.setattr(precompile, "node_kernel_cached_somewhere", lambda: True)
        code = main(["certify", "--data", str(data), "--k", "2", "--lambda2", "1",
                     "--out", str(tmp_path / "c3.json")])
        assert code == 0 and len(started) == 1  # the node kernel is cached: nothing started


def test_each_of_the_node_kernels_other_callees_is_compiled_by_one_process(tmp_path,
                                                                          monkeypatch):
    """The two processes share the node kernel's other callees by claiming each in a
    directory: whichever is free first takes the next one, and no kernel is compiled twice."""
    done = []
    calls = [(name, lambda name=name: done.append(name), ()) for name in ("a", "b", "c")]
    monkeypatch.setattr(precompile, "callee_calls", lambda prob: calls)
    (tmp_path / "b").touch()  # the other process took "b"
    precompile.compile_claimed(None, str(tmp_path))
    assert done == ["a", "c"]
    precompile.compile_claimed(None, str(tmp_path))  # nothing left to take
    assert done == ["a", "c"]
    precompile.compile_claimed(None, None)  # no second process: all of them
    assert done == ["a", "c", "a", "b", "c"]


def test_the_cache_hint_counts_only_a_current_index_for_this_python(tmp_path, monkeypatch):
    """An index older than the kernel's source (numba ignores it: an upgraded package) or of
    another Python version is no node kernel in the cache: the command line then starts the
    compiling process early, as on a first run."""
    import hashlib
    import os
    import sys

    here = precompile.KERNEL_DIR
    where = tmp_path / (os.path.basename(here) + "_" + hashlib.sha1(here.encode()).hexdigest())
    where.mkdir()
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    source = os.path.getmtime(os.path.join(here, "_fista.py"))
    tag = f"py{sys.version_info.major}{sys.version_info.minor}"
    assert precompile.node_kernel_cached_somewhere() is False
    other = where / "_fista.fista_chunk-212.py27.nbi"
    other.write_bytes(b"")
    os.utime(other, (source + 10, source + 10))
    assert precompile.node_kernel_cached_somewhere() is False
    index = where / f"_fista.fista_chunk-212.{tag}.nbi"
    index.write_bytes(b"")
    os.utime(index, (source - 10, source - 10))
    assert precompile.node_kernel_cached_somewhere() is False
    os.utime(index, (source + 10, source + 10))
    assert precompile.node_kernel_cached_somewhere() is True


def _import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports (at any depth of the file: the imports
    inside functions count too), from the source."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[3] / "src"
    files = {".".join(p.relative_to(root).with_suffix("").parts).removesuffix(".__init__"): p
             for p in (root / "sparsecert").rglob("*.py")}
    graph = {}
    for mod, path in files.items():
        out = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                out.add(node.module)
                out.update(f"{node.module}.{a.name}" for a in node.names)
            elif isinstance(node, ast.Import):
                out.update(a.name for a in node.names)
        graph[mod] = {m for m in out if m in files and m != mod}
    return graph


def test_the_search_and_the_first_run_import_no_circle():
    """The first-run compilation is a room of its own: it imports the search (for its tiny
    search), the search never imports it, and no module the search imports leads back to it."""
    graph = _import_graph()

    def reach(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for m in graph[todo.pop()] - seen:
                seen.add(m)
                todo.append(m)
        return seen

    from_search = reach("sparsecert.bnb.search")
    assert "sparsecert.bnb.search" not in from_search  # no circle through the search
    assert not any(m.startswith("sparsecert.firstrun") for m in from_search)
    assert "sparsecert.bnb.search" in reach("sparsecert.firstrun.warmup")
    assert "sparsecert.firstrun" in reach("sparsecert.api")  # the front door calls the room
