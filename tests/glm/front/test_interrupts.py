"""Ctrl-C (a real SIGINT) while a result is completed is deferred once; a second one interrupts.

The search itself stops on the first Ctrl-C and returns its best model (see
tests/glm/bnb/test_interrupt_anywhere.py for every bytecode of the engine); these tests send the
signal to the process, as a terminal does, at the points after the search: the certificate's
assembly, the command line's writing of the files, a path of several k.
"""

from __future__ import annotations

import dataclasses
import signal
import threading

import numpy as np
import pytest

from sparsecert import certify
from sparsecert.bnb.interrupts import DEFERRED_MESSAGE, deferred_interrupt
from sparsecert.certificate import verify_certificate
from sparsecert.cli.main import main
from sparsecert.datasets import make_synthetic
from sparsecert.estimators import KSparseLinearRegression
from sparsecert.path import KSparseCV, certify_path
from sparsecert.proof.bounds import SafeEvaluator

pytestmark = pytest.mark.skipif(
    signal.getsignal(signal.SIGINT) is not signal.default_int_handler,
    reason="SIGINT is not handled by Python's default handler in this test process")


@pytest.fixture(scope="module")
def data():
    X, y, _ = make_synthetic(40, 8, 3, seed=0)
    return X, y


def _ctrl_c() -> None:
    signal.raise_signal(signal.SIGINT)


def test_first_ctrl_c_is_deferred_and_the_second_interrupts(capsys):
    with deferred_interrupt():
        _ctrl_c()  # deferred: no exception
        assert DEFERRED_MESSAGE in capsys.readouterr().err
        with pytest.raises(KeyboardInterrupt):
            _ctrl_c()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    with pytest.raises(KeyboardInterrupt):  # outside the scope: Python's usual behaviour
        _ctrl_c()


def test_nested_scopes_share_one_deferral():
    with deferred_interrupt():
        _ctrl_c()
        with deferred_interrupt(), pytest.raises(KeyboardInterrupt):
            _ctrl_c()  # the outer scope's second Ctrl-C, not a new first one
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.mark.timeout(300)
def test_a_program_handler_and_other_threads_are_left_alone():
    seen = []
    previous = signal.signal(signal.SIGINT, lambda s, f: seen.append(s))
    try:
        with deferred_interrupt():
            assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
            _ctrl_c()
            _ctrl_c()
        assert seen == [signal.SIGINT, signal.SIGINT]  # the program's handler saw both
    finally:
        signal.signal(signal.SIGINT, previous)
    errors = []

    def in_thread():
        try:
            with deferred_interrupt():  # signal.signal would raise ValueError here
                pass
        except Exception as exc:  # pragma: no cover - the failure being tested
            errors.append(exc)

    t = threading.Thread(target=in_thread)
    t.start()
    t.join()
    assert errors == []
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def _ctrl_c_during_assembly(monkeypatch, presses: int) -> None:
    """Send ``presses`` SIGINTs from inside the certificate's rigorous evaluation of the
    incumbent (the first thing the assembly computes)."""
    original = SafeEvaluator.objective
    left = [presses]

    def objective(self, *args, **kwargs):
        while left[0] > 0:
            left[0] -= 1
            _ctrl_c()
        return original(self, *args, **kwargs)

    monkeypatch.setattr(SafeEvaluator, "objective", objective)


def test_ctrl_c_during_the_certificate_keeps_the_result(data, monkeypatch, capsys):
    X, y = data
    _ctrl_c_during_assembly(monkeypatch, 1)
    res = certify(X, y, 3, 1.0, verbose=0)
    assert DEFERRED_MESSAGE in capsys.readouterr().err
    assert res.status == "optimal"
    assert verify_certificate(res.certificate, X, y, loss="squared", k=3, lambda2=1.0).ok


def test_two_ctrl_c_during_the_certificate_abandon_it(data, monkeypatch):
    X, y = data
    _ctrl_c_during_assembly(monkeypatch, 2)
    with pytest.raises(KeyboardInterrupt):
        certify(X, y, 3, 1.0, verbose=0)


class _CtrlCOnTable:
    """A progress log that sends one SIGINT at the search's first table line (the search is
    then inside its loop: it stops and returns its best model)."""

    def __init__(self) -> None:
        self.sent = 0

    def __call__(self, line: str) -> None:
        if line.startswith(" ") and self.sent == 0:
            self.sent = 1
            _ctrl_c()


def test_ctrl_c_stops_the_search_then_a_second_is_deferred(data, monkeypatch, capsys):
    X, y = data
    _ctrl_c_during_assembly(monkeypatch, 1)  # the reflexive second press
    res = certify(X, y, 3, 1.0, log=_CtrlCOnTable())
    assert res.status == "interrupted"
    assert DEFERRED_MESSAGE in capsys.readouterr().err
    rep = verify_certificate(res.certificate, X, y, loss="squared", k=3, lambda2=1.0)
    assert rep.ok and res.lower_bound <= res.objective


def test_ctrl_c_stops_the_whole_path(data):
    X, y = data
    log = _CtrlCOnTable()
    path = certify_path(X, y, [1, 2, 3], 1.0, verbose=1, log=log)
    assert log.sent == 1
    assert path.ks.tolist() == [1] and path.statuses == ["interrupted"]
    assert verify_certificate(path[0].certificate, X, y, loss="squared", k=1, lambda2=1.0).ok


def test_ctrl_c_in_cross_validation_raises(data, monkeypatch):
    """Cross-validation does not score an interrupted model: Ctrl-C ends it."""
    X, y = data
    engine = certify_path.__globals__["BranchAndBound"]

    class Interrupted(engine):
        def __init__(self, problem, k, settings, **kwargs):
            settings = dataclasses.replace(settings, log=_CtrlCOnTable())
            super().__init__(problem, k, settings, **kwargs)

    monkeypatch.setitem(certify_path.__globals__, "BranchAndBound", Interrupted)
    cv = KSparseCV(KSparseLinearRegression(lambda2=1.0, verbose=1), ks=[1, 2], cv=2)
    with pytest.raises(KeyboardInterrupt):
        cv.fit(X, y)


def test_cli_ctrl_c_while_writing_keeps_the_files(data, tmp_path, monkeypatch, capsys):
    X, y = data
    src = tmp_path / "d.npz"
    np.savez(src, X=X, y=y)
    out = tmp_path / "c.json"
    from sparsecert.certificate import Certificate

    original = Certificate.save

    def save(self, *args, **kwargs):
        _ctrl_c()
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Certificate, "save", save)
    code = main(["certify", "--data", str(src), "--k", "3", "--lambda2", "1", "--out", str(out),
                 "--quiet"])
    assert code == 0
    assert DEFERRED_MESSAGE in capsys.readouterr().err
    assert out.exists() and out.with_suffix(".proof").exists()


def test_cli_ctrl_c_while_checking_names_the_written_files(data, tmp_path, monkeypatch, capsys):
    X, y = data
    src = tmp_path / "d.npz"
    np.savez(src, X=X, y=y)
    out = tmp_path / "c.json"

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("sparsecert.certificate.verify.verify_certificate", interrupted)
    code = main(["certify", "--data", str(src), "--k", "3", "--lambda2", "1", "--out", str(out),
                 "--quiet"])
    err = capsys.readouterr().err
    assert code == 130 and len(err.strip().splitlines()) == 1
    assert f"sparsecert show {out}" in err
    assert out.exists() and out.with_suffix(".proof").exists()
    monkeypatch.undo()
    assert main(["verify", str(out), "--data", str(src), "--k", "3", "--lambda2", "1"]) == 0
