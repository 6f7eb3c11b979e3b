"""Communication layer: SimComm / MPIComm semantics, bit counting, worker RNG streams, and
SimComm vs MPIComm giving identical Safe-EF iterates (an ``mpiexec -n 3`` subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sparsecert.distributed.comm import (
    Communicator,
    Message,
    SimComm,
    build_local,
    decode_dense,
    decode_flag,
    decode_scalars,
    encode_dense,
    encode_flag,
    encode_scalars,
)

SRC = Path(__file__).resolve().parents[2] / "src"


def _run_mpi(exe: str, args: list[str], n: int = 3,
             timeout: float = 120) -> subprocess.CompletedProcess:
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


def test_an_allgather_of_agreed_size_refuses_another_size():
    comm = SimComm(2, seed=0)
    msgs = {0: Message(bytes(2), 12), 1: Message(bytes(2), 12)}
    assert [m.n_bits for m in comm.allgather(msgs, n_bits=12)] == [12, 12]
    with pytest.raises(ValueError, match="agreed on 13 bits"):
        comm.allgather(msgs, n_bits=13)
    with pytest.raises(ValueError, match="agreed on 12 bits in 3 bytes"):
        comm.allgather(msgs, n_bits=12, n_bytes=3)


def test_simcomm_allgather_broadcast_count_bits_per_worker():
    comm = SimComm(3, seed=0)
    assert isinstance(comm, Communicator)
    assert comm.local_workers == (0, 1, 2) and comm.is_root
    assert (comm.rank, comm.size) == (0, 1)
    msgs = {i: Message(bytes(i + 1), 8 * (i + 1) - i) for i in range(3)}
    got = comm.allgather(msgs)
    assert [m.payload for m in got] == [bytes(1), bytes(2), bytes(3)]
    t = comm.traffic
    np.testing.assert_array_equal(t.up_sent, [8, 15, 22])
    # each worker receives the two other messages
    np.testing.assert_array_equal(t.up_received, [15 + 22, 8 + 22, 8 + 15])
    assert t.rounds == 1 and t.server_received == 0
    comm.allgather(msgs)
    np.testing.assert_array_equal(comm.stats.up, [16, 30, 44])  # the old names still work
    assert comm.stats.rounds == 2
    out = comm.broadcast(Message(bytes(4), 29))
    assert out.n_bits == 29
    np.testing.assert_array_equal(t.down_received, [29, 29, 29])
    assert t.server_sent == 3 * 29
    assert t.process_sent == 0 and t.process_received == 0  # one process: nothing on the wire


def test_simcomm_gather_is_uplink_to_the_server():
    comm = SimComm(4, seed=0)
    msgs = {i: Message(bytes(2), 9 + i) for i in range(4)}
    got = comm.gather(msgs)
    assert [m.n_bits for m in got] == [9, 10, 11, 12]
    t = comm.traffic
    np.testing.assert_array_equal(t.up_sent, [9, 10, 11, 12])
    np.testing.assert_array_equal(t.up_received, 0)
    assert t.server_received == 42 and t.rounds == 1
    comm.broadcast(encode_flag(True))
    pw = t.per_worker()
    assert pw == {"up": 10.5, "down": 1.0, "peer": 0.0, "sent": 10.5, "received": 1.0,
                  "total": 11.5}
    assert t.total == 42 + 4


def test_traffic_snapshots_subtract():
    comm = SimComm(2)
    comm.gather({0: Message(b"a", 8), 1: Message(b"b", 5)})
    snap = comm.traffic.copy()
    comm.gather({0: Message(b"a", 3), 1: Message(b"b", 4)})
    comm.broadcast(Message(b"xy", 16))
    delta = comm.traffic - snap
    np.testing.assert_array_equal(delta.up_sent, [3, 4])
    np.testing.assert_array_equal(delta.down_received, [16, 16])
    assert delta.rounds == 1 and delta.server_received == 7 and delta.server_sent == 32
    np.testing.assert_array_equal(snap.up_sent, [8, 5])  # the snapshot is independent
    d = delta.as_dict()
    assert d["per_worker"]["total"] == 3.5 + 16 and d["total"] == 7 + 32
    comm.reset_traffic()
    assert comm.traffic.total == 0


def test_flag_messages_are_one_bit():
    for flag in (True, False):
        m = encode_flag(flag)
        assert m.n_bits == 1 and decode_flag(m) is flag
    with pytest.raises(ValueError, match="1 bit"):
        decode_flag(Message(b"\x80", 8))


def test_simcomm_allreduce_sums_in_worker_order():
    comm = SimComm(3)
    vals = {i: np.array([1.0, 2.0 * i]) for i in range(3)}
    np.testing.assert_array_equal(comm.allreduce(vals), [3.0, 6.0])
    # the sum is taken in worker order: 1e16 + 1 - 1e16 differs from 1e16 - 1e16 + 1
    big = SimComm(3).allreduce({0: 1e16, 1: 1.0, 2: -1e16})
    assert float(big) == (1e16 + 1.0) - 1e16
    assert comm.traffic.total == 0  # monitors are not metered
    with pytest.raises(ValueError, match="one shape"):
        comm.allreduce({0: [1.0], 1: [1.0, 2.0], 2: [0.0]})
    with pytest.raises(ValueError, match="local worker"):
        comm.allreduce({0: 1.0})


def test_build_local_from_sequence_or_factory():
    comm = SimComm(3)
    assert build_local(comm, ["a", "b", "c"]) == {0: "a", 1: "b", 2: "c"}
    calls = []

    def factory(i):
        calls.append(i)
        return f"w{i}"

    assert build_local(comm, factory) == {0: "w0", 1: "w1", 2: "w2"}
    assert calls == [0, 1, 2]
    with pytest.raises(ValueError, match="3 workers but 2"):
        build_local(comm, ["a", "b"])
    with pytest.raises(TypeError, match="factory"):
        build_local(comm, 3)  # type: ignore[arg-type]


def test_simcomm_rejects_bad_messages():
    comm = SimComm(2)
    with pytest.raises(ValueError, match="local worker"):
        comm.allgather({0: Message(b"a", 8)})
    with pytest.raises(TypeError, match="Message"):
        comm.allgather({0: Message(b"a", 8), 1: b"a"})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="local worker"):
        comm.gather({1: Message(b"a", 8)})
    with pytest.raises(ValueError, match="needs the message"):
        comm.broadcast(None)
    with pytest.raises(ValueError, match="n_workers"):
        SimComm(0)
    with pytest.raises(ValueError, match="no worker"):
        comm.worker_rng(2)


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
import json, sys, numpy as np
from mpi4py import MPI
from sparsecert.distributed.comm import MPIComm, Message, SimComm


class BuffersOnly:
    # Only the buffer collectives (upper-case mpi4py methods): a pickled exchange raises.
    ALLOWED = {"Gatherv", "Allgatherv", "Allgather", "Bcast", "Barrier", "Get_rank", "Get_size"}

    def __init__(self, comm):
        self._c = comm

    def __getattr__(self, name):
        if name not in self.ALLOWED:
            raise AttributeError(f"{name} is not a buffer collective")
        return getattr(self._c, name)


n = int(sys.argv[1])


def script(comm):
    local = {i: Message(bytes([i]) * (i + 1), 8 * (i + 1) - i) for i in comm.local_workers}
    got = comm.allgather(local)
    up = comm.gather({i: Message(bytes([i, 7]), 9 + i) for i in comm.local_workers})
    msg = comm.broadcast(Message(b"xyz", 21) if comm.is_root else None)
    big = [1e16, 1.0, -1e16, 3.0, 0.5]
    red = comm.allreduce({i: [big[i], float(i)] for i in comm.local_workers})
    draws = {i: comm.worker_rng(i).random(3).tolist() for i in comm.local_workers}
    return dict(local=list(comm.local_workers), payloads=[m.payload.hex() for m in got],
                gathered=None if up is None else [[m.payload.hex(), m.n_bits] for m in up],
                bcast=[msg.payload.hex(), msg.n_bits], red=red.tolist(), draws=draws,
                traffic=comm.traffic.as_dict())


comm = MPIComm(n, seed=3, comm=BuffersOnly(MPI.COMM_WORLD))
rec = script(comm)
rec.update(rank=comm.rank, size=comm.size, procs=comm.process_traffic().tolist())
allrec = MPI.COMM_WORLD.gather(rec, root=0)  # the test's own reporting, not the communicator
if comm.is_root:
    print("JSON" + json.dumps({"mpi": allrec, "sim": script(SimComm(n, seed=3))}))
"""


