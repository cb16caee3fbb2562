"""The data plane: signed URLs served by the emulator itself, metered byte by byte.

GET/HEAD honour one `Range: bytes=a-b` (parsed by werkzeug); PUT streams the body to
storage through a hashing, size-limiting reader. Memory stays bounded by the chunk size.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import BinaryIO

from flask import Blueprint, Response, current_app, g, jsonify, request

from .. import db, usage
from ..backend import Backend
from ..errors import NotFound, PayloadTooLarge, RangeNotSatisfiable, VersionExists
from ..storage import ObjectMissing, TooLarge

bp = Blueprint("data", __name__)


def backend() -> Backend:
    return current_app.extensions["o41"]


def _byte_range(size: int) -> tuple[int, int] | None:
    """(start, stop) of the one requested range, None for the whole object."""
    if "Range" not in request.headers or "range-ignored" in backend().faults:
        return None
    rng = request.range
    if rng is None or rng.units != "bytes" or len(rng.ranges) != 1:
        raise RangeNotSatisfiable("Range must be one 'bytes=a-b' range", size)
    span = rng.range_for_length(size)
    if span is None:
        raise RangeNotSatisfiable(f"Range {request.headers['Range']} is outside {size} bytes", size)
    return span


def _metered(be: Backend, chunks: Iterator[bytes], meta: dict, location_id: str) -> Iterator[bytes]:
    """Yield the body and record the bytes actually sent, even when the client hangs up."""
    # Runs after the view returned, outside the app context: hence the explicit backend.
    sent = 0
    try:
        for chunk in chunks:
            yield chunk
            sent += len(chunk)
    finally:
        usage.record(be, "read", meta["a"], meta["v"], location_id, meta.get("r"), sent)


def _cut(chunks: Iterator[bytes], limit: int) -> Iterator[bytes]:
    """A chaos rule's cut: send `limit` bytes, then drop the connection mid-body."""
    for chunk in chunks:
        if len(chunk) >= limit:
            if limit:
                yield chunk[:limit]
            raise ConnectionAbortedError("body cut by a chaos rule")
        limit -= len(chunk)
        yield chunk


@bp.route("/data/<cloud>/<region>/<path:key>", methods=["GET", "HEAD"])
def get_object(cloud: str, region: str, key: str) -> Response:
    be = backend()
    meta = be.signer.verify(request.method, request.path, request.args.get("sig"))
    location_id = f"{cloud}/{region}"
    loc = be.location(location_id)
    try:
        size = be.storage.size(loc.bucket, key)
    except ObjectMissing:
        raise NotFound("object does not exist") from None
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
    g.log = (f"{meta['a']} {meta['v']}", f"{start}-{stop} of {size} bytes")
    if request.method == "HEAD":
        return Response(status=status, headers=headers)
    chunks = be.storage.read(loc.bucket, key, start, stop - start)
    cut = g.get("cut_after_bytes")
    if cut is not None:
        chunks = _cut(chunks, cut)
    body = _metered(be, chunks, meta, location_id)
    return Response(body, status=status, headers=headers, direct_passthrough=True)


class _Receiving:
    """A file-like over the request body that hashes, counts and refuses excess bytes."""

    def __init__(self, stream: BinaryIO, limit: int, chunk: int) -> None:
        self.stream, self.limit, self.chunk = stream, limit, chunk
        self.size = 0
        self.sha = hashlib.sha256()

    def read(self, n: int = -1) -> bytes:
        data = self.stream.read(n if n and n > 0 else self.chunk)
        self.size += len(data)
        if self.size > self.limit:
            raise TooLarge()
        self.sha.update(data)
        return data


@bp.put("/data/<cloud>/<region>/<path:key>")
def put_object(cloud: str, region: str, key: str) -> Response:
    be = backend()
    meta = be.signer.verify("PUT", request.path, request.args.get("sig"))
    loc = be.location(f"{cloud}/{region}")
    conn = be.conn()
    up = conn.execute("SELECT state FROM uploads WHERE id = ?", (meta["u"],)).fetchone()
    if up is None:
        raise NotFound("upload does not exist")
    if up["state"] != "open":
        raise VersionExists("this upload is already committed")
    declared = int(meta["s"])
    too_long = PayloadTooLarge(f"{meta['f']} was declared as {declared} bytes; body is longer")
    if request.content_length is not None and request.content_length > declared:
        raise too_long
    reader = _Receiving(request.stream, declared, be.settings.chunk_size)
    try:
        be.storage.put(loc.bucket, key, reader)
    except TooLarge:
        raise too_long from None
    digest = reader.sha.hexdigest()
    with db.transaction(conn):
        conn.execute(
            "UPDATE upload_files SET received_size = ?, received_sha256 = ? "
            "WHERE upload_id = ? AND name = ?",
            (reader.size, digest, meta["u"], meta["f"]),
        )
    usage.record(be, "write", meta["a"], meta["v"], loc.id, meta.get("r"), reader.size)
    g.log = (f"{meta['a']} {meta['v']} {meta['f']}", f"{reader.size} bytes")
    resp = jsonify({"name": meta["f"], "size": reader.size, "sha256": digest})
    resp.headers["ETag"] = f'"{digest}"'
    return resp
