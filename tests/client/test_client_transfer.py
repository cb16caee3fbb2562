"""Data plane: parallel ranged GETs reassemble, resume after cuts and kills, verify sha256."""

from __future__ import annotations

import hashlib
import io
import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from o41 import ConfigError, FileEntry, IntegrityError, TransportError
from o41.transport import retry, transfer
from o41.transport.transfer import (
    LOG_SUFFIX,
    PART_SUFFIX,
    collect,
    download,
    hash_files,
    progress_bar,
    upload,
    upload_hashed,
)
from tests.support.client_helpers import blob

if TYPE_CHECKING:
    from tests.support.client_fixtures import FileServer

pytest_plugins = ["tests.support.client_fixtures"]
CHUNK = 64 * 1024


@pytest.fixture
def five_tries(monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure that lasts surfaces after five tries, unslept, not after the policy's
    minutes: these tests end a run by failing it."""
    monkeypatch.setattr(retry, "POLICY", retry.Policy(tries=5))
    monkeypatch.setattr(retry, "sleep", lambda s: None)


def entry(server: FileServer, name: str, data: bytes) -> FileEntry:
    server.files[name] = data
    return FileEntry(name, len(data), hashlib.sha256(data).hexdigest(), server.url(name))


def test_download_parallel_ranges_reassemble_exactly(data_server: FileServer,
                                                      tmp_path: Path) -> None:
    data = blob(10 * CHUNK + 123)
    [path] = download([entry(data_server, "w.bin", data)], tmp_path, chunk_size=CHUNK)
    assert path.read_bytes() == data
    assert len(data_server.ranges) == 11 and data_server.served == len(data)
    assert not list(tmp_path.glob(f"*{PART_SUFFIX}*"))


def test_download_resumes_within_run_when_body_cut(data_server: FileServer, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transfer, "BLOCK", 256)
    data = blob(3 * CHUNK)
    data_server.cut_after, data_server.cuts_left = 1000, 2
    [path] = download([entry(data_server, "w.bin", data)], tmp_path, chunk_size=CHUNK,
                      workers=1)
    assert path.read_bytes() == data
    # the cut request is asked again from the byte where its body stopped, not from scratch
    assert data_server.ranges[:3] == [(0, CHUNK - 1), (1000, CHUNK - 1), (2000, CHUNK - 1)]


def test_download_resumes_across_runs_from_partial_file(data_server: FileServer,
                                                        tmp_path: Path, five_tries) -> None:
    data = blob(8 * CHUNK)
    e = entry(data_server, "w.bin", data)
    data_server.fail_from_offset = 5 * CHUNK  # chunks 5.. fail: the first run dies part-way
    with pytest.raises(TransportError):
        download([e], tmp_path, chunk_size=CHUNK, workers=1)
    assert (tmp_path / ("w.bin" + PART_SUFFIX)).exists()
    assert (tmp_path / ("w.bin" + LOG_SUFFIX)).read_text().splitlines()[1:] == [
        "0", "1", "2", "3", "4"]
    data_server.fail_from_offset, data_server.served, data_server.ranges = None, 0, []
    [path] = download([e], tmp_path, chunk_size=CHUNK, workers=2)
    assert path.read_bytes() == data
    assert data_server.served == 3 * CHUNK  # only the missing chunks were fetched
    assert sorted(data_server.ranges)[0] == (5 * CHUNK, 6 * CHUNK - 1)


def test_download_killed_mid_chunk_resumes_from_last_mark(data_server: FileServer,
                                                          tmp_path: Path, five_tries,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transfer, "BLOCK", 1024)
    monkeypatch.setattr(transfer, "MARK", 1024)
    data = blob(CHUNK)
    e = entry(data_server, "w.bin", data)
    data_server.cut_after, data_server.cuts_left = 3000, 1000  # every body is cut: run dies
    with pytest.raises(TransportError):
        download([e], tmp_path, chunk_size=CHUNK)
    marks = (tmp_path / ("w.bin" + LOG_SUFFIX)).read_text().splitlines()[1:]
    assert marks and marks[-1] == "0@15000"  # 5 requests x 3000 bytes, each cut and kept
    data_server.cuts_left, data_server.served, data_server.ranges = 0, 0, []
    [path] = download([e], tmp_path, chunk_size=CHUNK)
    assert path.read_bytes() == data
    assert data_server.ranges == [(15000, CHUNK - 1)] and data_server.served == CHUNK - 15000


def test_download_partial_of_another_version_is_discarded(data_server: FileServer,
                                                          tmp_path: Path) -> None:
    (tmp_path / ("w.bin" + PART_SUFFIX)).write_bytes(b"x" * CHUNK)
    (tmp_path / ("w.bin" + LOG_SUFFIX)).write_text('{"sha256": "other"}\n0\n')
    data = blob(2 * CHUNK, seed=2)
    [path] = download([entry(data_server, "w.bin", data)], tmp_path, chunk_size=CHUNK)
    assert path.read_bytes() == data and data_server.served == len(data)


def test_download_sha_mismatch_raises_and_leaves_nothing(data_server: FileServer,
                                                         tmp_path: Path) -> None:
    data_server.corrupt = True
    with pytest.raises(IntegrityError, match="sha256"):
        download([entry(data_server, "w.bin", blob(CHUNK))], tmp_path, chunk_size=CHUNK)
    assert list(tmp_path.iterdir()) == []


def test_download_skips_files_already_complete(data_server: FileServer, tmp_path: Path) -> None:
    data = blob(CHUNK)
    (tmp_path / "w.bin").write_bytes(data)
    download([entry(data_server, "w.bin", data)], tmp_path, chunk_size=CHUNK)
    assert data_server.served == 0


def test_download_empty_and_nested_files(data_server: FileServer, tmp_path: Path) -> None:
    paths = download([entry(data_server, "empty", b""), entry(data_server, "a/b/c.txt", b"hi")],
                     tmp_path)
    assert [p.read_bytes() for p in paths] == [b"", b"hi"]
    assert paths[1] == tmp_path / "a" / "b" / "c.txt"


def test_download_http_error_names_status(data_server: FileServer, tmp_path: Path) -> None:
    e = FileEntry("gone", 10, "0" * 64, data_server.url("gone"))
    with pytest.raises(TransportError) as info:
        download([e], tmp_path)
    assert info.value.status == 404


def test_upload_puts_every_file_body(data_server: FileServer, tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "w.bin").write_bytes(blob(3 * CHUNK))
    (tmp_path / "state.json").write_text("{}")
    local = hash_files(collect({"d/w.bin": tmp_path / "d" / "w.bin",
                                "state.json": tmp_path / "state.json", "mem": b"bytes"}))
    upload(local, {f.name: data_server.url(f"up/{f.name}") for f in local})
    assert data_server.files["up/d/w.bin"] == blob(3 * CHUNK)
    assert data_server.files["up/state.json"] == b"{}"
    assert data_server.files["up/mem"] == b"bytes"
    assert {f.name: f.sha256 for f in local}["mem"] == hashlib.sha256(b"bytes").hexdigest()


def test_upload_hashed_puts_every_file_and_returns_what_it_sent(data_server: FileServer,
                                                                 tmp_path: Path) -> None:
    (tmp_path / "w.bin").write_bytes(blob(3 * CHUNK))
    (tmp_path / "e").write_bytes(b"")
    files = collect({"d/w.bin": tmp_path / "w.bin", "e": tmp_path / "e", "mem": b"bytes"})
    sent = upload_hashed(files, {n: data_server.url(f"up/{n}") for n, _ in files})
    assert [(f.name, f.size, f.sha256) for f in sent] == [
        ("d/w.bin", 3 * CHUNK, hashlib.sha256(blob(3 * CHUNK)).hexdigest()),
        ("e", 0, hashlib.sha256(b"").hexdigest()),
        ("mem", 5, hashlib.sha256(b"bytes").hexdigest())]
    assert data_server.files["up/d/w.bin"] == blob(3 * CHUNK)
    assert data_server.files["up/e"] == b"" and data_server.files["up/mem"] == b"bytes"


@pytest.mark.parametrize("source", ["path", "bytes"])
def test_upload_hashed_refuses_a_put_whose_answer_is_other_bytes(
        data_server: FileServer, tmp_path: Path, source: str) -> None:
    (tmp_path / "w.bin").write_bytes(blob(CHUNK))
    value = tmp_path / "w.bin" if source == "path" else blob(CHUNK)
    data_server.corrupt_puts = True
    with pytest.raises(IntegrityError, match="w.bin: wrote .* the service received"):
        upload_hashed(collect({"w.bin": value}), {"w.bin": data_server.url("up/w.bin")})


def test_collect_directory_names_are_relative_posix(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a").write_bytes(b"1")
    (tmp_path / "b").write_bytes(b"2")
    assert [n for n, _ in collect(tmp_path)] == ["b", "sub/a"]
    assert [n for n, _ in collect(os.fspath(tmp_path / "b"))] == ["b"]


@pytest.mark.parametrize("name", ["", "/abs", "a/../b", "./a", "a//b"])
def test_collect_refuses_bad_names(name: str) -> None:
    with pytest.raises(ConfigError):
        collect({name: b"x"})


def test_collect_refuses_empty_and_missing(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="nothing to save"):
        collect(tmp_path)
    with pytest.raises(ConfigError, match="neither"):
        collect(tmp_path / "missing")


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_silent_when_not_a_tty() -> None:
    assert progress_bar(10, "x", stream=io.StringIO()).disable
    assert not progress_bar(10, "x", stream=FakeTTY()).disable
    assert not progress_bar(10, "x", enabled=True, stream=io.StringIO()).disable


def test_download_of_many_files_asks_one_range_per_file(data_server: FileServer,
                                                        tmp_path: Path) -> None:
    shards = [entry(data_server, f"shard-{i}.bin", blob(2 * 1024 * 1024, seed=i))
              for i in range(8)]
    paths = download(shards, tmp_path, workers=8)
    assert [p.read_bytes() for p in paths] == [data_server.files[e.name] for e in shards]
    assert len(data_server.ranges) == 8  # few, large ranges: a request costs the server most


def test_resumed_download_keeps_the_range_size_of_its_log(data_server: FileServer,
                                                          tmp_path: Path, five_tries) -> None:
    big = entry(data_server, "big.bin", blob(4 * 1024 * 1024, seed=3))
    small = entry(data_server, "small.bin", blob(1024 * 1024, seed=4))
    data_server.fail_from_offset = 3 * 1024 * 1024  # big.bin's last ranges fail: the run dies
    with pytest.raises(TransportError):
        download([big, small], tmp_path, workers=4)
    header = (tmp_path / ("big.bin" + LOG_SUFFIX)).read_text().splitlines()[0]
    assert '"chunk": 1310720' in header  # 5 MiB over 4 workers
    data_server.fail_from_offset, data_server.ranges = None, []
    [path] = download([big], tmp_path, workers=4)  # alone it would get 1 MiB ranges
    assert path.read_bytes() == data_server.files["big.bin"]
    size = 4 * 1024 * 1024
    assert data_server.ranges and all(end + 1 == size or (end + 1) % 1310720 == 0
                                      for _, end in data_server.ranges)
