"""A user's run of Safe-EF: the per-record log, checkpoint and resume, no constraint."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from sparsecert.distributed.comm import SimComm
from sparsecert.distributed.compress import TopK
from sparsecert.distributed.options import RunOptions
from sparsecert.distributed.safe_ef import safe_ef, safe_ef_stochastic
from sparsecert.distributed.safe_ef.problems import neyman_pearson, worst_case


def _p3():
    return worst_case(d=12, n_workers=3, seed=2)


def _run(p, n_rounds, **opts):
    return safe_ef(p.worker, p.x0, TopK(p.dim, 3, value_dtype="float16"), 0.4, n_rounds,
                   downlink=TopK(p.dim, 4, value_dtype="float16"),
                   options=RunOptions(comm=SimComm(p.n_workers, seed=1), **opts))


def test_the_log_holds_one_row_per_record_point(tmp_path):
    p = _p3()
    path = tmp_path / "log.csv"
    res = _run(p, 23, record_every=5, log=path)
    rows = list(csv.DictReader(path.open()))
    assert list(rows[0]) == ["rounds", "seconds", "bits_up", "bits_down", "bits_total",
                             "objective", "violation", "objective_last", "violation_last"]
    assert [int(float(r["rounds"])) for r in rows] == [0, 5, 10, 15, 20, 23]
    for key in ("bits_total", "objective", "seconds"):
        assert np.array_equal([float(r[key]) for r in rows], getattr(res, key)), key
    assert np.all(np.diff(res.seconds) >= 0) and res.seconds[-1] > 0
    with pytest.raises(FileExistsError, match="exists"):
        _run(p, 5, log=path)  # nothing of the user's is overwritten
    seen = []
    _run(p, 4, record_every=2, log=seen.append)
    assert [r["rounds"] for r in seen] == [0, 2, 4]


class _Interrupt(Exception):
    pass


def _interrupt_at(t_stop):
    def cb(info):
        if info.t + 1 == t_stop:
            raise _Interrupt
    return cb


@pytest.mark.parametrize("method", ["safe_ef", "safe_ef_stochastic"])
def test_a_resumed_run_is_the_uninterrupted_run(tmp_path, method):
    """Interrupted after round 27 (checkpoints every 10 rounds), resumed from round 20: the
    same iterates, output, bits and history as the run that never stopped."""
    p = neyman_pearson(seed=0)
    up, down = TopK(p.dim, 2, value_dtype="float16"), TopK(p.dim, 2, value_dtype="float16")

    def run(**opts):
        o = RunOptions(comm=SimComm(p.n_workers, seed=3), record_every=5, store_iterates=True,
                       **opts)
        if method == "safe_ef":
            return safe_ef(p.worker, p.x0, up, 0.07, 40, downlink=down, options=o)
        return safe_ef_stochastic(p.worker, p.x0, up, 0.07, 40, batch_size=4, downlink=down,
                                  options=o)

    full = run()
    ck = tmp_path / "run.ckpt"
    with pytest.raises(_Interrupt):
        run(checkpoint=ck, checkpoint_every=10, callback=_interrupt_at(27),
            log=tmp_path / "log.csv")
    assert (tmp_path / "run.ckpt.0.npz").exists()
    again = run(checkpoint=ck, checkpoint_every=10, resume=ck, log=tmp_path / "log.csv")
    for key in ("x", "x_last", "iterates", "productive", "rounds", "objective", "violation",
                "bits_up", "bits_down", "bits_total"):
        assert np.array_equal(getattr(full, key), getattr(again, key)), key
    assert np.array_equal(full.traffic.up_sent, again.traffic.up_sent)
    rounds = [int(float(r["rounds"])) for r in csv.DictReader((tmp_path / "log.csv").open())]
    # the interrupted run logged up to 25; the resumed one from 25 (after the checkpoint at 20)
    assert rounds == [0, 5, 10, 15, 20, 25, 25, 30, 35, 40]


def test_resume_refuses_another_configuration(tmp_path):
    p = _p3()
    ck = tmp_path / "c"
    _run(p, 10, checkpoint=ck, checkpoint_every=5)
    with pytest.raises(ValueError, match="params"):
        safe_ef(p.worker, p.x0, TopK(p.dim, 2), 0.4, 20,
                options=RunOptions(comm=SimComm(p.n_workers, seed=1), resume=ck))
    with pytest.raises(ValueError, match="round 10"):
        _run(p, 10, resume=ck)
    from sparsecert.distributed.safe_ef import switching_subgradient

    with pytest.raises(ValueError, match="checkpoint"):
        switching_subgradient(p.workers, p.x0, 0.1, 5, options=RunOptions(checkpoint=ck))


class _Objective:
    """A worker with an objective only (no constraint part)."""

    def __init__(self, i):
        self.a = np.linspace(-1, 1, 6) * (i + 1)

    def f(self, x):
        return float(np.abs(x - self.a).sum())

    def f_subgrad(self, x):
        return np.sign(x - self.a)


def test_without_a_constraint_nothing_about_one_is_sent():
    res = safe_ef(_Objective, np.zeros(6), TopK(6, 2), 0.05, 50, constraint="none",
                  options=RunOptions(comm=SimComm(3)))
    assert res.n_productive == 50 and np.all(res.violation == 0)
    per_round = TopK(6, 2).message_bits
    assert res.bits_up[-1] == 50 * per_round  # the vector only: no constraint values
    assert res.bits_down[-1] == 50 * 6 * 64  # the exact downlink, no decision bit
    assert res.objective[-1] < res.objective[0]
    with pytest.raises(TypeError, match="f_subgrad"):
        safe_ef([object()] * 2, np.zeros(6), TopK(6, 2), 0.1, 2, constraint="none")
