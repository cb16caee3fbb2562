"""Several emulator processes on one storage: starting or resetting one never destroys what
another is writing or has written (docs/emulator.md, "Storage shared by many nodes").

On the s3 backend the nodes have separate data dirs (so separate SQLite metadata) and share
the S3 server and its buckets; on fs they share one data dir, hence its folders and metadata.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pytest

from tests.support.backends import BACKENDS, fresh_database
from tests.support.emulator_http import AWS, Box, sha
from tests.support.race_tools import RawPut

BIG = 32 << 20  # over the S3 backend's 16 MiB part size: its PUT is a multipart upload


class Nodes:
    """Emulator nodes on one shared storage, and a look into that storage."""

    def __init__(self, start, partial_writes, objects) -> None:
        self.start = start  # (*serve options) -> a started node
        self.partial_writes = partial_writes  # () -> how many writes are in flight there
        self.objects = objects  # (prefix) -> keys of the aws region's bucket under prefix


def fs_nodes(live_factory, shared: Path) -> Nodes:
    buckets = shared / "buckets"

    def objects(prefix: str) -> list[str]:
        return sorted(str(p.relative_to(bucket)) for bucket in buckets.glob("o41-aws-*")
                      for p in bucket.rglob("*") if p.is_file()
                      and str(p.relative_to(bucket)).startswith(prefix))

    one = fresh_database()  # under PostgreSQL both nodes share one schema, as one data dir
    common = ["--data-dir", str(shared), *(["--database", one] if one else [])]
    return Nodes(lambda *args: live_factory(*common, *args),
                 lambda: len(list((buckets / ".partial").iterdir())), objects)


def s3_nodes(live_factory, server, tmp_path: Path) -> Nodes:
    """Each node gets its own data dir (live_factory's), all share the server's buckets."""
    config = tmp_path / "buckets.toml"
    tag = uuid.uuid4().hex[:8]
    config.write_text("".join(
        f'[[locations]]\ncloud = "{c}"\nregion = "{r}"\nbucket = "nodes-{c}-{tag}"\n'
        for c, r in (("aws", "us-east-1"), ("gcp", "europe-west4"), ("azure", "westeurope"))
    ))
    client, bucket = server.boto3(), f"nodes-aws-{tag}"

    def objects(prefix: str) -> list[str]:
        listed = client.list_objects_v2(Bucket=bucket, Prefix=prefix)
        return sorted(o["Key"] for o in listed.get("Contents", []))

    return Nodes(lambda *args: live_factory(*server.serve_args(), "--config", str(config), *args),
                 lambda: len(client.list_multipart_uploads(Bucket=bucket).get("Uploads", [])),
                 objects)


@pytest.fixture(params=BACKENDS)
def nodes(request, live_factory, tmp_path) -> Nodes:
    if request.param == "fs":
        return fs_nodes(live_factory, tmp_path / "shared")
    return s3_nodes(live_factory, request.getfixturevalue("s3_server"), tmp_path)


def eventually(condition, what: str, within_s: float = 60) -> None:
    """Wait for `condition()` (a server getting to a point), failing after `within_s`."""
    deadline = time.monotonic() + within_s
    while not condition():
        assert time.monotonic() < deadline, f"never {what}"
        time.sleep(0.05)


def served_bytes(box: Box, version: str) -> bytes:
    read = box.read(version)
    assert read.status == 200, read.body
    (f,) = read.body["files"]
    got = box.http.request("GET", f["url"], key=None)
    assert got.status == 200
    return got.content


def test_upload_in_flight_on_one_node_survives_another_nodes_start_up(nodes, artifact):
    a = nodes.start()
    box = Box(a.http, artifact, AWS)
    assert box.open().status == 200
    data = os.urandom(BIG)
    w = box.write("step-00000001", {"model.bin": data})
    assert w.status == 200, w.body
    put = RawPut(w.body["files"][0]["url"], len(data))
    assert put.send(data[: BIG * 3 // 4])
    eventually(lambda: nodes.partial_writes() == 1, "saw the PUT's partial bytes in storage")
    nodes.start()  # its start-up reclaims what no upload can use any more, and nothing else
    assert nodes.partial_writes() == 1
    assert put.send(data[BIG * 3 // 4 :])
    status, body = put.reply()
    assert status == 200, body
    assert box.commit(w.body["upload"]).status == 200
    assert sha(served_bytes(box, "step-00000001")) == sha(data)


def reset(node) -> dict:
    r = node.http.request("POST", "/_emulator/reset")
    assert r.status == 200, r.body
    return r.body


def test_reset_on_one_node_leaves_the_bytes_of_a_node_with_other_metadata(
        live_factory, s3_server, tmp_path, artifact):
    nodes = s3_nodes(live_factory, s3_server, tmp_path)
    a, b = nodes.start(), nodes.start()
    kept, dropped = Box(a.http, artifact, AWS), Box(b.http, artifact + "-b", AWS)
    for box in (kept, dropped):
        assert box.open().status == 200
        assert box.checkpoint("step-00000001", {"m": box.artifact.encode()}).status == 200
    assert reset(b)["uploads_deleted"] == 1
    assert nodes.objects(dropped.artifact + "/") == []
    assert served_bytes(kept, "step-00000001") == artifact.encode()
    assert dropped.read().status == 404


def test_reset_through_one_node_resets_every_node_sharing_its_metadata(
        live_factory, tmp_path, artifact):
    nodes = fs_nodes(live_factory, tmp_path / "shared")
    a, b = nodes.start(), nodes.start()
    box = Box(a.http, artifact, AWS)
    assert box.open().status == 200
    assert box.checkpoint("step-00000001").status == 200
    assert nodes.objects(artifact + "/")
    reset(b)
    assert box.read().status == 404
    assert nodes.objects(artifact + "/") == []


def test_put_finishing_after_a_reset_is_refused_and_leaves_no_bytes(nodes, artifact):
    node = nodes.start("--read-timeout", "600")  # the half-sent body waits out the reset
    box = Box(node.http, artifact, AWS)
    assert box.open().status == 200
    data = os.urandom(4 << 20)
    w = box.write("step-00000001", {"model.bin": data})
    put = RawPut(w.body["files"][0]["url"], len(data))
    assert put.send(data[: len(data) // 2])
    reset(node)
    put.send(data[len(data) // 2 :])  # the answer, not the rest of the upload, is the point
    status, body = put.reply()
    assert status == 404 and body["error"]["code"] == "not_found", (status, body)
    assert nodes.objects(artifact + "/") == []
