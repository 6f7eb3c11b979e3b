"""The progress log keeps ticking through long phases; the first run says it compiles."""

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np

from sparsecert.bnb import BnBSettings, BranchAndBound
from sparsecert.bnb.progress import ProgressLog
from sparsecert.firstrun import warmup
from sparsecert.solvers.perspective import RelaxationProblem

SRC = Path(__file__).resolve().parents[3] / "src"


def test_ticker_writes_through_a_long_phase():
    lines = []
    log = ProgressLog(verbose=1, interval=0.05, write=lines.append)
    t0 = time.perf_counter()
    with log.ticking(t0):
        with log.phase("heuristics"):
            time.sleep(0.4)
        log.update(0.5, 3, 2, 10.0, 5.0, 0.5, force=True)
        n_before = len(lines)
        time.sleep(0.3)
    assert sum("heuristics ..." in s for s in lines) >= 3  # short lines before the table
    assert lines[n_before - 2] == ProgressLog.HEADER
    rows = lines[n_before:]
    assert len(rows) >= 2 and all(r.split()[1:3] == ["3", "2"] for r in rows)
    n_end = len(lines)
    time.sleep(0.2)
    assert len(lines) == n_end  # the ticker stopped with the block


def test_ticker_is_silent_at_verbose_0():
    lines = []
    log = ProgressLog(verbose=0, interval=0.01, write=lines.append)
    with log.ticking(time.perf_counter()), log.phase("compiling"):
        time.sleep(0.1)
    assert lines == []


def _problem():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 6))
    return RelaxationProblem.from_data(X, X[:, 0] + rng.standard_normal(20), 1.0)


def test_first_run_announces_compilation_once(monkeypatch):
    """The front door has the first run's kernels compiled between the search's first line
    and the search, once; the search alone compiles nothing up front."""
    import sparsecert

    calls = []
    monkeypatch.setattr(warmup, "needs_compiling", lambda prob: True)
    monkeypatch.setattr(warmup, "warm_up", lambda prob: calls.append(prob) or 1.25)
    lines = []
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 6))
    y = X[:, 0] + rng.standard_normal(20)
    first = sparsecert.certify(X, y, 2, 1.0, log=lines.append)
    assert len(calls) == 1 and first.search.compile_time > 0.0  # reported apart
    i = next(i for i, s in enumerate(lines) if s.startswith("compiling the numerical kernels"))
    assert "first run only" in lines[i] and lines[i + 1] == "kernels compiled in 1.2 s"
    assert lines[i - 1].startswith("sparsecert branch and bound")
    assert sum(s.startswith("sparsecert branch and bound") for s in lines) == 1
    lines.clear()
    sparsecert.certify_path(X, y, [1, 2], 1.0, verbose=1, log=lines.append)
    assert len(calls) == 2  # once for the whole path
    assert sum(s.startswith("compiling the numerical kernels") for s in lines) == 1
    # (this configuration's kernels compiled first, silently: with a cold cache the search
    # would compile them itself and say so, which is not what is asked here)
    BranchAndBound(_problem(), 2, BnBSettings(verbose=0)).run()
    lines.clear()
    BranchAndBound(_problem(), 2, BnBSettings(verbose=1, log=lines.append)).run()
    assert not any("compil" in s for s in lines) and len(calls) == 2
    monkeypatch.setattr(warmup, "needs_compiling", lambda prob: False)
    lines.clear()
    later = sparsecert.certify(X, y, 2, 1.0, log=lines.append)
    assert not any("compil" in s for s in lines) and len(calls) == 2
    assert later.search.compile_time == 0.0


def test_the_log_keeps_ticking_through_the_certificate(monkeypatch):
    """After the search, the certificate's assembly is a phase of its own: the ticker repeats
    the last row naming how far it is, and a line says how long it took."""
    import dataclasses

    import sparsecert.api as api

    monkeypatch.setattr(warmup, "needs_compiling", lambda prob: False)
    slow_parts = []
    original = api.assemble_result

    def slow(*args, note=None, **kwargs):
        note("certificate: rigorous bounds, node 0 of 3")
        time.sleep(0.4)
        slow_parts.append(1)
        return original(*args, note=note, **kwargs)

    monkeypatch.setattr(api, "assemble_result", slow)
    from_options = BnBSettings.from_options
    monkeypatch.setattr(BnBSettings, "from_options", classmethod(
        lambda cls, options, **kw: dataclasses.replace(from_options(options, **kw),
                                                        log_interval=0.1)))
    lines = []
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 6))
    res = api.certify(X, X[:, 0] + rng.standard_normal(20), 2, 1.0, log=lines.append)
    assert slow_parts and res.certificate is not None
    ticks = [s for s in lines if s.endswith("certificate: rigorous bounds, node 0 of 3")]
    assert len(ticks) >= 2
    assert any(s.startswith("certificate: ") and s.endswith("s after the search")
               for s in lines)


