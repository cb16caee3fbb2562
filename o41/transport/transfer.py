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
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from pathlib import Path, PurePosixPath
from typing import IO

from tqdm import tqdm

from o41.errors import IntegrityError, TransportError
from o41.local import WORKERS, LocalFile, Source, check_name, collect, hash_files
from o41.models import FileEntry
from o41.transport import retry
from o41.transport.buffers import zeroed
from o41.transport.inorder import InOrderHash, ReadBack
from o41.transport.put import check_answer, put_path_hashed, put_retried
from o41.transport.signed import Connections, RangeReply, Retry, data_plane_error

MIN_CHUNK = 1024 * 1024
MAX_CHUNK = 128 * 1024 * 1024
BLOCK = 1024 * 1024
MARK = 1024 * 1024
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
    """PUT every file to its signed URL in parallel (files by ``sendfile``), each tried
    again under the retry policy."""
    conns = Connections()
    stop = threading.Event()
    lock = threading.Lock()
    bar = progress_bar(sum(f.size for f in files), "upload", progress)

    def tick(n: int) -> None:
        with lock:
            bar.update(n)

    def put_one(item: LocalFile) -> None:
        url = urls.get(item.name)
        if url is None:
            raise TransportError(f"the server gave no upload URL for {item.name}")
        body = item.data if item.data is not None else item.path
        assert body is not None
        if not stop.is_set():
            put_retried(conns, url, body, item.size, item.name, tick)

    try:
        _run_parallel([lambda f=f: put_one(f) for f in files], workers, stop)
    finally:
        bar.close()
        conns.close()


def upload_hashed(files: list[tuple[str, Path | bytes]], urls: Mapping[str, str], *,
                  workers: int = WORKERS, progress: bool | None = None) -> list[LocalFile]:
    """PUT files declared by name alone (VER-6) in parallel, each file's sha256 computed
    beside its ``sendfile`` PUT, not in a pass before it; every PUT's answer must be the
    size and sha256 the client computed (``IntegrityError`` otherwise). Returns the files
    with their size and sha256, in the order given, for the commit to list."""
    conns = Connections()
    stop = threading.Event()
    lock = threading.Lock()
    sent: dict[str, LocalFile] = {}
    total = sum(len(v) if isinstance(v, bytes) else v.stat().st_size for _, v in files)
    bar = progress_bar(total, "upload", progress)

    def tick(n: int) -> None:
        with lock:
            bar.update(n)

    def put_one(name: str, value: Path | bytes) -> None:
        url = urls.get(name)
        if url is None:
            raise TransportError(f"the server gave no upload URL for {name}")
        if stop.is_set():
            return
        if isinstance(value, bytes):
            size, sha256 = len(value), hashlib.sha256(value).hexdigest()
            answer = put_retried(conns, url, value, size, name, tick)
            done = LocalFile(name, size, sha256, data=value)
        else:
            answer, size, sha256 = put_path_hashed(url, value, conns, tick)
            done = LocalFile(name, size, sha256, path=value)
        check_answer(name, answer, size, sha256)
        with lock:
            sent[name] = done

    try:
        _run_parallel([lambda n=n, v=v: put_one(n, v) for n, v in files], workers, stop)
    finally:
        bar.close()
        conns.close()
    return [sent[name] for name, _ in files]