@pytest.mark.timeout(300)
@pytest.mark.mpi
@pytest.mark.parametrize("n_workers", [5, 2], ids=["5-workers", "2-workers-one-idle-rank"])
def test_mpicomm_semantics_under_mpiexec(n_workers, mpiexec):
    proc = _run_mpi(mpiexec, ["-c", _SEMANTICS, str(n_workers)], n=3)
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("JSON")][0]
    both = json.loads(line[4:])
    recs, sim = sorted(both["mpi"], key=lambda r: r["rank"]), both["sim"]
    expect_local = [[i for i in range(n_workers) if i % 3 == r] for r in range(3)]
    assert [r["local"] for r in recs] == expect_local
    expect_payloads = [(bytes([i]) * (i + 1)).hex() for i in range(n_workers)]
    children = np.random.SeedSequence(3).spawn(n_workers)
    for r in recs:
        assert r["size"] == 3
        assert r["payloads"] == expect_payloads  # worker order on every rank
        assert r["bcast"] == [b"xyz".hex(), 21]
        assert r["red"] == sim["red"]  # same summation order as SimComm, bit for bit
        # every process counts the same logical traffic as SimComm
        for key in ("up_sent", "up_received", "down_received", "server_received",
                    "server_sent", "rounds"):
            assert r["traffic"][key] == sim["traffic"][key], key
        for i, draws in r["draws"].items():  # same streams as SimComm
            ref = np.random.default_rng(children[int(i)]).random(3)
            np.testing.assert_array_equal(draws, ref)
    assert recs[0]["gathered"] == sim["gathered"]
    assert recs[0]["gathered"] == [[bytes([i, 7]).hex(), 9 + i] for i in range(n_workers)]
    assert recs[1]["gathered"] is None and recs[2]["gathered"] is None
    t = sim["traffic"]
    assert t["up_sent"] == [8 * (i + 1) - i + 9 + i for i in range(n_workers)]
    assert t["down_received"] == [21] * n_workers and t["server_sent"] == 21 * n_workers
    # process-to-process bits: what leaves a rank is what the others receive
    procs = np.array(recs[0]["procs"])
    assert all(r["procs"] == recs[0]["procs"] for r in recs)
    assert procs[:, 0].sum() == procs[:, 1].sum() > 0
    ag = [8 * (i + 1) - i for i in range(n_workers)]
    for r in range(3):
        mine = [i for i in range(n_workers) if i % 3 == r]
        sent_ag = 2 * sum(ag[i] for i in mine)
        recv_ag = sum(ag) - sum(ag[i] for i in mine)
        up = sum(9 + i for i in mine)
        if r == 0:
            expect = [sent_ag + 2 * 21, recv_ag + sum(9 + i for i in range(n_workers)) - up]
        else:
            expect = [sent_ag + up, recv_ag + 21]
        assert procs[r].tolist() == expect, r


