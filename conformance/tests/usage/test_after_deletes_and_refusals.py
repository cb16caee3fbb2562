"""Usage around the two events that change what a version is: a delete (VER-7), after which
URLs given out before still serve its bytes, and those bytes are still served, so counted
(USAGE-1.b); and a commit refused as fenced, whose upload never became a checkpoint, so
``placements`` never counts it (USAGE-1.e). Only the state machine met these before."""

from __future__ import annotations

import pytest

from conformance.actions import a_box_and_a_reader_elsewhere
from conformance.actions import commit_ok
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.actions import start_upload
from conformance.checks import expect_error
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.env import Env
from conformance.model import Place
from conformance.rules import check_equal
from conformance.usage import UsageModel

V1, V2, V3 = "step-00000001", "step-00000002", "step-00000003"


@pytest.mark.usage
@pytest.mark.rule("USAGE-1.b", "VER-7.c")
def test_bytes_served_by_a_deleted_versions_url_are_counted(
    o41_env: Env, o41_api: Client
) -> None:
    home, reader, box = a_box_and_a_reader_elsewhere(o41_env, o41_api, "usage-deleted")
    name = box.artifact
    model = UsageModel()
    sizes = {V1: 800_000, V2: 1000, V3: 1000}
    for version, size in sizes.items():
        commit_ok(o41_api, box, version, make_files({"m": size}, size % 97), "USAGE-1.b")
        model.put(name, home, home, size).settled = True
    body = expect_ok(o41_api.read(name, V1, urls=True, place=reader), "READ-2.a", f"read {V1}")
    url = body["files"][0]["url"]
    expect_ok(o41_api.delete(name, box.token, V1), "VER-7.a", f"delete {V1}")
    got = o41_api.fetch(url)
    check_equal((got.status, len(got.content)), (200, sizes[V1]), "VER-7.c",
                f"a URL of {V1} given out before its delete")
    model.read(name, home, reader, sizes[V1])
    model.check_settled(name, lambda: expect_ok(o41_api.usage(name), "USAGE-1.b",
                                                f"usage of {name}"))


@pytest.mark.usage
@pytest.mark.rule("USAGE-1.e", "FENCE-2.b")
def test_a_fenced_commit_is_never_a_placement(o41_env: Env, o41_api: Client) -> None:
    """A box away from its region (a ``default`` placement) commits one version; its
    upload of a second, fully PUT, is fenced by a relaunch at the same place, which commits
    a third: the place's row counts the two checkpoints, not the refused upload."""
    topo = o41_env.topology
    place = topo.other_region(topo.locations[0].cloud)
    want = topo.placement(place)
    name = o41_env.artifact("usage-fenced-placement")
    old = open_box(o41_api, name, "box-old", place)
    commit_ok(o41_api, old, V1, make_files({"m": 3000}, 140), "USAGE-1.e")
    staged = start_upload(o41_api, name, old.token, V2, make_files({"m": 5000}, 141))
    upload = str(expect_ok(staged.write, "VER-4.a", "the old box's write")["upload"])
    new = open_box(o41_api, name, "box-new", place, rule="FENCE-1.a")
    expect_error(o41_api.commit(name, old.token, upload), 409, "fenced", "FENCE-2.b",
                 "the old box's commit after the relaunch")
    commit_ok(o41_api, new, V3, make_files({"m": 7000}, 142), "USAGE-1.e")
    usage = expect_ok(o41_api.usage(name), "USAGE-1.e", f"usage of {name}")
    rows = [(Place.from_json(r.get("place")), r.get("versions"), r.get("bytes"))
            for r in usage.get("placements") or []
            if r.get("artifact", name) == name
            and Place.from_json(r.get("location")) == want.location]
    check_equal(rows, [(place, 2, 10_000)], "USAGE-1.e",
                f"placements of boxes at {place} after a fenced commit")
