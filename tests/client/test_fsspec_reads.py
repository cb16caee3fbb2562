"""Reading ``o41://`` files: exact bytes in any order, each byte fetched once, sha256 kept.

The file server of ``client_fixtures`` counts every byte it serves; a DCP load is measured
by the emulator's own usage meter, as a bill would be.
"""

from __future__ import annotations

import hashlib
import random
import secrets
import warnings
from types import SimpleNamespace
from typing import TYPE_CHECKING

import fsspec
import pytest
import requests

from o41 import FileEntry, IntegrityError
from o41.fs import readfile
from o41.fs.readfile import ReadFile
from o41.models import Version
from tests.support.client_helpers import blob

if TYPE_CHECKING:
    from tests.support.client_fixtures import Emulator, FileServer

pytest_plugins = ["tests.support.client_fixtures"]
MIB = 1024 * 1024


def open_served(server: FileServer, data: bytes, block: int = MIB,
                name: str = "f.bin") -> ReadFile:
    """A read file over the file server's copy of ``data``, with ``block``-byte blocks."""
    server.files[name] = data
    entry = FileEntry(name, len(data), hashlib.sha256(data).hexdigest(), server.url(name))
    version = Version("t/run", "step-00000001", 1, len(data), files=(entry,))
    fs = SimpleNamespace(workers=4)  # what a read file asks of its filesystem
    return ReadFile(fs, "t/run/step-00000001/f.bin", version, entry,  # type: ignore[arg-type]
                    block_size=block)


