"""FORK-1.a for the one target a fork may not be mistaken about, the source itself; and the
contract's "cloud lower-case" in every place and location a reply names, however the box
spelled its cloud (SkyPilot says ``GCP``)."""

from __future__ import annotations

import pytest

from conformance.actions import commit_ok
from conformance.actions import file_specs
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.checks import expect_error
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.env import Env
from conformance.model import Place
from conformance.probes import expect_unchanged
from conformance.probes import expect_writer_alive
from conformance.probes import snapshot
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


@pytest.mark.rule("PLACE-1.a", "FORK-2.a")
def test_a_fork_writes_where_its_box_is_not_where_its_source_is(
    o41_env: Env, o41_api: Client
) -> None:
    """A fork opened at a location's own place writes there (route ``local``), wherever the
    source version it resumes is stored: the open's ``write_location``, the write reply and
    the fork's first version all say the box's location."""
    locations = o41_env.topology.locations
    if len(locations) < 2:
        pytest.skip("needs two locations")
    for i, src_loc in enumerate(locations):
        box_loc = locations[(i + 1) % len(locations)]
        src = open_box(o41_api, o41_env.artifact("fork-where-src"), "box-s", src_loc)
        commit_ok(o41_api, src, "step-00000001", make_files({"m": 6}, 50 + i), "PLACE-1.a")
        fork = open_box(o41_api, o41_env.artifact("fork-where"), "box-f", box_loc,
                        resume=f"o41://{src.artifact}/step-00000001", rule="FORK-2.a")
        wl = fork.opened.get("write_location") or {}
        check_equal((wl.get("cloud"), wl.get("region"), wl.get("route")),
                    (box_loc.cloud, box_loc.region, "local"), "PLACE-1.a",
                    f"write_location of a fork at {box_loc} of a version at {src_loc}")
        specs = [f.as_json() for f in file_specs(make_files({"m": 4}, 60 + i))]
        write = expect_ok(o41_api.write(fork.artifact, fork.token, "step-00000002", specs),
                          "PLACE-1.a", "the fork's write")
        check_equal((write.get("location"), write.get("route")),
                    ({"cloud": box_loc.cloud, "region": box_loc.region}, "local"),
                    "PLACE-1.a", f"write reply of the fork at {box_loc}")
        version = commit_ok(o41_api, fork, "step-00000003", make_files({"m": 4}, 70 + i),
                            "PLACE-1.a")
        check_equal(version.get("location"), {"cloud": box_loc.cloud, "region": box_loc.region},
                    "PLACE-1.a", f"location of the fork's first version, box at {box_loc}")
