"""The data plane: signed URLs served by the emulator itself, metered byte by byte.

GET/HEAD honour one `Range: bytes=a-b` (parsed by werkzeug); PUT streams the body to
storage through a hashing, size-limiting reader. Memory stays bounded by the chunk size.
On folder storage a GET hands the server the file itself (`wsgi.file_wrapper`), so gunicorn
sends the range with sendfile() and no byte of it passes through Python.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import BinaryIO

from flask import Blueprint, Response, g, jsonify, request
from werkzeug.wsgi import wrap_file

from ..core.errors import NotFound, PayloadTooLarge, RangeNotSatisfiable
from ..rules import uploads, usage
from ..rules.filelists import STREAMED
from ..state.backend import Backend
from ..storage import ObjectMissing, TooLarge
from .context import apply_chaos, backend

bp = Blueprint("data", __name__)

#: Chunks at least this big are hashed on a helper thread; smaller ones inline.
BACKGROUND_HASH_MIN = 256 << 10


def _byte_range(size: int) -> tuple[int, int] | None:
    """(start, stop) of the one requested range, None for the whole object."""
    if "Range" not in request.headers or not backend().policy.ranges_honoured:
        return None
    rng = request.range
    if rng is None or rng.units != "bytes" or len(rng.ranges) != 1:
        raise RangeNotSatisfiable("Range must be one 'bytes=a-b' range", size)
    span = rng.range_for_length(size)
    if span is None:
        raise RangeNotSatisfiable(f"Range {request.headers['Range']} is outside {size} bytes", size)
    return span


def _metered(chunks: Iterator[bytes], done: Callable[[int], None]) -> Iterator[bytes]:
    """Yield the body, then report the bytes actually sent, even when the client hangs up."""
    sent = 0
    try:
        for chunk in chunks:
            yield chunk
            sent += len(chunk)
    finally:
        done(sent)


def _cut(chunks: Iterator[bytes], limit: int) -> Iterator[bytes]:
    """A chaos rule's cut: send `limit` bytes, then drop the connection mid-body."""
    for chunk in chunks:
        if len(chunk) >= limit:
            if limit:
                yield chunk[:limit]
            raise ConnectionAbortedError("body cut by a chaos rule")
        limit -= len(chunk)
        yield chunk


class _MeteredFile:
    """One byte range of a stored file, for `wsgi.file_wrapper`, metered once when done.

    gunicorn sends it with socket.sendfile(), which seeks the file to just after the last
    byte that left (even when the client hangs up); other servers read() it chunk by chunk,
    and a chunk counts once the server asks for the next. Either way only bytes actually
    sent are recorded, at the end of the range or when the server closes the response.
    """

    mode = "rb"  # socket.sendfile() refuses file objects without "b" in their mode

    def __init__(self, fh: BinaryIO, start: int, length: int, done: Callable[[int], None]):
        fh.seek(start)
        self.fh, self.start, self.stop = fh, start, start + length
        self._sent_to = start  # furthest position reported by socket.sendfile()
        self._pending = 0  # the last chunk read(), not yet known to be sent
        self._done: Callable[[int], None] | None = done

    def fileno(self) -> int:
        return self.fh.fileno()

    def tell(self) -> int:
        return self.fh.tell()

    def seek(self, pos: int, whence: int = 0) -> int:
        pos = self.fh.seek(pos, whence)
        self._sent_to = max(self._sent_to, pos)
        return pos

    def read(self, n: int | None = -1) -> bytes:
        if self._done is None:  # metered and closed already: the range is over
            return b""
        self._pending = 0  # asked for more: the previous chunk was sent
        left = self.stop - self.fh.tell()
        data = self.fh.read(left if n is None or n < 0 or n > left else n) if left > 0 else b""
        if not data:
            self.close()
        self._pending = len(data)
        return data

    def close(self) -> None:
        if self._done is None:
            return
        done, self._done = self._done, None
        reached = max(self._sent_to, self.fh.tell() - self._pending)
        self.fh.close()
        done(min(max(reached - self.start, 0), self.stop - self.start))


@bp.route("/data/<cloud>/<region>/<path:key>", methods=["GET", "HEAD"])
def get_object(cloud: str, region: str, key: str) -> Response:
    be = backend()
    meta = be.signer.verify(request.method, request.path, request.args.get("sig"))
    apply_chaos(be, "data/get")
    location_id = f"{cloud}/{region}"
    loc = be.location(location_id)
    cut = g.get("cut_after_bytes")
    open_file = getattr(be.storage, "open_file", None)
    fh: BinaryIO | None = None
    try:  # a stored file is opened once, and its size read from the open file
        if open_file is not None and cut is None:
            fh = open_file(loc.bucket, key)
            size = os.fstat(fh.fileno()).st_size
        else:
            size = be.storage.size(loc.bucket, key)
    except ObjectMissing:
        raise NotFound("object does not exist") from None
    try:
        return _serve(be, meta, location_id, loc.bucket, key, size, fh, cut)
    except BaseException:
        if fh is not None and not fh.closed:
            fh.close()
        raise


