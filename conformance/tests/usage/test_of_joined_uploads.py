"""USAGE-1.d for a version the ranks of one job wrote together (VER-5): its bytes arrived
through several writes into one upload, but they are one direction, artifact, version,
place and route, so usage shows ONE write row holding all of them, and the routes count
every byte once."""

from __future__ import annotations

import pytest

from conformance.actions import make_files
from conformance.actions import open_box
from conformance.actions import sha256
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.env import Env
from conformance.model import Place
from conformance.rules import check_equal
from conformance.uploads import declared
from conformance.uploads import put_files
from conformance.uploads import streamed
from conformance.uploads import urls_of

V1 = "step-00000001"


@pytest.mark.usage
@pytest.mark.rule("USAGE-1.d", "USAGE-1.a")
def test_a_version_written_by_three_writes_into_one_upload_is_one_write_row(
    o41_env: Env, o41_api: Client
) -> None:
    topo = o41_env.topology
    place = topo.other_region(topo.locations[0].cloud)
    box = open_box(o41_api, o41_env.artifact("usage-joined"), "box-a", place)
    parts = [make_files({"rank0.bin": 3000}, 130), make_files({"rank1.bin": 5000}, 131),
             make_files({"rank2.bin": 7000}, 132)]
    reply = o41_api.write(box.artifact, box.token, V1, declared(parts[0]))
    put_files(o41_api, urls_of(reply, "VER-5.a", "the first write"), parts[0], "VER-5.a",
              "the first write")
    upload = str(reply.body["upload"])
    route = reply.body.get("route")
    for files, spec in ((parts[1], declared(parts[1])), (parts[2], streamed(parts[2]))):
        joined = o41_api.write(box.artifact, box.token, V1, spec, upload)
        put_files(o41_api, urls_of(joined, "VER-5.a", "a joining write"), files, "VER-5.a",
                  "a joining write")
    streamed_name = next(iter(parts[2]))
    listed = [{"name": streamed_name, "size": len(parts[2][streamed_name]),
               "sha256": sha256(parts[2][streamed_name])}]
    expect_ok(o41_api.commit(box.artifact, box.token, upload, listed), "VER-5.a", "the commit")
    total = sum(len(b) for files in parts for b in files.values())
    usage = expect_ok(o41_api.usage(box.artifact), "USAGE-1.d", "usage")
    rows = [(r.get("version"), str(Place.from_json(r.get("place"))), r.get("route"),
             r.get("bytes")) for r in usage.get("transfers") or []
            if r.get("direction") == "write" and r.get("artifact", box.artifact) == box.artifact]
    check_equal(rows, [(V1, str(place), route, total)], "USAGE-1.d",
                "write rows (version, place, route, bytes) of one version from three writes")
    got = ((usage.get("routes") or {}).get(str(route)) or {}).get("write_bytes")
    check_equal(got, total, "USAGE-1.a", f"{route} write_bytes of the joined upload")