@pytest.mark.mpi
@pytest.mark.parametrize(
    "extra",
    [
        ["--problem", "P3", "--compressor", "randk", "--k", "3", "--gamma", "0.5"],
        ["--problem", "P3", "--method", "ef21_switching", "--compressor", "topk", "--k", "2"],
        # 1-bit levels of a top-5 both ways: messages whose parts are padded to bytes
        ["--problem", "P3", "--compressor", "levels", "--k", "5", "--level-bits", "1",
         "--downlink-k", "5", "--downlink-level-bits", "1", "--index-code", "enumerative",
         "--value-dtype", "float16"],
    ],
    ids=["safe_ef-randk", "ef21-topk", "safe_ef-levels"],
)
@pytest.mark.timeout(300)
def test_simcomm_and_mpicomm_identical_iterates(tmp_path, extra, mpiexec):
    from sparsecert.distributed.safe_ef.mpi import main

    args = [*extra, "--rounds", "25", "--comm-seed", "5"]
    out_mpi, out_sim = tmp_path / "mpi.npz", tmp_path / "sim.npz"
    _run_mpi(mpiexec, ["-m", "sparsecert.distributed.safe_ef.mpi", *args, "--out", str(out_mpi)],
             n=3)
    assert main([*args, "--sim", "--out", str(out_sim)]) == 0
    a, b = np.load(out_mpi), np.load(out_sim)
    assert int(a["n_procs"]) == 3 and int(b["n_procs"]) == 1
    assert a["iterates"].shape == (26, 50)
    assert not np.array_equal(a["iterates"][0], a["iterates"][-1])
    for key in ("iterates", "x", "productive", "objective", "bits_up", "bits_down",
                "stats_up", "stats_down", "stats_rounds"):
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)