class _Partial:
    """The ``.o41part`` file, its chunk log and its running sha256, for one destination."""

    def __init__(self, final: Path, entry: FileEntry, chunk: int,
                 keep_logged: bool = True) -> None:
        self.final, self.entry = final, entry
        self.part = final.with_name(final.name + PART_SUFFIX)
        self.log = final.with_name(final.name + LOG_SUFFIX)
        self.chunk = self._logged_chunk() if keep_logged else None
        self.chunk = self.chunk or chunk
        self.header = json.dumps({"sha256": entry.sha256, "size": entry.size,
                                  "chunk": self.chunk})
        self.done, self.reached = self._read_log()
        final.parent.mkdir(parents=True, exist_ok=True)
        fresh = not self.done and not self.reached
        if fresh:
            self.log.write_text(self.header + "\n")
        if not self.part.exists() or fresh:
            with self.part.open("wb") as f:
                f.truncate(entry.size)
        self.fd = os.open(self.part, os.O_RDWR)
        self.log_fd = os.open(self.log, os.O_WRONLY | os.O_APPEND)
        self.hash = InOrderHash(self.fd, entry.size)
        for index in self.done:  # bytes an earlier run wrote are hashed from the disk
            start, end = self.bounds(index)
            self.hash.note(start, end + 1)
        for index in self.reached:
            if index not in self.done:
                self.hash.note(self.bounds(index)[0], self.resume_at(index))

    def _logged_chunk(self) -> int | None:
        """The range size an interrupted download of these same bytes used, if any."""
        try:
            with self.log.open() as f:
                head = json.loads(f.readline())
        except (OSError, ValueError):
            return None
        if not isinstance(head, dict) or (head.get("sha256"), head.get("size")) != (
                self.entry.sha256, self.entry.size):
            return None
        chunk = head.get("chunk")
        return chunk if isinstance(chunk, int) and chunk > 0 else None

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
        """Log chunk ``index`` as finished, or as written up to ``offset`` (exclusive).

        One ``write`` of a whole line on an ``O_APPEND`` descriptor: lines of several
        threads never interleave.
        """
        os.write(self.log_fd, (f"{index}\n" if offset is None else f"{index}@{offset}\n").encode())

    def close(self) -> None:
        """Close the part file and the log (again is a no-op)."""
        if self.fd >= 0:
            os.close(self.fd)
            os.close(self.log_fd)
            self.fd = self.log_fd = -1

    def finish(self, scratch: ReadBack) -> None:
        """Check size and sha256, then rename into place; a mismatch discards the bytes."""
        size = os.fstat(self.fd).st_size
        digest = self.hash.finish(scratch)
        self.close()
        if size != self.entry.size or digest != self.entry.sha256:
            self.discard()
            raise IntegrityError(
                f"{self.entry.name}: downloaded {size} bytes with sha256 {digest}, "
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


def chunk_for(total: int, workers: int = WORKERS) -> int:
    """Range size of a download of ``total`` bytes: about one range per worker, 1-128 MiB.

    Few, large ranges: every request costs the server far more than a MiB of ``sendfile``
    does, and a range that lands out of order is hashed by reading it back. A file smaller
    than the range is one range. Progress inside a range is logged every MiB, so a killed
    download still loses little; a resumed one keeps the range size its log names.
    """
    return min(MAX_CHUNK, max(MIN_CHUNK, -(-total // max(1, workers))))


class _Buffers(threading.local):
    """Each worker's reused receive buffer (and a second one to read back for hashing,
    made only if a block lands out of order)."""

    def __init__(self) -> None:
        self.recv = memoryview(zeroed(BLOCK))
        self.scratch = ReadBack()


def download(entries: Iterable[FileEntry], dest: str | os.PathLike[str], *,
             workers: int = WORKERS, chunk_size: int | None = None,
             progress: bool | None = None) -> list[Path]:
    """Download files by parallel ranged GETs into ``dest``, resuming and verifying each."""
    root = Path(dest)
    wanted: list[tuple[Path, FileEntry]] = []
    paths: list[Path] = []
    for entry in entries:
        if not entry.url:
            raise TransportError(f"{entry.name}: the version was read without signed URLs")
        final = root.joinpath(*PurePosixPath(check_name(entry.name)).parts)
        paths.append(final)
        if not _is_complete(final, entry):
            wanted.append((final, entry))
    chunk = chunk_size or chunk_for(sum(e.size for _, e in wanted), workers)
    partials = [_Partial(final, entry, chunk, keep_logged=chunk_size is None)
                for final, entry in wanted]
    # Chunk 0 of every file first, then chunk 1...: the threads spread over the files and
    # each file's chunks tend to land in order, at its hash frontier.
    todo = sorted(((p, i) for p in partials for i in range(p.chunks) if i not in p.done),
                  key=lambda t: t[1])
    bar = progress_bar(sum(p.entry.size for p in partials), "download", progress)
    bar.update(sum(p.entry.size for p in partials)
               - sum(p.bounds(i)[1] + 1 - p.resume_at(i) for p, i in todo))
    conns, buffers = Connections(), _Buffers()
    stop = threading.Event()
    lock = threading.Lock()

    def tick(n: int) -> None:
        with lock:
            bar.update(n)

    try:
        _run_parallel([lambda p=p, i=i: _fetch_chunk(p, i, conns, buffers, stop, tick)
                       for p, i in todo], workers, stop)
        for p in partials:
            p.finish(buffers.scratch)
    finally:
        bar.close()
        conns.close()
        for p in partials:
            p.close()
    return paths


def _fetch_chunk(p: _Partial, index: int, conns: Connections, buffers: _Buffers,
                 stop: threading.Event, tick: Callable[[int], None]) -> None:
    """GET one chunk by Range into the thread's buffer, asking again from where a cut body
    stopped. Each block is written at its offset and hashed if it is next in line.

    Progress is logged every ``MARK`` bytes, so a killed process resumes mid-chunk.
    """
    end = p.bounds(index)[1]
    pos = marked = p.resume_at(index)
    tries = retry.attempts("GET", p.entry.name)
    view, scratch = buffers.recv[:BLOCK], buffers.scratch
    while pos <= end and not stop.is_set():
        try:
            reply = RangeReply(conns, p.entry.url or "", pos, end)
            _check_range(reply, p.entry, pos, end)
            while pos <= end and not stop.is_set():
                n = reply.readinto(view[: min(len(view), end + 1 - pos)])
                if n == 0:
                    break
                _pwrite_all(p.fd, view[:n], pos)
                p.hash.written(pos, view[:n], scratch)
                pos += n
                tick(n)
                if pos - marked >= MARK and pos <= end:
                    p.mark(index, pos)
                    marked = pos
            if pos > end:
                reply.finish()
            else:
                reply.abandon()
                if not stop.is_set():
                    raise Retry(f"body ended at byte {pos} of {end + 1}")
        except Retry as exc:
            if marked < pos <= end:  # what arrived before the cut is on disk: a kill keeps it
                p.mark(index, pos)
                marked = pos
            error = (TransportError(str(exc), status=exc.status) if exc.status else
                     TransportError(f"GET {p.entry.name} bytes {pos}-{end}: {exc}"))
            tries.after(exc.status, exc.retry_after, error)
    if pos > end:
        p.mark(index)


def _pwrite_all(fd: int, data: memoryview, offset: int) -> None:
    while data:
        n = os.pwrite(fd, data, offset)
        data, offset = data[n:], offset + n


def _check_range(reply: RangeReply, entry: FileEntry, start: int, end: int) -> None:
    """Accept 206 for exactly the asked range, or 200 when the whole file was asked."""
    status = reply.status
    if status == 206:
        got = reply.header("Content-Range")
        if not got.startswith(f"bytes {start}-"):
            reply.abandon()
            raise TransportError(f"GET {entry.name}: asked bytes {start}-{end}, got {got!r}")
        return
    if status == 200 and start == 0 and end == entry.size - 1:
        return
    body = reply.body()
    if status >= 400:
        raise Retry(str(data_plane_error(f"GET {entry.name}", status, body)), status,
                    reply.header("Retry-After") or None)
    raise TransportError(f"GET {entry.name}: HTTP {status} for a ranged GET "
                         "(the server ignores Range)", status=status)


__all__ = ["LocalFile", "Source", "WORKERS", "chunk_for", "collect", "download", "hash_files",
           "progress_bar", "upload", "upload_hashed"]
