"""The multi-request steps tests share to build state: files and their specs, uploads,
checkpoints, downloads (whole or by ranges), boxes (an open's holder, place, token, epoch),
raw opens, a version in each cloud, a box and a reader elsewhere.

Each step checks its own replies under the rule it relies on (checks.py), so a failing
step reports the broken rule id.
"""

from __future__ import annotations

import hashlib
import random
import re
import secrets
from collections.abc import Iterator
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any

from conformance.checks import expect_ok
from conformance.client import Client
from conformance.client import Reply
from conformance.model import UNKNOWN_PLACE
from conformance.model import FileSpec
from conformance.model import Place
from conformance.model import Topology
from conformance.names import edge_name
from conformance.rules import check

if TYPE_CHECKING:
    from conformance.env import Env

__all__ = [
    "Box", "Upload", "a_box_and_a_reader_elsewhere", "a_version_in_each_cloud", "checkpoint",
    "commit_ok", "download", "edge_box", "file_specs", "make_files", "open_box", "open_raw",
    "ranges", "sha256", "start_upload", "two_clouds",
]

_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def make_files(sizes: Mapping[str, int], seed: int = 0) -> dict[str, bytes]:
    """Deterministic pseudo-random file contents (reproducible from the seed)."""
    rng = random.Random(seed)
    return {name: rng.randbytes(size) for name, size in sizes.items()}


def file_specs(files: Mapping[str, bytes]) -> list[FileSpec]:
    return [FileSpec(name, len(data), sha256(data)) for name, data in files.items()]


@dataclass
class Upload:
    """A started upload: the write's reply and, when it was accepted, the upload id."""

    write: Reply
    files: dict[str, bytes]

    @property
    def upload_id(self) -> str | None:
        return str(self.write.body["upload"]) if self.write.ok else None


def start_upload(
    api: Client,
    artifact: str,
    token: str,
    version: str,
    files: Mapping[str, bytes],
    *,
    put: bool = True,
) -> Upload:
    """``/versions/write`` then, if accepted and ``put``, PUT every file to its URL."""
    specs = [f.as_json() for f in file_specs(files)]
    reply = api.write(artifact, token, version, specs)
    up = Upload(reply, dict(files))
    if reply.ok and put:
        body = expect_ok(reply, "VER-4", "write")
        urls = {f["name"]: f["url"] for f in body.get("files", [])}
        check(set(urls) == set(files), "VER-4", f"write returned URLs for {sorted(urls)}")
        for name, data in files.items():
            res = api.put(urls[name], data)
            check(res.ok, "VER-4", f"PUT of {name} ({len(data)} bytes) got {res.status}")
    return up


def checkpoint(
    api: Client, artifact: str, token: str, version: str, files: Mapping[str, bytes]
) -> Reply:
    """Write, upload and commit one version; the commit's reply (or the refused write's)."""
    up = start_upload(api, artifact, token, version, files)
    if up.upload_id is None:
        return up.write
    return api.commit(artifact, token, up.upload_id)


