"""`o41-emulator serve` as a user runs it: start-up lines, persistence, faults, config, logs."""

from __future__ import annotations

import subprocess
import sys

from tests.support.deadlines import HANG_GUARD
from tests.support.emulator_http import AWS, Box
from tests.support.served import Emulator


def test_serve_prints_url_and_exports_and_is_healthy(live_factory):
    emu = live_factory()
    assert emu.lines[1].strip() == f"export O41_ARTIFACTS_API_URL={emu.url}/api/v1"
    assert emu.lines[2].strip() == "export O41_ARTIFACTS_API_KEY=ak_local"
    r = emu.http.request("GET", "/_emulator/health", key=None)
    assert r.status == 200 and r.body["status"] == "ok"


def test_committed_versions_survive_restart_on_same_data_dir(live_factory, tmp_path, artifact):
    data_dir = str(tmp_path / "keep")
    first = live_factory("--data-dir", data_dir)
    box = Box(first.http, artifact, AWS)
    box.open()
    box.checkpoint("step-00000100", {"w.bin": b"persisted" * 1000})
    first.stop()
    second = live_factory("--data-dir", data_dir)
    again = Box(second.http, artifact, AWS)
    opened = again.open().body
    assert opened["epoch"] == 2 and opened["resume_from"]["version"] == "step-00000100"
    url = opened["resume_from"]["files"][0]["url"]
    assert second.http.request("GET", url, key=None).content == b"persisted" * 1000


def test_temporary_data_dir_is_removed_at_exit(live_factory):
    emu = live_factory(temporary=True)
    data_line = emu.log()
    emu.stop()
    path = data_line.split("data in ")[1].split(" (temporary)")[0]
    import os

    assert not os.path.exists(path)


def test_fault_is_announced_loudly(live_factory):
    emu = live_factory("--fault", "no-fencing")
    assert "FAULT no-fencing is ON: breaks FENCE-2" in emu.log()
    assert emu.http.request("GET", "/_emulator/health", key=None).body["faults"] == ["no-fencing"]


def test_unknown_fault_and_bad_config_are_refused(tmp_path):
    r = subprocess.run([sys.executable, "-m", "emulator", "serve", "--fault", "nope"],
                       capture_output=True, text=True, timeout=HANG_GUARD)
    assert r.returncode == 2 and "nope" in r.stderr
    cfg = tmp_path / "bad.toml"
    cfg.write_text('fallback = "mars/olympus"\n')
    r = subprocess.run([sys.executable, "-m", "emulator", "serve", "--config", str(cfg)],
                       capture_output=True, text=True, timeout=HANG_GUARD)
    assert r.returncode == 2 and "fallback" in r.stderr


def test_config_file_adds_keys_locations_and_lifetime(live_factory, tmp_path, artifact):
    cfg = tmp_path / "emu.toml"
    cfg.write_text(
        'url_lifetime = 120\nfallback = "gcp/us-central1"\n'
        '[[locations]]\ncloud = "gcp"\nregion = "us-central1"\n'
        '[[locations]]\ncloud = "aws"\nregion = "us-east-1"\n'
        '[[keys]]\nkey = "ak_reader"\nscopes = [{ prefix = "", access = "read" }]\n'
    )
    emu = live_factory("--config", str(cfg))
    r = Box(emu.http, artifact, {"cloud": "azure", "region": "westeurope"}).open()
    assert r.body["write_location"] == {"cloud": "gcp", "region": "us-central1",
                                        "route": "cross_cloud"}
    denied = Box(emu.http, artifact, AWS, key="ak_reader").open()
    assert (denied.status, denied.code) == (403, "forbidden")


def test_one_log_line_per_call_and_keys_never_logged(tmp_path, artifact):
    emu = Emulator("--workers", "1", "--data-dir", str(tmp_path / "data"), quiet=False)
    emu.start()
    try:
        box = Box(emu.http, artifact, AWS)
        box.open()
        box.checkpoint("step-00000001")
        box.read(place="gcp/europe-west4")
        err = emu.log()  # a call's line is written before its answer is sent
    finally:
        emu.stop()
    lines = [ln for ln in err.splitlines() if "versions/read" in ln]
    assert len(lines) == 1
    assert f"versions/read {artifact} latest -> 200 cross_cloud aws/us-east-1 -> " \
           "gcp/europe-west4" in lines[0]
    assert "ak_local" not in err and "tk_" not in err