def _serve(be: Backend, meta: dict, location_id: str, bucket: str, key: str, size: int,
           fh: BinaryIO | None, cut: int | None) -> Response:
    """The GET or HEAD of one object of ``size`` bytes: ``fh`` is its open file when the
    server can send it itself, else the storage's chunks are streamed."""
    span = _byte_range(size)
    start, stop = span if span else (0, size)
    headers = {
        "Accept-Ranges": "bytes",
        "Content-Length": str(stop - start),
        "Content-Type": "application/octet-stream",
    }
    status = 200
    if span:
        status = 206
        headers["Content-Range"] = f"bytes {start}-{stop - 1}/{size}"
    # Inclusive end, as in HTTP ranges: bytes 0-299999 of 300000.
    span_text = f"{start}-{stop - 1}" if stop > start else "none"
    g.log = (f"{meta['a']} {meta['v']}", f"{span_text} of {size} bytes")
    if request.method == "HEAD":
        if fh is not None:
            fh.close()
        return Response(status=status, headers=headers)
    # The whole range is metered before its first byte leaves, and corrected down if fewer
    # bytes went out: a client that has every byte and then reads usage must find them.
    expected = stop - start
    usage.record(be, "read", meta["a"], meta["v"], location_id, meta.get("r"), expected)

    def done(sent: int) -> None:  # runs after the view, outside the app context
        usage.record(be, "read", meta["a"], meta["v"], location_id, meta.get("r"), sent - expected)
        be.release()  # after the request's own release: the pool gets it back now

    be.release()  # and none is held while the body streams

    if fh is not None:
        ranged = _MeteredFile(fh, start, stop - start, done)
        body = wrap_file(request.environ, ranged, be.settings.chunk_size)
        return Response(body, status=status, headers=headers, direct_passthrough=True)
    chunks = be.storage.read(bucket, key, start, stop - start)
    if cut is not None:
        chunks = _cut(chunks, cut)
    return Response(_metered(chunks, done), status=status, headers=headers,
                    direct_passthrough=True)


class _Receiving:
    """A file-like over the request body that hashes, counts and refuses excess bytes.

    Big chunks are hashed on a helper thread while the caller stores them and receives the
    next (hashlib and socket reads both release the GIL), so one upload can use two cores.
    A buffer passed to readinto() is never refilled while it is still being hashed.
    """

    def __init__(self, stream: BinaryIO, limit: int, chunk: int) -> None:
        self.stream, self.limit, self.chunk = stream, limit, chunk
        self.size = 0
        self._sha = hashlib.sha256()
        self._pool: ThreadPoolExecutor | None = None
        self._hashing: Future | None = None
        self._hashing_buffer: object = None

    def read(self, n: int = -1) -> bytes:
        data = self.stream.read(n if n and n > 0 else self.chunk)
        self._take(data)
        return data

    def readinto(self, buf: memoryview) -> int:
        """Fill `buf` straight from the body where the server allows it (no copy)."""
        if memoryview(buf).obj is self._hashing_buffer:
            self._wait()
        readinto = getattr(self.stream, "readinto", None)
        if readinto is not None:
            n = readinto(buf)
        else:
            data = self.stream.read(len(buf))
            n = len(data)
            buf[:n] = data
        self._take(memoryview(buf)[:n])
        return n

    def _take(self, data: bytes | memoryview) -> None:
        self.size += len(data)
        if self.size > self.limit:
            raise TooLarge()
        self._wait()
        if len(data) < BACKGROUND_HASH_MIN:
            self._sha.update(data)
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="o41-sha256")
        self._hashing = self._pool.submit(self._sha.update, data)
        self._hashing_buffer = data.obj if isinstance(data, memoryview) else None

    def _wait(self) -> None:
        if self._hashing is not None:
            hashing, self._hashing, self._hashing_buffer = self._hashing, None, None
            hashing.result()

    def hexdigest(self) -> str:
        self._wait()
        return self._sha.hexdigest()

    def close(self) -> None:
        """Wait for the hashing thread and stop it (also after errors)."""
        try:
            self._wait()
        finally:
            if self._pool is not None:
                self._pool.shutdown()


@bp.put("/data/<cloud>/<region>/<path:key>")
def put_object(cloud: str, region: str, key: str) -> Response:
    """Store one file's body; the rules decide whether it may still become visible."""
    be = backend()
    meta = be.signer.verify("PUT", request.path, request.args.get("sig"))
    apply_chaos(be, "data/put")
    loc = be.location(f"{cloud}/{region}")
    declared = int(meta["s"])
    if declared == STREAMED:  # VER-6: any length up to the limit, told in the answer
        limit = be.settings.max_file_size
        too_long = PayloadTooLarge(f"{meta['f']} is streamed; its body is over the limit "
                                   f"of {limit} bytes, and nothing was replaced")
    else:
        limit = declared
        too_long = PayloadTooLarge(f"{meta['f']} was declared as {declared} bytes; body is "
                                   "longer")
    if request.content_length is not None and request.content_length > limit:
        raise too_long
    reader = _Receiving(request.stream, limit, be.settings.chunk_size)
    try:
        size, digest = uploads.store_file(
            be, loc.bucket, meta["a"], meta["u"], meta["f"], reader, request.content_length
        )
    except TooLarge:
        raise too_long from None
    finally:
        reader.close()
    usage.record(be, "write", meta["a"], meta["v"], loc.id, meta.get("r"), size)
    g.log = (f"{meta['a']} {meta['v']} {meta['f']}", f"{size} bytes")
    resp = jsonify({"name": meta["f"], "size": size, "sha256": digest})
    resp.headers["ETag"] = f'"{digest}"'
    return resp