def test_random_order_partial_reads_return_exact_bytes(
        data_server: FileServer) -> None:
    data = blob(7 * MIB + 12345)
    rng = random.Random(41)
    with open_served(data_server, data) as f:
        for _ in range(300):
            start = rng.randrange(len(data))
            n = rng.choice([1, 17, 4096, MIB // 3, 2 * MIB + 5])
            f.seek(start)
            if rng.random() < 0.5:
                assert f.read(n) == data[start:start + n]
            else:
                buf = bytearray(n)
                got = f.readinto(buf)
                assert bytes(buf[:got]) == data[start:start + n]
                assert got == min(n, len(data) - start)
        f.seek(len(data) - 3)
        assert f.read(100) == data[-3:] and f.read(1) == b""


def test_backward_seeks_of_a_torch_load_pattern_fetch_nothing_twice(
        data_server: FileServer) -> None:
    """Per record: its header, then its end, then the header again, then its data."""
    data = blob(10 * MIB)
    record = 2 * MIB + 333
    with open_served(data_server, data) as f:
        for start in range(0, len(data), record):
            end = min(len(data), start + record)
            for pos, n in ((start, 64), (end - 4096, 4096), (start, 30), (start + 64, None)):
                f.seek(pos)
                want = end - pos if n is None else n
                assert f.read(want) == data[pos:pos + want]
    assert data_server.served == len(data)


def test_a_reader_moving_forward_is_read_ahead_in_few_large_gets(
        data_server: FileServer) -> None:
    """fifty-odd 1 MiB blocks, read 256 KiB at a time: a handful of GETs, each byte once"""
    data = blob(48 * MIB + 5)
    with open_served(data_server, data) as f:
        got = bytearray()
        while chunk := f.read(MIB // 4):
            got += chunk
    assert got == data
    assert data_server.served == len(data)
    assert len(data_server.ranges) <= 12, data_server.ranges


def test_a_reader_that_stops_was_sent_at_most_the_window_it_earned(
        data_server: FileServer) -> None:
    data = blob(200 * MIB)
    with open_served(data_server, data) as f:
        for _ in range(3):
            assert len(f.read(MIB)) == MIB
    # three blocks read: the window doubled from two blocks to eight, so at most eight more
    assert 3 * MIB <= data_server.served <= 11 * MIB


def test_files_read_side_by_side_reuse_run_buffers_and_keep_their_own_bytes(
        data_server: FileServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Read-ahead buffers go back to one process-wide list as their blocks leave a file's
    cache and its hash: with a cache of two blocks they are reused mid-file, by the other
    file, while each file's hash is still catching up."""
    monkeypatch.setattr(readfile, "CACHE_BYTES", 2 * MIB)
    data = {"a.bin": blob(40 * MIB + 3, seed=1), "b.bin": blob(36 * MIB + 11, seed=2)}
    for turn in range(2):  # the second turn starts with the buffers the first left
        files = {name: open_served(data_server, d, name=name) for name, d in data.items()}
        got: dict[str, bytearray] = {name: bytearray() for name in data}
        while any(len(got[n]) < len(d) for n, d in data.items()):
            for name, f in files.items():
                got[name] += f.read(MIB // 2 + 17 * turn)
        for name, f in files.items():
            assert got[name] == data[name]
            assert f._bad is None and f._sha is None  # the whole file hashed, and sound
            f.close()


def test_whole_file_read_of_corrupt_bytes_raises_integrity_error(
        data_server: FileServer) -> None:
    data = blob(3 * MIB + 7)
    data_server.corrupt = True
    with open_served(data_server, data) as f, pytest.raises(IntegrityError, match="sha256"):
        f.read()


def test_file_read_whole_in_pieces_is_still_sha256_checked(data_server: FileServer) -> None:
    data = blob(3 * MIB + 7)
    data_server.corrupt = True
    with open_served(data_server, data) as f:
        f.seek(2 * MIB)
        f.read()  # not the whole file yet: nothing to check against
        with pytest.raises(IntegrityError, match="sha256"):
            f.seek(0)
            f.read(2 * MIB)  # the hash now covers the file
        with pytest.raises(IntegrityError):
            f.read(1)  # and the file stays refused


def test_sound_file_read_in_pieces_passes_its_sha256_check(data_server: FileServer) -> None:
    data = blob(3 * MIB + 7)
    with open_served(data_server, data) as f:
        f.seek(2 * MIB)
        assert f.read() == data[2 * MIB:]
        f.seek(0)
        assert f.read(2 * MIB) == data[:2 * MIB]
        assert f._bad is None and f._sha is None  # checked, and found sound


@pytest.mark.filterwarnings("ignore:torch.distributed is disabled:UserWarning")
@pytest.mark.parametrize("cache", ["default", "smaller than the checkpoint"])
def test_dcp_load_reads_at_most_1_02x_the_checkpoint_by_the_usage_meter(
        o41_env: Emulator, cache: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """DCP asks for the tensors in key order (t0, t1, t10, t11, t2...), the file holds
    them in the order they were saved: read in file order, a load that does not fit the
    read file's cache still fetches each byte once."""
    torch = pytest.importorskip("torch", reason="torch is not installed (it is not a "
                                "dependency of this project): the DCP load is not measured")
    import torch.distributed.checkpoint as dcp

    if cache != "default":
        monkeypatch.setattr(ReadFile, "DEFAULT_BLOCK_SIZE", MIB)
        monkeypatch.setattr(readfile, "CACHE_BYTES", 2 * MIB)
        monkeypatch.setattr(readfile, "MAX_AHEAD", 4 * MIB)
        monkeypatch.setattr(readfile, "RUN", 2 * MIB)

    artifact = f"tests/dcp-{secrets.token_hex(4)}"
    gen = torch.Generator().manual_seed(7)
    state = {f"t{i}": torch.rand(300_000 + 70_001 * i, generator=gen) for i in range(12)}
    state["step"] = torch.tensor(5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        dcp.save(state, checkpoint_id=f"o41://{artifact}/step-00000005")
        fsspec.get_filesystem_class("o41").clear_instance_cache()
        back = {k: torch.zeros_like(v) for k, v in state.items()}
        dcp.load(back, checkpoint_id=f"o41://{artifact}/latest")
    assert all(torch.equal(back[k], v) for k, v in state.items())

    auth = {"Authorization": f"Bearer {o41_env.key}"}
    usage = requests.get(f"{o41_env.api}/usage/read", params={"artifact": artifact},
                         headers=auth, timeout=30).json()
    version = requests.get(f"{o41_env.api}/versions/read", timeout=30, headers=auth,
                           params={"artifact": artifact, "version": "latest"}).json()
    read = sum(r["read_bytes"] for r in usage["routes"].values())
    size = sum(f["size"] for f in version["files"])
    assert size > 12 * 300_000 * 4
    assert size <= read <= 1.02 * size
