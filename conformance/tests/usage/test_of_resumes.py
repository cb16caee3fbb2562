"""USAGE-1.b for downloads a meter hung on one path misses: a relaunch that fetches its
``resume_from`` through the open's own URLs, and a read-only key (an evaluation job, say)
that downloads a checkpoint. Those bytes are served like any other and are counted, to the
byte, on the route from the version's location to the reader, and priced by the cloud they
leave."""

from __future__ import annotations

import pytest

from conformance.actions import a_version_in_each_cloud
from conformance.actions import commit_ok
from conformance.actions import download
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.env import Env
from conformance.model import UNKNOWN_PLACE
from conformance.rules import check_equal
from conformance.usage import UsageModel

SIZE = 1_500_000


@pytest.mark.usage
@pytest.mark.rule("USAGE-1.b", "USAGE-1.c")
def test_bytes_a_relaunch_downloads_through_resume_from_are_counted(
    o41_env: Env, o41_api: Client
) -> None:
    topo = o41_env.topology
    model = UsageModel()
    for cloud, home, name in a_version_in_each_cloud(
            o41_env, o41_api, "usage-resume", {"m": SIZE, "n": 1000}, 110, "USAGE-1.b"):
        model.put(name, home, home, SIZE + 1000).settled = True
        elsewhere = next((p for p in topo.locations if p.cloud != cloud), UNKNOWN_PLACE)
        for place in (elsewhere, topo.other_region(cloud)):
            opened = expect_ok(o41_api.open(name, "latest", place, f"box-{place.region}"),
                               "OPEN-2.b", f"relaunch at {place}")
            resume = opened.get("resume_from") or {}
            download(o41_api, resume)  # every file, whole
            url = next(f["url"] for f in resume.get("files") or [] if f.get("name") == "m")
            part = o41_api.fetch(url, byte_range=(10, 109))
            check_equal((part.status, len(part.content)), (206, 100), "READ-3.a",
                        f"a ranged GET of resume_from at {place}")
            model.read(name, home, place, SIZE + 1000 + 100)
        # bytes per route and their price, re-read for a moment while a meter catches up
        model.check_settled(name, lambda n=name: expect_ok(o41_api.usage(n), "USAGE-1.b",
                                                             f"usage of {n}"))


@pytest.mark.usage
@pytest.mark.read_key
@pytest.mark.rule("USAGE-1.b")
def test_bytes_a_read_only_key_downloads_are_counted(
    o41_env: Env, o41_api: Client, o41_reader: Client
) -> None:
    topo = o41_env.topology
    home = topo.locations[0]
    reader_at = next((p for p in topo.locations if p.cloud != home.cloud), UNKNOWN_PLACE)
    name = o41_env.artifact("usage-reader")
    model = UsageModel()
    commit_ok(o41_api, open_box(o41_api, name, "box-a", home), "step-00000001",
              make_files({"m": SIZE}, 111), "USAGE-1.b")
    model.put(name, home, home, SIZE).settled = True
    body = expect_ok(o41_reader.read(name, urls=True, place=reader_at), "AUTH-3.a",
                     f"read by the read-only key from {reader_at}")
    download(o41_reader, body)
    model.read(name, home, reader_at, SIZE)
    model.check_settled(name, lambda: expect_ok(o41_api.usage(name), "USAGE-1.b",
                                                f"usage of {name}"))
