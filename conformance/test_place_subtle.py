"""Placement, routes and usage that are right in the common case and easy to get wrong in a
rarer one: a box that gives no holder id, a fork's own writes. Each test here killed a
subtle mutant (``conformance/mutants/m_*_subtle.py``) the rest of the suite missed."""

from __future__ import annotations

import pytest

from conformance.actions import expect_ok
from conformance.client import Client
from conformance.env import Env
from conformance.model import Place
from conformance.rules import check_equal


@pytest.mark.rule("PLACE-1.a")
def test_local_box_without_holder_id_writes_locally(o41_env: Env, o41_api: Client) -> None:
    """PLACE-1.a: the holder id is optional and has nothing to do with placement: a box at
    each location's own place, giving no holder, is told route local to that location."""
    for home in o41_env.topology.locations:
        name = o41_env.artifact(f"no-holder-{home.cloud}")
        body = expect_ok(o41_api.open(name, "latest", home), "PLACE-1", f"open at {home}")
        wl = body.get("write_location") or {}
        check_equal((Place.from_json(wl), wl.get("route")), (home, "local"), "PLACE-1",
                    f"write_location of a box at {home} without a holder")