def test_is_cached_reads_numbas_cache(tmp_path):
    (tmp_path / "kmod.py").write_text(textwrap.dedent("""
        from numba import njit

        @njit(cache=True)
        def f(x):
            return x + 1
    """))
    script = textwrap.dedent("""
        import sys
        import numpy as np
        from kmod import f
        from sparsecert.firstrun.cache import is_cached
        before = is_cached(f, (np.ones(2),))
        f(np.ones(2))
        print(before, is_cached(f, (np.ones(2),)), is_cached(f, (np.ones((2, 2)),)))
    """)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(tmp_path), str(SRC)]))
    outs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                           text=True, timeout=120, cwd=tmp_path) for _ in range(2)]
    assert [o.stdout.split() for o in outs] == [["False", "True", "False"],
                                                ["True", "True", "False"]], outs[0].stderr


def test_the_log_follows_an_overlapping_search_with_a_valid_bound():
    """With overlapping batches the pipeline never runs dry; the log (and the run's history)
    still moves on batch by batch, and every lower bound it shows counts the nodes handed out
    but not yet applied, so none exceeds the enumerated optimum."""
    from _bruteforce import brute_force
    from _data import sparse_glm_data

    X, y = sparse_glm_data("squared", 20, 12, 1, support=(1, 5, 9), coef=(1.0, -0.8, 0.6))
    X = X + np.random.default_rng(0).normal(size=X.shape)
    k, lam = 4, 0.01
    lines: list[str] = []
    s = BnBSettings(rel_gap=0.0, abs_gap=0.0, batch_size=2, batch_overlap=1, verbose=2,
                    log=lines.append)
    engine = BranchAndBound(RelaxationProblem.from_data(X, y, lam), k, s)
    shown, update = [], engine.progress.update

    def watched(elapsed, nodes, n_open, upper, lower, gap, force=False):
        # the bound shown against every node still open: queued or handed out
        open_bounds = [n.lower_bound for n in engine._in_flight]
        open_bounds += [n.lower_bound for n in engine._live.values() if n.status == "open"]
        shown.append((lower, min(open_bounds, default=np.inf), len(engine._in_flight)))
        update(elapsed, nodes, n_open, upper, lower, gap, force)

    engine.progress.update = watched
    res = engine.run()
    ref, _ = brute_force(X, y, k, "squared", lam)
    assert res.status == "optimal" and res.n_evaluated > 20
    assert any(n_flight for _, _, n_flight in shown)  # rows while outcomes were pending
    assert all(lower <= lowest for lower, lowest, _ in shown)
    rows = [r.split() for r in lines if r.strip().split()[0].endswith("s")
            and r.split()[1].isdigit()]
    counts = [int(r[1]) for r in rows]
    assert counts == sorted(counts)
    # a row at least every other batch, not only at the start and the end
    assert len(set(counts)) >= res.n_evaluated // (2 * s.batch_size)
    bounds = [float(r[4]) for r in rows if r[4] != "-inf"]
    assert len(bounds) > 5
    assert max(bounds) <= ref + 1e-6 * max(1.0, abs(ref))  # printed with 8 digits
    assert len(res.history) >= 2
    assert all(h.lower_bound <= ref + 1e-9 * max(1.0, abs(ref)) for h in res.history)


def test_a_long_searchs_history_stays_bounded_and_spread(monkeypatch):
    """The history keeps at most HISTORY_MAX samples: when it fills, every other sample goes
    and the step between samples doubles, so a long search's history still spans the run."""
    from sparsecert.bnb import search as search_mod

    monkeypatch.setattr(search_mod, "HISTORY_MAX", 8)
    engine = BranchAndBound(_problem(), 2, BnBSettings(verbose=0, batch_size=1,
                                                        batch_overlap=0, rel_gap=0.0))
    engine._reset()
    engine._history_step = 1.0  # a sample at every call of the clock below
    clock = iter(np.arange(0.0, 100.0, 1.0))
    monkeypatch.setattr(engine, "_elapsed", lambda: float(next(clock)))
    for _ in range(40):
        engine._log()
    times = [h.time for h in engine.history]
    assert len(times) < 8
    assert times == sorted(times) and times[0] == 0.0 and times[-1] >= 30.0
    assert engine._history_step >= 8.0