@pytest.mark.timeout(300)
def test_ci_flag_turns_mpi_skips_into_failures(tmp_path):
    """``SPARSECERT_REQUIRE_MPI=1`` (set by .ci/run) fails an MPI test that would skip."""
    conftest = Path(__file__).parents[1] / "conftest.py"
    (tmp_path / "conftest.py").write_text(conftest.read_text())
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    mpi: an MPI test\n")
    (tmp_path / "test_x.py").write_text(
        "import pytest\n\n@pytest.mark.mpi\ndef test_a():\n    pytest.skip('no mpiexec')\n\n"
        "def test_b():\n    pytest.skip('unrelated')\n"
    )

    def run(flag):
        env = {k: v for k, v in os.environ.items() if k != "SPARSECERT_REQUIRE_MPI"}
        if flag:
            env["SPARSECERT_REQUIRE_MPI"] = "1"
        return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               str(tmp_path)], capture_output=True, text=True, env=env,
                              cwd=tmp_path, timeout=120)

    quiet, loud = run(False), run(True)
    assert quiet.returncode == 0 and "2 skipped" in quiet.stdout
    assert loud.returncode != 0
    assert "1 failed, 1 skipped" in loud.stdout and "SPARSECERT_REQUIRE_MPI" in loud.stdout


_SHARDS = r"""
import json, sys
from pathlib import Path
import numpy as np

folder = Path(sys.argv[1])
opened = []
sys.addaudithook(lambda ev, args: opened.append(str(args[0])) if ev == "open" else None)

from sparsecert.distributed.comm import MPIComm, SimComm
from sparsecert.distributed.compress import TopK
from sparsecert.distributed.safe_ef import RunOptions, safe_ef
from sparsecert.distributed.safe_ef.fairness import ParityLogisticWorker, parity_constraint


def run(comm):
    def factory(i):
        if i not in comm.local_workers:
            raise AssertionError(f"rank {comm.rank} asked to build worker {i}")
        with np.load(folder / f"shard_{i}.npz") as s:
            return ParityLogisticWorker(s["a"], s["y"], s["z"], 1 / len(s["y"]), 1e-2)

    return safe_ef(factory, np.zeros(4), TopK(4, 1), 0.03, 60, 0.0, downlink=TopK(4, 2),
                   constraint=parity_constraint(0.05),
                   options=RunOptions(comm=comm, store_iterates=True, record_every=10))


comm = SimComm(5, seed=1) if sys.argv[2] == "sim" else MPIComm(5, seed=1)
res = run(comm)
mine = sorted(int(p.split("shard_")[1].split(".")[0]) for p in opened if "shard_" in p)
(folder / f"opened_{sys.argv[2]}_{comm.rank}.json").write_text(json.dumps(mine))
if comm.is_root:
    np.savez(folder / f"{sys.argv[2]}.npz", iterates=res.iterates, objective=res.objective,
             violation=res.violation, up=res.traffic.up_sent, down=res.traffic.down_received,
             productive=res.productive)
"""


@pytest.mark.timeout(300)
@pytest.mark.mpi
def test_each_rank_reads_only_its_shards_and_matches_simcomm(tmp_path, mpiexec):
    """Data stay where they live: worker i's shard is a file only its rank opens (checked
    with an audit hook on every file open), the monitor is a reduction of local sums, and the
    iterates equal SimComm's bit for bit."""
    from sparsecert.distributed.safe_ef.fairness import fair_shard

    for i in range(5):
        a, y, z = fair_shard(i, 5, seed=4, n_per_worker=30, p=3)
        np.savez(tmp_path / f"shard_{i}.npz", a=a, y=y, z=z)
    _run_mpi(mpiexec, ["-c", _SHARDS, str(tmp_path), "mpi"], n=3)
    env = dict(os.environ, PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    subprocess.run([sys.executable, "-c", _SHARDS, str(tmp_path), "sim"], check=True,
                   env=env, timeout=120)
    for r in range(3):
        opened = json.loads((tmp_path / f"opened_mpi_{r}.json").read_text())
        assert opened == [i for i in range(5) if i % 3 == r], r
    assert json.loads((tmp_path / "opened_sim_0.json").read_text()) == [0, 1, 2, 3, 4]
    a, b = np.load(tmp_path / "mpi.npz"), np.load(tmp_path / "sim.npz")
    assert 0 < a["productive"].sum() < a["productive"].size
    for key in ("iterates", "objective", "violation", "up", "down", "productive"):
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)


