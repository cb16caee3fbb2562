"""The trainer-facing API against a live emulator: open, load, save, fencing, placement."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import requests

import o41

if TYPE_CHECKING:
    from tests.support.client_fixtures import Emulator

pytest_plugins = ["tests.support.client_fixtures"]


def write_ckpt(root: Path, step: int, size: int = 300_000) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "state.json").write_text(json.dumps({"step": step}))
    (root / "weights").mkdir(exist_ok=True)
    (root / "weights" / "w.bin").write_bytes(hashlib.shake_256(bytes([step % 256])).digest(size))
    return root


def cluster(cloud: str, region: str) -> str:
    return json.dumps({"cluster_name": "c", "cloud": cloud, "region": region, "zone": "z"})


def test_open_latest_first_launch_has_nothing_to_resume(o41_env: Emulator,
                                                        o41_location: str) -> None:
    run = o41.open(o41_location, resume="latest")
    assert run.resume_from is None and run.epoch >= 1
    with pytest.raises(o41.NotFound):
        run.load("unused")


def test_save_then_resume_latest_loads_identical_files(o41_env: Emulator, o41_location: str,
                                                       tmp_path: Path) -> None:
    run = o41.open(o41_location, resume="latest")
    run.save(100, write_ckpt(tmp_path / "a", 100))
    saved = run.save(200, write_ckpt(tmp_path / "b", 200))
    assert saved.version == "step-00000200" and {f.name for f in saved.files} == {
        "state.json", "weights/w.bin"}
    again = o41.open(o41_location, resume="latest")
    assert again.resume_from is not None and again.resume_from.version == "step-00000200"
    assert again.epoch > run.epoch
    loaded = again.load(tmp_path / "out")
    assert loaded.version == "step-00000200"
    for name in ("state.json", "weights/w.bin"):
        assert (tmp_path / "out" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_save_mapping_of_bytes(o41_env: Emulator, o41_location: str, tmp_path: Path) -> None:
    run = o41.open(o41_location, resume="latest")
    run.save(1, {"state.json": b'{"step": 1}'})
    o41.open(o41_location, resume="latest").load(tmp_path)
    assert (tmp_path / "state.json").read_bytes() == b'{"step": 1}'


def test_fresh_open_refused_when_checkpoints(o41_env: Emulator, o41_location: str) -> None:
    o41.open(o41_location, resume=None).save(1, {"a": b"1"})
    with pytest.raises(o41.HasCheckpoints) as info:
        o41.open(o41_location, resume=None)
    assert info.value.status == 409 and info.value.code == "has_checkpoints"


def test_fenced_save_raises_fenced_naming_fencer(o41_env: Emulator, o41_location: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKYPILOT_TASK_ID", "box-a")
    zombie = o41.open(o41_location, resume="latest")
    zombie.save(1, {"a": b"1"})
    monkeypatch.setenv("SKYPILOT_TASK_ID", "box-b")
    fencer = o41.open(o41_location, resume="latest")
    assert fencer.fenced == {"epoch": zombie.epoch, "holder": "box-a"}
    with pytest.raises(o41.Fenced) as info:
        zombie.save(2, {"a": b"2"})
    err = info.value
    assert (err.by_holder, err.by_epoch, err.epoch) == ("box-b", fencer.epoch, zombie.epoch)
    assert "box-b" in str(err) and "step-00000002" in str(err)
    assert err.exit_code == o41.ExitCode.FENCED
    latest = o41.open(o41_location, resume="latest").resume_from
    assert latest is not None and latest.version == "step-00000001"  # never visible


def test_open_unknown_key_says_key_unknown(o41_env: Emulator, o41_location: str,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("O41_ARTIFACTS_API_KEY", "ak_nobody_knows_this")
    with pytest.raises(o41.Unauthenticated, match="not known") as info:
        o41.open(o41_location, resume="latest")
    assert info.value.status == 401 and "ak_nobody_knows_this" not in str(info.value)


def test_open_read_only_key_says_no_write_access(o41_env: Emulator, o41_location: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    o41.open(o41_location, resume="latest").save(1, {"a": b"1"})
    monkeypatch.setenv("O41_ARTIFACTS_API_KEY", o41_env.make_key("tests/", "read"))
    with pytest.raises(o41.Forbidden, match="no write access to tests/") as info:
        o41.open(o41_location, resume="latest")
    assert info.value.code == "forbidden"
    monkeypatch.setenv("O41_ARTIFACTS_API_KEY", o41_env.key)
    assert o41.open(o41_location, resume="latest").fenced["epoch"] == 1  # nobody was fenced


def test_fork_resumes_from_source_into_new_artifact(o41_env: Emulator, o41_location: str,
                                                    tmp_path: Path) -> None:
    o41.open(o41_location, resume="latest").save(300, {"s": b"300"})
    fork = o41.open(o41_location + "-fork", resume=f"{o41_location}/step-00000300")
    assert fork.resume_from is not None and fork.resume_from.version == "step-00000300"
    fork.load(tmp_path)
    assert (tmp_path / "s").read_bytes() == b"300"
    fork.save(301, {"s": b"301"})
    with pytest.raises(o41.NotEmpty):
        o41.open(o41_location + "-fork", resume=f"{o41_location}/step-00000300")


def test_open_version_location_refused_before_any_call(o41_location: str) -> None:
    with pytest.raises(o41.ConfigError, match="names a version"):
        o41.open(o41_location + "/step-00000001", resume="latest")


def test_place_from_cluster_info_writes_local_and_reads_cross_cloud(
        o41_env: Emulator, o41_location: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKYPILOT_CLUSTER_INFO", cluster("AWS", "us-east-1"))
    run = o41.open(o41_location, resume="latest")
    assert run.write_location["route"] == "local"
    assert run.save(5, {"s": b"5"}).location == {"cloud": "aws", "region": "us-east-1"}
    monkeypatch.setenv("SKYPILOT_CLUSTER_INFO", cluster("GCP", "europe-west4"))
    hop = o41.open(o41_location, resume="latest")
    assert hop.resume_from is not None and hop.resume_from.cross_cloud is True
    hop.load(tmp_path)
    assert hop.save(6, {"s": b"6"}).location == {"cloud": "gcp", "region": "europe-west4"}


def test_fallback_placement_warning_is_logged(o41_env: Emulator, o41_location: str,
                                              monkeypatch: pytest.MonkeyPatch,
                                              caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("SKYPILOT_CLUSTER_INFO", cluster("Lambda", "us-west-1"))
    with caplog.at_level(logging.WARNING, logger="o41"):
        run = o41.open(o41_location, resume="latest")
    assert run.warnings and run.write_location["route"] == "cross_cloud"
    assert any(w in caplog.text for w in run.warnings)


def test_load_refreshes_expired_urls(o41_env: Emulator, o41_location: str, tmp_path: Path) -> None:
    o41.open(o41_location, resume="latest").save(1, {"s": b"one"})
    run = o41.open(o41_location, resume="latest")
    assert run.resume_from is not None
    broken = [o41.FileEntry(f.name, f.size, f.sha256, f.url + "0") for f in run.resume_from.files]
    stale = o41.Version(**{**run.resume_from.__dict__, "files": tuple(broken)})
    assert requests.get(broken[0].url, timeout=60).status_code == 403  # a bad signature
    assert run.load(tmp_path, stale).version == "step-00000001"
    assert (tmp_path / "s").read_bytes() == b"one"
