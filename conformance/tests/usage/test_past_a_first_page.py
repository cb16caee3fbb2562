"""USAGE-1.d and USAGE-1.e past a first page: an artifact with more versions than ten has a
write row for every one of them, and its placement row counts them all."""

from __future__ import annotations

import pytest

from conformance.actions import commit_ok
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.env import Env
from conformance.model import Place
from conformance.rules import check_equal

MANY = 14


@pytest.mark.rule("USAGE-1.d", "USAGE-1.e")
@pytest.mark.usage
def test_usage_rows_of_every_version_beyond_ten(o41_env: Env, o41_api: Client) -> None:
    home = o41_env.topology.locations[0]
    near = o41_env.topology.other_region(home.cloud)
    a = open_box(o41_api, o41_env.artifact("u1d-many"), "box-a", near)
    names = [f"step-{n + 1:08d}" for n in range(MANY)]
    for i, name in enumerate(names):
        commit_ok(o41_api, a, name, make_files({"m": 7 + i}, 50 + i))
    usage = expect_ok(o41_api.usage(a.artifact), "USAGE-1", "usage of the artifact")
    mine = [r for r in usage.get("transfers") or [] if r.get("artifact", a.artifact) == a.artifact]
    writes = sorted((r.get("version"), r.get("bytes")) for r in mine
                    if r.get("direction") == "write")
    check_equal(writes, [(n, 7 + i) for i, n in enumerate(names)], "USAGE-1.d",
                f"write rows of {MANY} versions")
    rows = [(r.get("kind"), Place.from_json(r.get("place")), r.get("versions"), r.get("bytes"))
            for r in usage.get("placements") or [] if r.get("artifact", a.artifact) == a.artifact]
    total = sum(7 + i for i in range(MANY))
    check_equal(rows, [("default", near, MANY, total)], "USAGE-1.e",
                f"the placement row of {MANY} versions written from {near}")
