"""USAGE-1.c over every ordered pair of clouds: a version stored in each cloud, read from a
box in each other cloud, is priced by the cloud the bytes leave (the location's), whichever
cloud reads it. Tests of one or two pairs miss a price table looked up the wrong way round
for the pairs they skip (aws read from azure at azure's 0.087, say)."""

from __future__ import annotations

import pytest

from conformance.actions import a_version_in_each_cloud
from conformance.actions import download
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.env import Env
from conformance.usage import UsageModel

SIZE = 2_000_000


@pytest.mark.usage
@pytest.mark.rule("USAGE-1.c", "USAGE-1.b")
def test_a_read_from_every_other_cloud_is_priced_by_the_location_cloud(
    o41_env: Env, o41_api: Client
) -> None:
    topo = o41_env.topology
    model = UsageModel()
    for cloud, home, name in a_version_in_each_cloud(
            o41_env, o41_api, "usage-pairs", {"m": SIZE}, 120, "USAGE-1.c"):
        model.put(name, home, home, SIZE).settled = True
        for reader in topo.locations:
            if reader.cloud == cloud:
                continue
            body = expect_ok(o41_api.read(name, urls=True, place=reader), "READ-2.a",
                             f"read of a version in {home} from {reader}")
            download(o41_api, body)
            model.read(name, home, reader, SIZE)
        model.check_settled(name, lambda n=name: expect_ok(o41_api.usage(n), "USAGE-1.c",
                                                             f"usage of {n}"))
