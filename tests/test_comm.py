"""Communication layer: SimComm / MPIComm semantics, bit counting, worker RNG streams, and
SimComm vs MPIComm giving identical Safe-EF iterates (an ``mpiexec -n 3`` subprocess)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sparsecert.distributed.comm import (
    Communicator,
    Message,
    SimComm,
    decode_dense,
    decode_scalars,
    encode_dense,
    encode_scalars,
    mpi_available,
)

SRC = Path(__file__).resolve().parents[1] / "src"


def _mpiexec() -> str | None:
    here = Path(sys.executable).parent / "mpiexec"
    if here.exists():
        return str(here)
    return shutil.which("mpiexec")


def _need_mpi() -> str:
    ok, reason = mpi_available()
    if not ok:
        pytest.skip(f"MPI unavailable: {reason}")
    exe = _mpiexec()
    if exe is None:
        pytest.skip("MPI unavailable: no mpiexec next to sys.executable or on PATH")
    return exe


def _run_mpi(args: list[str], n: int = 3, timeout: float = 120) -> subprocess.CompletedProcess:
    exe = _need_mpi()
    env = dict(os.environ)
    env["PYTHONPATH"] = str(SRC) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("OMP_NUM_THREADS", "1")
    proc = subprocess.run([exe, "-n", str(n), sys.executable, *args], capture_output=True,
                          text=True, env=env, timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError(f"mpiexec failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


# ----------------------------------------------------------------------------- SimComm


def test_encode_helpers_roundtrip_and_bits():
    v = np.array([1.5, -2.25, 3.0])
    m = encode_dense(v)
    assert m.n_bits == 96 and len(m.payload) == 12
    np.testing.assert_array_equal(decode_dense(m), v)
    m64 = encode_scalars(0.1, -7.0)
    assert m64.n_bits == 128
    np.testing.assert_array_equal(decode_scalars(m64), [0.1, -7.0])


def test_message_validation():
    with pytest.raises(ValueError, match="inconsistent"):
        Message(b"ab", 17)
    with pytest.raises(TypeError):
        Message("ab", 8)  # type: ignore[arg-type]


def test_simcomm_allgather_broadcast_count_bits_per_worker():
    comm = SimComm(3, seed=0)
    assert isinstance(comm, Communicator)
    assert comm.local_workers == (0, 1, 2) and comm.is_root
    msgs = {i: Message(bytes(i + 1), 8 * (i + 1) - i) for i in range(3)}
    got = comm.allgather(msgs)
    assert [m.payload for m in got] == [bytes(1), bytes(2), bytes(3)]
    np.testing.assert_array_equal(comm.stats.up, [8, 15, 22])
    assert comm.stats.rounds == 1
    comm.allgather(msgs)
    np.testing.assert_array_equal(comm.stats.up, [16, 30, 44])
    assert comm.stats.rounds == 2
    out = comm.broadcast(Message(bytes(4), 29))
    assert out.n_bits == 29
    np.testing.assert_array_equal(comm.stats.down, [29, 29, 29])


def test_simcomm_rejects_bad_messages():
    comm = SimComm(2)
    with pytest.raises(ValueError, match="local worker"):
        comm.allgather({0: Message(b"a", 8)})
    with pytest.raises(TypeError, match="Message"):
        comm.allgather({0: Message(b"a", 8), 1: b"a"})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="n_workers"):
        SimComm(0)


def test_worker_rng_streams_match_seedsequence_spawn():
    comm = SimComm(4, seed=11)
    children = np.random.SeedSequence(11).spawn(4)
    for i in range(4):
        ref = np.random.default_rng(children[i]).random(5)
        np.testing.assert_array_equal(comm.worker_rng(i).random(5), ref)
    other = SimComm(4, seed=12)
    assert not np.array_equal(SimComm(4, seed=11).worker_rng(0).random(3),
                              other.worker_rng(0).random(3))


# ----------------------------------------------------------------------------- MPIComm

_SEMANTICS = r"""
import json, numpy as np
from sparsecert.distributed.comm import MPIComm, Message
comm = MPIComm(5, seed=3)
local = {i: Message(bytes([i]) * (i + 1), 8 * (i + 1) - i) for i in comm.local_workers}
got = comm.allgather(local)
msg = comm.broadcast(Message(b"xyz", 21) if comm.is_root else None)
draws = {i: comm.worker_rng(i).random(3).tolist() for i in comm.local_workers}
rec = dict(rank=comm.rank, size=comm.size, local=list(comm.local_workers),
           payloads=[m.payload.hex() for m in got], up=comm.stats.up.tolist(),
           down=comm.stats.down.tolist(), rounds=comm.stats.rounds, bcast=msg.payload.hex(),
           draws=draws)
allrec = comm._comm.gather(rec, root=0)
if comm.is_root:
    print("JSON" + json.dumps(allrec))
"""


@pytest.mark.mpi
def test_mpicomm_semantics_under_mpiexec():
    proc = _run_mpi(["-c", _SEMANTICS], n=3)
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("JSON")][0]
    recs = sorted(json.loads(line[4:]), key=lambda r: r["rank"])
    assert [r["local"] for r in recs] == [[0, 3], [1, 4], [2]]
    expect_payloads = [(bytes([i]) * (i + 1)).hex() for i in range(5)]
    children = np.random.SeedSequence(3).spawn(5)
    for r in recs:
        assert r["size"] == 3 and r["rounds"] == 1
        assert r["payloads"] == expect_payloads  # worker order on every rank
        assert r["up"] == [8 * (i + 1) - i for i in range(5)]
        assert r["down"] == [21] * 5 and r["bcast"] == b"xyz".hex()
        for i, draws in r["draws"].items():  # same streams as SimComm
            ref = np.random.default_rng(children[int(i)]).random(3)
            np.testing.assert_array_equal(draws, ref)


@pytest.mark.mpi
@pytest.mark.parametrize(
    "extra",
    [
        ["--problem", "P3", "--compressor", "randk", "--k", "3", "--gamma", "0.5"],
        ["--problem", "P3", "--method", "ef21_switching", "--compressor", "topk", "--k", "2"],
    ],
    ids=["safe_ef-randk", "ef21-topk"],
)
def test_simcomm_and_mpicomm_identical_iterates(tmp_path, extra):
    from sparsecert.distributed.safe_ef.mpi import main

    args = [*extra, "--rounds", "25", "--comm-seed", "5"]
    out_mpi, out_sim = tmp_path / "mpi.npz", tmp_path / "sim.npz"
    _run_mpi(["-m", "sparsecert.distributed.safe_ef.mpi", *args, "--out", str(out_mpi)], n=3)
    assert main([*args, "--sim", "--out", str(out_sim)]) == 0
    a, b = np.load(out_mpi), np.load(out_sim)
    assert int(a["n_procs"]) == 3 and int(b["n_procs"]) == 1
    assert a["iterates"].shape == (26, 50)
    assert not np.array_equal(a["iterates"][0], a["iterates"][-1])
    for key in ("iterates", "x", "productive", "objective", "bits_up", "bits_down",
                "stats_up", "stats_down", "stats_rounds"):
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)