@pytest.mark.timeout(300)
@pytest.mark.mpi
def test_fair_federated_example_under_mpiexec_matches_one_process(tmp_path, mpiexec):
    """The Safe-EF example prints the same table under mpiexec -n 3 as in one process."""
    script = str(Path(__file__).resolve().parents[2] / "examples" / "fair_federated_logistic.py")
    mpi = _run_mpi(mpiexec, [script, "--quick", "--mpi", "--out", str(tmp_path / "mpi")], n=3,
                   timeout=300)
    env = dict(os.environ, PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    sim = subprocess.run([sys.executable, script, "--quick", "--out", str(tmp_path / "sim")],
                         capture_output=True, text=True, env=env, timeout=300, check=True)

    def table(out):
        return [ln for ln in out.splitlines() if ln.startswith(("Safe-EF", "uncompressed"))]

    assert len(table(sim.stdout)) == 3
    assert table(mpi.stdout) == table(sim.stdout)
    assert "3 MPI processes" in mpi.stdout
    assert (tmp_path / "mpi" / "fair_federated_logistic.png").exists()


def test_gather_of_agreed_size_checks_every_message():
    comm = SimComm(3)
    msgs = {i: Message(bytes([i, 1, 2]), 20) for i in range(3)}
    got = comm.gather(msgs, n_bits=20)
    assert [m.payload for m in got] == [bytes([i, 1, 2]) for i in range(3)]
    np.testing.assert_array_equal(comm.traffic.up_sent, [20, 20, 20])
    with pytest.raises(ValueError, match="worker 1's message has 21 bits"):
        comm.gather({0: Message(b"abc", 20), 1: Message(b"abc", 21), 2: Message(b"abc", 20)},
                    n_bits=20)
    with pytest.raises(ValueError, match="in 4 bytes"):  # the bits agree, the bytes do not
        comm.gather({i: Message(b"abcd", 20) for i in range(3)}, n_bits=20)


_FIXED_GATHER = r"""
import json, sys
from mpi4py import MPI
from sparsecert.distributed.comm import MPIComm, Message, SimComm


class Counting:
    def __init__(self, comm):
        self._c, self.calls = comm, {}

    def __getattr__(self, name):
        attr = getattr(self._c, name)
        if not callable(attr) or name.startswith("Get_"):
            return attr

        def call(*a, **k):
            self.calls[name] = self.calls.get(name, 0) + 1
            return attr(*a, **k)
        return call


def script(comm):
    got = comm.gather({i: Message(bytes([i, 9, 4]), 17 + 3) for i in comm.local_workers},
                      n_bits=20)
    comm.broadcast(Message(b"z", 3) if comm.is_root else None)
    return dict(got=None if got is None else [[m.payload.hex(), m.n_bits] for m in got],
                traffic=comm.traffic.as_dict())


n = int(sys.argv[1])
probe = Counting(MPI.COMM_WORLD)
rec = script(MPIComm(n, seed=0, comm=probe))
rec["calls"] = probe.calls
allrec = MPI.COMM_WORLD.gather(rec, root=0)
if MPI.COMM_WORLD.Get_rank() == 0:
    print("JSON" + json.dumps({"mpi": allrec, "sim": script(SimComm(n, seed=0))}))
"""


@pytest.mark.timeout(300)
@pytest.mark.mpi
@pytest.mark.parametrize("n_workers", [5, 2], ids=["5-workers", "2-workers-one-idle-rank"])
def test_mpicomm_gather_of_agreed_size_is_one_collective(n_workers, mpiexec):
    """With the size agreed, a gather is one ``Gatherv`` of the bytes (no lengths travel),
    the root gets SimComm's messages in worker order and every process counts its traffic."""
    proc = _run_mpi(mpiexec, ["-c", _FIXED_GATHER, str(n_workers)], n=3)
    both = json.loads([ln for ln in proc.stdout.splitlines() if ln.startswith("JSON")][0][4:])
    recs, sim = both["mpi"], both["sim"]
    assert recs[0]["got"] == sim["got"] == [[bytes([i, 9, 4]).hex(), 20]
                                            for i in range(n_workers)]
    for r in recs:
        assert r["calls"] == {"Gatherv": 1, "Bcast": 1}
        for key in ("up_sent", "server_received", "down_received", "rounds"):
            assert r["traffic"][key] == sim["traffic"][key], key


def test_gather_of_agreed_size_takes_padded_bytes():
    comm = SimComm(2)
    got = comm.gather({i: Message(bytes([i, 0, 0]), 12) for i in range(2)}, n_bits=12,
                      n_bytes=3)
    assert [m.n_bits for m in got] == [12, 12]
    with pytest.raises(ValueError, match="in 3 bytes"):
        comm.gather({i: Message(bytes([i, 0, 0]), 12) for i in range(2)}, n_bits=12)
    with pytest.raises(ValueError, match="do not fit"):
        comm.gather({i: Message(b"", 0) for i in range(2)}, n_bits=12, n_bytes=1)
