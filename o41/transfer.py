"""Moving bytes through signed URLs: parallel PUTs, and parallel ranged GETs that resume.

A download writes into ``<name>.o41part`` beside its destination and logs its progress in
``<name>.o41part.log``: a first line saying which file, size and sha256 it is for, then
``i`` for each finished chunk and ``i@offset`` every MiB of an unfinished one. A download
that was interrupted (killed process, cut body, dropped connection) asks only for the bytes
the log does not cover; within a run, a chunk whose body was cut is asked again from the
byte where it stopped. The whole file's sha256 is checked before it
is renamed into place; a mismatch removes the partial file and raises ``IntegrityError``.

Progress bars (tqdm, on stderr) show only when stderr is a TTY and a transfer lasts over
half a second.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from pathlib import Path, PurePosixPath
from typing import IO

import requests
from tqdm import tqdm

from .errors import IntegrityError, TransportError
from .local import WORKERS, LocalFile, Source, check_name, collect, hash_files
from .models import FileEntry

MIN_CHUNK = 1024 * 1024
MAX_CHUNK = 16 * 1024 * 1024
CHUNKS_PER_FILE = 32
BLOCK = 256 * 1024
MARK = 1024 * 1024
RETRIES = 5
TIMEOUT = 60.0
PART_SUFFIX = ".o41part"
LOG_SUFFIX = ".o41part.log"

def progress_bar(total: int, desc: str, enabled: bool | None = None,
                 stream: IO[str] | None = None) -> tqdm:
    """A byte progress bar on ``stream`` (stderr); off unless it is a TTY or ``enabled``."""
    stream = stream or sys.stderr
    if enabled is None:
        enabled = bool(getattr(stream, "isatty", lambda: False)())
    return tqdm(total=total, desc=desc, unit="B", unit_scale=True, unit_divisor=1024,
                disable=not enabled, file=stream, delay=0.5, leave=False)


class _Session(threading.local):
    """One requests session per worker thread (sessions are not thread-safe)."""

    def __init__(self) -> None:
        self.session = requests.Session()


class _Counting:
    """A file body for PUT that reports bytes read to the progress bar."""

    def __init__(self, fileobj: IO[bytes], size: int, tick: Callable[[int], None]) -> None:
        self.fileobj, self.size, self.tick = fileobj, size, tick

    def __len__(self) -> int:
        return self.size

    def read(self, n: int = -1) -> bytes:
        data = self.fileobj.read(n)
        self.tick(len(data))
        return data


def _data_plane_error(method: str, resp: requests.Response) -> TransportError:
    try:
        detail = resp.json()["error"]["message"]
    except (ValueError, KeyError, TypeError):
        detail = resp.text[:200]
    hint = " (signed URL rejected or expired)" if resp.status_code == 403 else ""
    return TransportError(f"{method} signed URL: HTTP {resp.status_code}{hint}: {detail}",
                          status=resp.status_code)


def _run_parallel(tasks: list[Callable[[], None]], workers: int, stop: threading.Event) -> None:
    """Run tasks on a pool; the first failure stops the rest and is raised."""
    if not tasks:
        return
    pool = ThreadPoolExecutor(max_workers=max(1, min(workers, len(tasks))))
    try:
        futures = [pool.submit(t) for t in tasks]
        done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        for fut in done:
            if fut.exception() is not None:
                stop.set()
                raise fut.exception()  # type: ignore[misc]
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def upload(files: list[LocalFile], urls: Mapping[str, str], *, workers: int = WORKERS,
           progress: bool | None = None) -> None:
    """PUT every file to its signed URL in parallel; connection errors are retried."""
    sessions = _Session()
    stop = threading.Event()
    lock = threading.Lock()
    bar = progress_bar(sum(f.size for f in files), "upload", progress)

    def tick(n: int) -> None:
        with lock:
            bar.update(n)

    def put(item: LocalFile) -> None:
        url = urls.get(item.name)
        if url is None:
            raise TransportError(f"the server gave no upload URL for {item.name}")
        for attempt in range(1, RETRIES + 1):
            if stop.is_set():
                return
            try:
                if item.data is not None:
                    resp = sessions.session.put(url, data=item.data, timeout=TIMEOUT)
                    tick(item.size)
                else:
                    assert item.path is not None
                    with item.path.open("rb") as f:
                        body = _Counting(f, item.size, tick)
                        resp = sessions.session.put(url, data=body, timeout=TIMEOUT)
            except requests.RequestException as exc:
                if attempt == RETRIES:
                    raise TransportError(f"PUT {item.name}: {exc}") from exc
                time.sleep(0.1 * attempt)
                continue
            if resp.status_code in (502, 503, 504) and attempt < RETRIES:
                time.sleep(0.1 * attempt)  # a transient refusal: nothing was stored
                continue
            if resp.status_code >= 400:
                raise _data_plane_error(f"PUT {item.name}", resp)
            return

    try:
        _run_parallel([lambda f=f: put(f) for f in files], workers, stop)
    finally:
        bar.close()


class _Partial:
    """The ``.o41part`` file and its chunk log for one destination file."""

    def __init__(self, final: Path, entry: FileEntry, chunk: int) -> None:
        self.final, self.entry, self.chunk = final, entry, chunk
        self.part = final.with_name(final.name + PART_SUFFIX)
        self.log = final.with_name(final.name + LOG_SUFFIX)
        self.header = json.dumps({"sha256": entry.sha256, "size": entry.size, "chunk": chunk})
        self.lock = threading.Lock()
        self.done, self.reached = self._read_log()
        final.parent.mkdir(parents=True, exist_ok=True)
        if not self.done and not self.reached:
            self.log.write_text(self.header + "\n")
        if not self.part.exists() or not self.done and not self.reached:
            with self.part.open("wb") as f:
                f.truncate(entry.size)
        self.fd = os.open(self.part, os.O_RDWR)

    def _read_log(self) -> tuple[set[int], dict[int, int]]:
        """Finished chunks (``i``) and how far unfinished ones got (``i@offset``)."""
        done: set[int] = set()
        reached: dict[int, int] = {}
        try:
            lines = self.log.read_text().splitlines()
        except OSError:
            return done, reached
        if not lines or lines[0] != self.header or not self.part.exists():
            return done, reached
        for line in lines[1:]:
            index, _, offset = line.partition("@")
            if not index.isdigit() or offset and not offset.isdigit():
                continue  # a line torn by a kill mid-write
            if offset:
                reached[int(index)] = max(reached.get(int(index), 0), int(offset))
            else:
                done.add(int(index))
        return done, reached

    def resume_at(self, index: int) -> int:
        """The first byte of chunk ``index`` not yet known to be written."""
        start, end = self.bounds(index)
        return min(end + 1, max(start, self.reached.get(index, start)))

    @property
    def chunks(self) -> int:
        return max(1, -(-self.entry.size // self.chunk))

    def bounds(self, index: int) -> tuple[int, int]:
        start = index * self.chunk
        return start, min(self.entry.size, start + self.chunk) - 1

    def mark(self, index: int, offset: int | None = None) -> None:
        """Log chunk ``index`` as finished, or as written up to ``offset`` (exclusive)."""
        with self.lock, self.log.open("a") as f:
            f.write(f"{index}\n" if offset is None else f"{index}@{offset}\n")

    def finish(self) -> None:
        """Check size and sha256, then rename into place; a mismatch discards the bytes."""
        digest = hashlib.sha256()
        with self.part.open("rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(0)
            hashlib.file_digest(f, lambda: digest)
        if size != self.entry.size or digest.hexdigest() != self.entry.sha256:
            self.discard()
            raise IntegrityError(
                f"{self.entry.name}: downloaded {size} bytes with sha256 {digest.hexdigest()}, "
                f"expected {self.entry.size} bytes with sha256 {self.entry.sha256}")
        os.replace(self.part, self.final)
        self.log.unlink(missing_ok=True)

    def discard(self) -> None:
        self.part.unlink(missing_ok=True)
        self.log.unlink(missing_ok=True)


def _is_complete(path: Path, entry: FileEntry) -> bool:
    """A destination already holding the right bytes is not downloaded again."""
    if not path.is_file() or path.stat().st_size != entry.size:
        return False
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest() == entry.sha256


def chunk_for(size: int) -> int:
    """Range size for a file: a 32nd of it, within 1-16 MiB. A function of the size alone, so
    a resumed download splits the file the same way; small enough that a killed download
    loses little, large enough that a 20 GB file is ~1,300 requests."""
    return min(MAX_CHUNK, max(MIN_CHUNK, -(-size // CHUNKS_PER_FILE)))


def download(entries: Iterable[FileEntry], dest: str | os.PathLike[str], *,
             workers: int = WORKERS, chunk_size: int | None = None,
             progress: bool | None = None) -> list[Path]:
    """Download files by parallel ranged GETs into ``dest``, resuming and verifying each."""
    root = Path(dest)
    partials: list[_Partial] = []
    paths: list[Path] = []
    for entry in entries:
        if not entry.url:
            raise TransportError(f"{entry.name}: the version was read without signed URLs")
        final = root.joinpath(*PurePosixPath(check_name(entry.name)).parts)
        paths.append(final)
        if not _is_complete(final, entry):
            partials.append(_Partial(final, entry, chunk_size or chunk_for(entry.size)))
    todo = [(p, i) for p in partials for i in range(p.chunks) if i not in p.done]
    bar = progress_bar(sum(p.entry.size for p in partials), "download", progress)
    bar.update(sum(p.entry.size for p in partials)
               - sum(p.bounds(i)[1] + 1 - p.resume_at(i) for p, i in todo))
    sessions = _Session()
    stop = threading.Event()
    lock = threading.Lock()

    def tick(n: int) -> None:
        with lock:
            bar.update(n)

    try:
        _run_parallel([lambda p=p, i=i: _fetch_chunk(p, i, sessions, stop, tick)
                       for p, i in todo], workers, stop)
    finally:
        bar.close()
        for p in partials:
            os.close(p.fd)
    for p in partials:
        p.finish()
    return paths


def _fetch_chunk(p: _Partial, index: int, sessions: _Session, stop: threading.Event,
                 tick: Callable[[int], None]) -> None:
    """GET one chunk by Range, asking again from where a cut body stopped.

    Progress is logged every ``MARK`` bytes, so a killed process resumes mid-chunk.
    """
    end = p.bounds(index)[1]
    pos = marked = p.resume_at(index)
    failures = 0
    while pos <= end and not stop.is_set():
        try:
            resp = sessions.session.get(p.entry.url, headers={"Range": f"bytes={pos}-{end}"},
                                        stream=True, timeout=TIMEOUT)
            with resp:
                _check_range(resp, p.entry, pos, end)
                for block in resp.iter_content(BLOCK):
                    block = block[: end + 1 - pos]
                    os.pwrite(p.fd, block, pos)
                    pos += len(block)
                    tick(len(block))
                    if pos - marked >= MARK and pos <= end:
                        p.mark(index, pos)
                        marked = pos
                    if pos > end or stop.is_set():
                        break
        except (requests.RequestException, _Retry) as exc:
            failures += 1
            if failures >= RETRIES:
                raise TransportError(f"GET {p.entry.name} bytes {pos}-{end}: {exc}") from exc
            time.sleep(0.05 * failures)
            continue
        if pos <= end and not stop.is_set():
            failures += 1  # the body ended early without an error: ask for the rest
            if failures >= RETRIES:
                raise TransportError(f"GET {p.entry.name}: body ended at byte {pos} of {end}")
    if pos > end:
        p.mark(index)


class _Retry(Exception):
    """A data-plane reply worth asking again (5xx)."""


def _check_range(resp: requests.Response, entry: FileEntry, start: int, end: int) -> None:
    """Accept 206 for exactly the asked range, or 200 when the whole file was asked."""
    if resp.status_code == 206:
        got = resp.headers.get("Content-Range", "")
        if not got.startswith(f"bytes {start}-"):
            raise TransportError(f"GET {entry.name}: asked bytes {start}-{end}, got {got!r}")
        return
    if resp.status_code == 200 and start == 0 and end == entry.size - 1:
        return
    if resp.status_code >= 500:
        raise _Retry(f"HTTP {resp.status_code}")
    if resp.status_code >= 400:
        raise _data_plane_error(f"GET {entry.name}", resp)
    raise TransportError(f"GET {entry.name}: HTTP {resp.status_code} for a ranged GET "
                         "(the server ignores Range)", status=resp.status_code)


__all__ = ["LocalFile", "Source", "WORKERS", "chunk_for", "collect", "download", "hash_files",
           "progress_bar", "upload"]
