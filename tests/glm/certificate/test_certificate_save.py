"""Saving and loading certificates: nothing of the user's is overwritten, the proof file is
found by the JSON's own name, an interrupted save leaves no half-written certificate."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from _certgen import enumeration_certificate, make_data
from _cli import one_error_line

from sparsecert.certificate import Certificate, sidecar_path, verify_certificate
from sparsecert.cli.main import main


@pytest.fixture(scope="module")
def cert_data():
    X, y = make_data("squared", n=20, p=5, seed=0)
    cert, _ = enumeration_certificate(X, y, "squared", 2, 0.5)
    return X, y, cert


def test_proof_file_is_named_after_the_json():
    assert sidecar_path("a/b/cert.json") == os.path.join("a", "b", "cert.proof")
    assert sidecar_path("C.JSON") == "C.proof"


def test_path_must_end_in_json(tmp_path, cert_data):
    _, _, cert = cert_data
    for name in ("cert.proof", "cert", "cert.txt", ".json"):
        with pytest.raises(ValueError, match="must end in .json"):
            cert.save(tmp_path / name)
    assert list(tmp_path.iterdir()) == []


def test_foreign_files_are_never_replaced(tmp_path, cert_data):
    X, y, cert = cert_data
    (tmp_path / "d.proof").write_bytes(b"the user's own file, named like a proof file")
    before = (tmp_path / "d.proof").read_bytes()
    with pytest.raises(FileExistsError, match="d.proof exists and is not"):
        cert.save(tmp_path / "d.json")
    assert (tmp_path / "d.proof").read_bytes() == before and not (tmp_path / "d.json").exists()
    (tmp_path / "notes.json").write_text('{"my": "notes"}')  # a JSON that is not ours
    with pytest.raises(FileExistsError, match="notes.json exists and is not"):
        cert.save(tmp_path / "notes.json")
    assert json.loads((tmp_path / "notes.json").read_text()) == {"my": "notes"}
    assert not (tmp_path / "notes.proof").exists()
    cert.save(tmp_path / "d.json", overwrite=True)  # the user asked for it
    assert verify_certificate(tmp_path / "d.json", X, y).ok
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.json", "d.proof", "notes.json"]


def test_a_missing_folder_is_named_before_anything_is_written(tmp_path, cert_data):
    _, _, cert = cert_data
    with pytest.raises(FileNotFoundError, match="folder .*nodir does not exist"):
        cert.save(tmp_path / "nodir" / "c.json")
    assert list(tmp_path.iterdir()) == []


def test_only_a_certificate_of_the_same_problem_is_replaced(tmp_path, cert_data):
    X, y, cert = cert_data
    cert.save(tmp_path / "c.json")
    cert.save(tmp_path / "c.json")  # re-running the same job works
    before = (tmp_path / "c.json").read_bytes(), (tmp_path / "c.proof").read_bytes()
    for other_k, other_y in ((3, y), (2, y + 1.0)):  # another k; other data
        other, _ = enumeration_certificate(X, other_y, "squared", other_k, 0.5)
        with pytest.raises(FileExistsError, match="certificate of another problem"):
            other.save(tmp_path / "c.json")
        assert ((tmp_path / "c.json").read_bytes(), (tmp_path / "c.proof").read_bytes()) == before
    other.save(tmp_path / "c.json", overwrite=True)  # the user asked for it
    assert verify_certificate(tmp_path / "c.json", X, y + 1.0).ok


def test_renamed_pair_stays_valid_and_loads(tmp_path, cert_data):
    X, y, cert = cert_data
    cert.save(tmp_path / "c.json")
    os.rename(tmp_path / "c.json", tmp_path / "renamed.json")
    os.rename(tmp_path / "c.proof", tmp_path / "renamed.proof")
    assert verify_certificate(tmp_path / "renamed.json", X, y).ok
    loaded = Certificate.load(tmp_path / "renamed.json")
    assert loaded.to_dict() == cert.to_dict()


def test_interrupted_save_leaves_no_half_written_certificate(tmp_path, cert_data, monkeypatch):
    _, _, cert = cert_data
    cert.save(tmp_path / "c.json")
    old_json = (tmp_path / "c.json").read_bytes()
    real = os.replace
    calls = []

    def flaky(src, dst):
        calls.append(dst)
        if str(dst).endswith(".json"):
            raise KeyboardInterrupt  # interrupted between the two renames
        return real(src, dst)

    monkeypatch.setattr(os, "replace", flaky)
    other = Certificate(dict(cert.data, tree=dict(cert.data["tree"])), cert.proof_bytes())
    with pytest.raises(KeyboardInterrupt):
        other.save(tmp_path / "c.json")
    monkeypatch.setattr(os, "replace", real)
    assert (tmp_path / "c.json").read_bytes() == old_json  # the old JSON, intact
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.json", "c.proof"]  # no temp files


@pytest.mark.parametrize("version", [1, 2])
def test_older_versions_are_refused_with_one_line(tmp_path, cert_data, version):
    X, y, cert = cert_data
    cert.save(tmp_path / "c.json")
    doc = json.loads((tmp_path / "c.json").read_text())
    doc["format_version"] = version
    (tmp_path / "c.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=f"format version {version} is not supported"):
        Certificate.load(tmp_path / "c.json")
    rep = verify_certificate(tmp_path / "c.json", X, y)
    assert rep.exit_code == 2 and "\n" not in rep.error_line
    assert f"format version {version} is not supported" in rep.error_line


def test_a_repeated_json_key_is_refused_as_by_the_verifier(tmp_path, cert_data):
    """With a repeated key, readers keeping the first or the last value see two different
    certificates: the loader refuses it, as the standalone verifier does."""
    X, y, cert = cert_data
    cert.save(tmp_path / "c.json")
    text = (tmp_path / "c.json").read_text()
    lb = json.dumps(cert.bounds["lower_bound"])
    head, sep, tail = text.partition('"bounds": {')
    assert sep
    (tmp_path / "c.json").write_text(f'{head}{sep}"lower_bound": {lb} + 1, {tail}'
                                     .replace(f"{lb} + 1", repr(cert.upper_bound)))
    with pytest.raises(ValueError, match="duplicate key 'lower_bound'"):
        Certificate.load(tmp_path / "c.json")
    assert verify_certificate(tmp_path / "c.json", X, y).exit_code == 2


def test_cli_certify_never_overwrites_the_data(tmp_path, capsys, monkeypatch):
    """`sparsecert certify --out d.json` must not touch a user's d.proof; with --force the
    user chooses to replace it; --out d.npz is refused."""
    X, y = make_data("squared", n=25, p=5, seed=3)
    np.savez(tmp_path / "d.npz", X=X, y=y)
    (tmp_path / "d.proof").write_bytes(b"not ours")
    data = (tmp_path / "d.npz").read_bytes()
    monkeypatch.chdir(tmp_path)
    args = ["certify", "--data", "d.npz", "--k", "2", "--lambda2", "0.5", "--quiet"]
    assert main(args + ["--out", "d.json"]) == 2
    assert "d.proof exists and is not" in one_error_line(capsys)
    assert (tmp_path / "d.proof").read_bytes() == b"not ours"
    assert not (tmp_path / "d.json").exists()
    assert main(args + ["--out", "d.npz"]) == 2
    assert "must end in .json" in one_error_line(capsys)
    assert (tmp_path / "d.npz").read_bytes() == data
    assert main(args + ["--out", "cert.json"]) == 0
    assert main(args + ["--out", "cert.json"]) == 0  # re-running replaces its own pair
    capsys.readouterr()
    cert = (tmp_path / "cert.json").read_bytes()
    assert main(args[:4] + ["3"] + args[5:] + ["--out", "cert.json"]) == 2  # another k
    assert "holds a certificate of another problem (k = 2, not 3)" in one_error_line(capsys)
    assert (tmp_path / "cert.json").read_bytes() == cert
    assert (tmp_path / "d.npz").read_bytes() == data
    os.rename(tmp_path / "cert.json", tmp_path / "renamed.json")
    os.rename(tmp_path / "cert.proof", tmp_path / "renamed.proof")
    assert main(["verify", "renamed.json", "--data", "d.npz", "--quiet"]) == 0
    assert "renamed.json: verified" in capsys.readouterr().out
    assert main(args + ["--out", "d.json", "--force"]) == 0  # the user asked for it
    assert (tmp_path / "d.proof").read_bytes() != b"not ours"
    assert (tmp_path / "d.npz").read_bytes() == data
