"""FORK-1.a for the one target a fork may not be mistaken about, the source itself; and the
contract's "cloud lower-case" in every place and location a reply names, however the box
spelled its cloud (SkyPilot says ``GCP``)."""

from __future__ import annotations

import pytest

from conformance.actions import (
    commit_ok,
    expect_error,
    expect_ok,
    expect_unchanged,
    expect_writer_alive,
    file_specs,
    make_files,
    open_box,
    snapshot,
)
from conformance.client import Client
from conformance.env import Env
from conformance.model import Place
from conformance.rules import check_equal


@pytest.mark.rule("FORK-1.a")
def test_fork_into_its_own_source_not_empty(o41_env: Env, o41_api: Client) -> None:
    a = open_box(o41_api, o41_env.artifact("fork-self"), "box-a")
    for step in (1, 2):
        commit_ok(o41_api, a, f"step-{step:08d}", make_files({"m": 8}, step))
    before = snapshot(o41_api, a.artifact)
    for version in ("step-00000001", "step-00000002"):
        expect_error(o41_api.open(a.artifact, f"o41://{a.artifact}/{version}", None, "box-f"),
                     409, "not_empty", "FORK-1.a", f"a fork of {version} into its own artifact")
    expect_unchanged(o41_api, a.artifact, before, "FORK-1.a", "the refused self-forks")
    expect_writer_alive(o41_api, a, "step-00000003", "FORK-1.a", "after the refused self-forks")


def _cloud(obj: object) -> object:
    return obj.get("cloud") if isinstance(obj, dict) else obj


@pytest.mark.rule("API-1.b", "API-1.d", "API-1.g")
def test_clouds_in_replies_lower_case_however_the_box_spells_them(
    o41_env: Env, o41_api: Client
) -> None:
    for loc in o41_env.topology.locations:
        upper = Place(loc.cloud.upper(), loc.region)
        a = open_box(o41_api, o41_env.artifact("cloud-case"), "box-a", upper)
        check_equal(_cloud(a.opened.get("write_location")), loc.cloud, "API-1.g",
                    f"write_location cloud of a box at {upper}")
        specs = [f.as_json() for f in file_specs(make_files({"m": 4}))]
        write = expect_ok(o41_api.write(a.artifact, a.token, "step-00000001", specs),
                          "API-1.d", "write")
        check_equal(_cloud(write.get("location")), loc.cloud, "API-1.d", "write location")
        commit_ok(o41_api, a, "step-00000002", make_files({"m": 4}, 2))
        read = expect_ok(o41_api.read(a.artifact, place=upper), "API-1.b", "read")
        check_equal(_cloud(read.get("location")), loc.cloud, "API-1.b",
                    f"Version location cloud, read from {upper}")
        listed = expect_ok(o41_api.list(a.artifact), "API-1.b", "list")["versions"]
        check_equal([_cloud(v.get("location")) for v in listed], [loc.cloud], "API-1.b",
                    "listed location clouds")
        b = open_box(o41_api, a.artifact, "box-b", upper, rule="OPEN-2")
        check_equal(_cloud((b.opened.get("resume_from") or {}).get("location")), loc.cloud,
                    "API-1.b", "resume_from location cloud")
