"""A file written through ``o41://`` streams as it is written (VER-6): hashed on the way,
bounded in memory per open file, never staged whole on disk or in memory; the commit
lists what each PUT answered."""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import sys
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import requests

import o41
from o41.writing import stream
from tests.support import client_helpers
from tests.support.client_helpers import blob
from tests.support.trainer_runs import REPO, versions

if TYPE_CHECKING:
    from tests.support.client_fixtures import Emulator

pytest_plugins = ["tests.support.client_fixtures"]
MIB = 1024 * 1024


# Each close commits (commit_after=0): what is pinned here is how a file streams; when
# a step of files closed in turn commits is tests/client/test_fsspec_commit_after.py's.
# No holder of its own: the client's default.
make_fs = partial(client_helpers.make_fs, prefix=None, commit_after=0)


def listed(emu: Emulator, location: str, version: str) -> dict[str, tuple[int, str]]:
    resp = requests.get(f"{emu.api}/versions/read", timeout=30,
                        params={"artifact": location[6:], "version": version},
                        headers={"Authorization": f"Bearer {emu.key}"})
    resp.raise_for_status()
    return {f["name"]: (f["size"], f["sha256"]) for f in resp.json()["files"]}


def test_small_file_goes_as_one_put_and_its_version_lists_its_sha256(
        served_emulator: Emulator, o41_location: str) -> None:
    fs = make_fs(served_emulator)
    data = blob(3 * MIB + 3)
    step = f"{o41_location}/step-00000001"
    with fs.transaction:
        with fs.open(f"{step}/model.bin", "wb") as f:
            for i in range(0, len(data), 1000_003):
                f.write(data[i:i + 1000_003])
            os.fsync(f.fileno())  # torch DCP syncs what it writes: it must work, and cheaply
            assert f.tell() == len(data) and f._sender is None  # under one part: one PUT
    assert listed(served_emulator, o41_location, "step-00000001") == {
        "model.bin": (len(data), hashlib.sha256(data).hexdigest())}
    assert fs.cat_file(f"{o41_location}/latest/model.bin") == data


def test_file_past_its_buffer_streams_while_it_is_written(
        served_emulator: Emulator, o41_location: str) -> None:
    fs = make_fs(served_emulator, write_buffer=16 * MIB)
    data = blob(40 * MIB + 11, seed=2)
    with fs.open(f"{o41_location}/step-00000001/big.bin", "wb") as f:
        for i in range(0, len(data), MIB):
            f.write(bytearray(data[i:i + MIB]))  # mutable: copied into parts
        sender = f._sender
        assert sender is not None and sender.queued <= 16 * MIB
        # the writer waits while 16 MiB are queued: the rest went out before the close
        assert sender.size >= len(data) - 16 * MIB - stream.PART
    assert listed(served_emulator, o41_location, "step-00000001") == {
        "big.bin": (len(data), hashlib.sha256(data).hexdigest())}
    assert fs.cat_file(f"{o41_location}/latest/big.bin") == data


def test_writer_rewrites_bytes_not_yet_sent_and_is_refused_before_them(
        served_emulator: Emulator, o41_location: str) -> None:
    fs = make_fs(served_emulator)
    data = bytearray(blob(2 * MIB, seed=3))
    with fs.open(f"{o41_location}/step-00000001/patched.bin", "wb") as f:
        f.write(bytes(data))
        f.seek(100)  # as a writer patches a header it wrote a moment ago
        f.write(b"PATCHED")
        f.seek(0, os.SEEK_END)
        f.write(b"tail")
        assert not f.seekable()  # zipfile then writes data descriptors, never seeking back
    data[100:107] = b"PATCHED"
    data += b"tail"
    assert fs.cat_file(f"{o41_location}/latest/patched.bin") == bytes(data)
    with fs.open(f"{o41_location}/step-00000002/long.bin", "wb") as f:
        f.write(blob(stream.PART + MIB))
        with pytest.raises(io.UnsupportedOperation, match="streams as it is written"):
            f.seek(0)


@pytest.mark.parametrize("size", [2 * MIB, stream.PART + MIB])
def test_file_left_by_an_exception_stores_nothing(served_emulator: Emulator, o41_location: str,
                                                  size: int) -> None:
    fs = make_fs(served_emulator)
    with pytest.raises(RuntimeError), fs.open(f"{o41_location}/step-00000001/x.bin",
                                              "wb") as f:
        f.write(blob(size))
        raise RuntimeError("the writer failed")
    assert f.closed and f.discarded
    assert fs.uncommitted() == []
    assert versions(served_emulator.api, served_emulator.key, o41_location) == []


def test_two_gib_file_streams_with_bounded_memory_and_no_local_disk(
        served_emulator: Emulator, o41_location: str, tmp_path: Path) -> None:
    """The issue's measure: a 2 GiB file through ``o41://``, peak RSS and temp dir."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    script = f"""
import hashlib, fsspec
fs = fsspec.filesystem("o41")
chunk = bytearray(8 << 20)
sha = hashlib.sha256()
with fs.open("{o41_location}/step-00000001/huge.bin", "wb") as f:
    for i in range(256):
        chunk[:8] = i.to_bytes(8, "big")
        sha.update(chunk)
        f.write(chunk)
# VmHWM: this program's own peak (ru_maxrss would count the forked parent's pages too)
peak = next(int(ln.split()[1]) for ln in open("/proc/self/status") if ln.startswith("VmHWM"))
print(sha.hexdigest(), peak // 1024)
"""
    env = served_emulator.client_env(TMPDIR=str(temp))
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env, timeout=600,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    digest, peak_mib = done.stdout.split()
    print(f"2 GiB streamed: peak RSS {peak_mib} MiB")
    assert int(peak_mib) < 200
    assert list(temp.iterdir()) == []
    assert listed(served_emulator, o41_location, "step-00000001") == {
        "huge.bin": (2 << 30, digest)}


def test_file_past_the_services_limit_is_refused_and_nothing_is_visible(
        tmp_path: Path) -> None:
    from tests.support.client_fixtures import start_emulator, stop_emulator

    config = tmp_path / "limits.toml"
    config.write_text(f"max_file_size = {12 * MIB}\n")
    emu = start_emulator(tmp_path / "data", "--config", str(config))
    try:
        fs = make_fs(emu)
        location = "o41://tests/limited"
        with pytest.raises(o41.PayloadTooLarge), fs.open(
                f"{location}/step-00000001/big.bin", "wb") as f:
            for i in range(20):
                f.write(blob(MIB, seed=i))
        assert versions(emu.api, emu.key, location) == []
        with pytest.raises(o41.ConfigError, match="big.bin streamed and then .* cut short"):
            fs.pipe(f"{location}/step-00000001/other.bin", b"x")  # the step lacks big.bin
        fs.pipe(f"{location}/step-00000001/big.bin", b"fits")  # written again, it commits
        assert listed(emu, location, "step-00000001") == {
            "big.bin": (4, hashlib.sha256(b"fits").hexdigest())}
    finally:
        stop_emulator(emu)