def ranges(size: int, parts: int) -> list[tuple[int, int]]:
    """Split ``size`` bytes into at most ``parts`` inclusive ranges."""
    parts = max(1, min(parts, size))
    step = -(-size // parts)
    return [(a, min(a + step, size) - 1) for a in range(0, size, step)]


def _get_range(api: Client, url: str, a: int, b: int, size: int) -> bytes:
    res = api.fetch(url, byte_range=(a, b))
    check(res.status == 206, "READ-3", f"GET Range bytes={a}-{b} got {res.status}, not 206")
    m = _CONTENT_RANGE.fullmatch(res.headers.get("Content-Range", ""))
    check(
        m is not None and (int(m[1]), int(m[2])) == (a, b) and m[3] in (str(size), "*"),
        "READ-3",
        f"Range bytes={a}-{b} of {size} answered Content-Range "
        f"{res.headers.get('Content-Range')!r}",
    )
    check(len(res.content) == b - a + 1, "READ-3", f"Range bytes={a}-{b} sent {len(res.content)}")
    return res.content


def download(api: Client, version: Mapping[str, Any], parts: int = 1) -> dict[str, bytes]:
    """Fetch every file of a Version-with-urls: one plain GET each, or ``parts`` parallel
    ranged GETs reassembled (the page's cross-cloud resume); checks sizes and sha256."""
    out: dict[str, bytes] = {}
    for f in version["files"]:
        name, size, url = f["name"], int(f["size"]), f.get("url")
        check(url, "READ-2", f"file {name} of {version.get('version')} has no url")
        if parts <= 1 or size == 0:
            res = api.fetch(url)
            check(res.status == 200, "READ-2", f"plain GET of {name} got {res.status}")
            data, rule = res.content, "READ-2"
        else:
            spans = ranges(size, parts)
            with ThreadPoolExecutor(max_workers=min(len(spans), 8)) as pool:
                futures = [pool.submit(_get_range, api, url, a, b, size) for a, b in spans]
                chunks = [fut.result() for fut in futures]
            data, rule = b"".join(chunks), "READ-3"
        check(len(data) == size, rule, f"{name}: got {len(data)} bytes, version says {size}")
        check(sha256(data) == f["sha256"], rule, f"{name}: bytes do not match the sha256")
        out[name] = data
    return out


@dataclass
class Box:
    """One training box: its holder id, place, and the token and epoch of its open."""

    holder: str
    artifact: str
    place: Place | None
    token: str
    epoch: int
    opened: dict[str, Any]


def open_box(
    api: Client,
    artifact: str,
    holder: str,
    place: Place | str | None = None,
    resume: str | None = "latest",
    rule: str = "OPEN-1",
) -> Box:
    """Open ``artifact`` for ``holder``; a violation of ``rule`` unless it succeeds."""
    if isinstance(place, str):
        place = Place.parse(place)
    body = expect_ok(api.open(artifact, resume, place, holder), rule, f"open by {holder}")
    check(isinstance(body.get("token"), str), rule, f"open returned token {body.get('token')!r}")
    check(isinstance(body.get("epoch"), int), rule, f"open returned epoch {body.get('epoch')!r}")
    return Box(holder, artifact, place, body["token"], body["epoch"], body)


def commit_ok(
    api: Client, box: Box, version: str, files: Mapping[str, bytes], rule: str = "VER-4"
) -> dict[str, Any]:
    """Checkpoint ``version`` from ``box``; a violation of ``rule`` unless it commits."""
    reply = checkpoint(api, box.artifact, box.token, version, files)
    return expect_ok(reply, rule, f"checkpoint {version} by {box.holder}")


def a_version_in_each_cloud(
    env: Env, api: Client, slug: str, sizes: Mapping[str, int], seed: int, rule: str
) -> Iterator[tuple[str, Place, str]]:
    """For each cloud in turn, a new artifact ``{slug}-{cloud}`` holding ``step-00000001``,
    committed from the cloud's default location: yields (cloud, that location, artifact)."""
    topo = env.topology
    for cloud in topo.clouds:
        home = topo.default_for(cloud)
        assert home is not None
        name = env.artifact(f"{slug}-{cloud}")
        commit_ok(api, open_box(api, name, "box-a", home), "step-00000001",
                  make_files(sizes, seed), rule)
        yield cloud, home, name


def edge_box(
    api: Client, prefix: str, slug: str, place: Place | str | None = None, holder: str = "box-a"
) -> Box:
    """A box holding a fresh artifact with an :func:`edge_name` (a random salt keeps names
    of reruns against one target apart)."""
    return open_box(api, edge_name(prefix, slug, secrets.token_hex(3)), holder, place)


def open_raw(
    api: Client,
    artifact: str,
    resume: str | None = "latest",
    place: dict[str, Any] | None = None,
    holder: str | None = None,
) -> Reply:
    """An open whose place is sent exactly as given (e.g. ``{"cloud": "GCP", ...}``)."""
    body: dict[str, Any] = {"artifact": artifact, "resume": resume, "place": place}
    if holder is not None:
        body["holder"] = holder
    return api.call("POST", "/artifacts/open", body=body)


def two_clouds(env: Env) -> Topology:
    """The target's topology; a skip when all its locations are in one cloud."""
    topo = env.topology
    if len(topo.clouds) < 2:
        import pytest

        pytest.skip("the target has locations in one cloud only")
    return topo


def a_box_and_a_reader_elsewhere(env: Env, api: Client, slug: str) -> tuple[Place, Place, Box]:
    """A new artifact opened at the target's first location: that location, a reader in
    another cloud (an unknown place when there is none), and the box."""
    topo = env.topology
    home = topo.locations[0]
    reader = next((p for p in topo.locations if p.cloud != home.cloud), UNKNOWN_PLACE)
    return home, reader, open_box(api, env.artifact(slug), "box-a", home)
