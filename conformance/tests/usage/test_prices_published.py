"""USAGE-1.f: whatever its shape, the published ``prices`` holds the contract's table, so a
client can price every row of the report from the reply alone: the inter-region price and
the cross-cloud price of every cloud, including clouds outside the table."""

from __future__ import annotations

import pytest

from conformance.checks import expect_ok
from conformance.client import Client
from conformance.env import Env
from conformance.prices import prices_missing
from conformance.rules import check


@pytest.mark.rule("USAGE-1.f")
@pytest.mark.usage
def test_published_prices_hold_every_route_and_cloud(o41_env: Env, o41_api: Client) -> None:
    for artifact in (None, o41_env.artifact("u1f")):
        reply = o41_api.usage(artifact)
        if artifact is not None and reply.status == 404:
            continue  # usage of an artifact nobody made is not found (READ-1.b)
        prices = expect_ok(reply, "USAGE-1", f"usage/read of {artifact or 'everything'}")
        missing = prices_missing(prices.get("prices"))
        check(not missing, "USAGE-1.f", f"the published prices: {'; '.join(missing)} "
              f"(prices = {prices.get('prices')!r})")
