"""Steps of uploads with many writers (VER-5) and of streamed files (VER-6), and the checks
the tests of both share: a write that joins an upload, PUTs that answer what they received,
the list a commit gives, and a committed version read back file by file.

A second writer can run in another process (:func:`write_in_process`): the ranks of one job
hold one token, and nothing but the token and the upload id passes between them.
"""

from __future__ import annotations

import multiprocessing
import queue
import time
from collections.abc import Mapping
from typing import Any

from conformance.actions import download
from conformance.actions import sha256
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.client import Reply
from conformance.rules import check
from conformance.rules import check_equal

__all__ = [
    "declared",
    "expect_put_answer",
    "expect_version_files",
    "listing",
    "put_files",
    "streamed",
    "urls_of",
    "write_in_process",
]


def declared(files: Mapping[str, bytes]) -> list[dict[str, Any]]:
    """Files declared with their size and sha256 (VER-4)."""
    return [{"name": n, "size": len(d), "sha256": sha256(d)} for n, d in files.items()]


def streamed(names: list[str] | Mapping[str, bytes]) -> list[dict[str, Any]]:
    """Files declared by name alone (VER-6)."""
    return [{"name": n} for n in names]


def listing(files: Mapping[str, bytes]) -> list[dict[str, Any]]:
    """A commit's ``files``: each file with the size and sha256 of its bytes."""
    return declared(files)


def urls_of(reply: Reply, clause: str, what: str) -> dict[str, str]:
    """The write's PUT URLs by file name (a violation of ``clause`` unless it succeeded)."""
    body = expect_ok(reply, clause, what)
    files = body.get("files")
    check(isinstance(files, list), clause, f"{what}: files is {files!r}")
    return {str(f.get("name")): str(f.get("url")) for f in files if isinstance(f, dict)}


def expect_put_answer(reply: Reply, name: str, data: bytes, clause: str, what: str) -> None:
    """A streamed file's PUT answers 200 (2xx) ``{name, size, sha256}`` of what it sent."""
    check(reply.ok, clause, f"{what}: PUT of {name} ({len(data)} bytes) got {reply.brief()}")
    body = reply.body if isinstance(reply.body, dict) else {}
    got = {k: body.get(k) for k in ("name", "size", "sha256")}
    check_equal(got, {"name": name, "size": len(data), "sha256": sha256(data)}, clause,
                f"{what}: the answer of the PUT of {name}")


def put_files(api: Client, urls: Mapping[str, str], files: Mapping[str, bytes], clause: str,
              what: str) -> None:
    """PUT each file to its URL; each must be accepted."""
    for name, data in files.items():
        check(name in urls, clause, f"{what}: no PUT URL for {name} in {sorted(urls)}")
        reply = api.put(urls[name], data)
        check(reply.ok, clause, f"{what}: PUT of {name} ({len(data)} bytes) got {reply.brief()}")


def expect_version_files(
    api: Client, artifact: str, version: str, files: Mapping[str, bytes], clause: str, what: str
) -> dict[str, Any]:
    """``version`` is committed with exactly ``files``: names, sizes, sha256 and bytes."""
    body = expect_ok(api.read(artifact, version, urls=True), clause, f"{what}: read {version}")
    got = {f.get("name"): (f.get("size"), f.get("sha256")) for f in body.get("files") or []}
    want = {n: (len(d), sha256(d)) for n, d in files.items()}
    check_equal(got, want, clause, f"{what}: files of {version}")
    check_equal(download(api, body), dict(files), clause, f"{what}: bytes of {version}")
    return body


# --- a writer in another process --------------------------------------------------------------


def _rank(base: str, key: str, request: dict[str, Any], files: dict[str, bytes],
          out: Any) -> None:
    """In the child: one write into the upload, then a PUT of each of its files."""
    api = Client(base, key)
    reply = api.call("POST", "/versions/write", body=request)
    result: dict[str, Any] = {"status": reply.status, "body": reply.body, "puts": {}}
    if reply.ok and isinstance(reply.body, dict):
        urls = {f["name"]: f["url"] for f in reply.body.get("files") or []}
        for name, data in files.items():
            if name in urls:
                result["puts"][name] = api.put(urls[name], data).status
    out.put(result)


def write_in_process(
    api: Client, artifact: str, token: str, version: str, upload: str,
    files: Mapping[str, bytes], timeout: float = 120.0,
) -> dict[str, Any]:
    """Write ``files`` into ``upload`` and PUT them from another process holding the same
    token (another rank of the job); its write's status and body, and each PUT's status."""
    request = {"artifact": artifact, "token": token, "version": version,
               "files": declared(files), "upload": upload}
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    proc = ctx.Process(target=_rank, args=(api.base, api.key, request, dict(files), out),
                       daemon=True)
    proc.start()
    result: dict[str, Any] | None = None
    try:
        deadline = time.monotonic() + timeout
        while result is None and time.monotonic() < deadline:
            try:
                result = out.get(timeout=0.5)
            except queue.Empty:
                if not proc.is_alive() and out.empty():
                    break  # the child died without an answer
    finally:
        proc.join(timeout=5)
        if proc.is_alive():
            proc.kill()
    if result is None:
        raise RuntimeError(f"the writer process ended ({proc.exitcode}) without an answer")
    api.trail.add(f"(another process) POST /versions/write upload={upload} files="
                  f"{sorted(files)} -> {result['status']}, PUTs {result['puts']}")
    return result
