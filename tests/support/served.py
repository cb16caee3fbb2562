"""The tests' one emulator subprocess: ``o41-emulator serve`` as a user starts it, with what
the tests need of it (tests/conftest.py's ``live_factory``, the dashboard's browser tests,
and ``client_fixtures``'s session emulator)."""

from __future__ import annotations

import os
from functools import cached_property

import requests

from emulator.run.served import ServedEmulator
from tests.support.emulator_http import Http


class Emulator(ServedEmulator):
    """A running ``o41-emulator serve`` subprocess (``start()`` it): a test client of its
    HTTP API (``http``), the client's view of it (``api``, ``client_env``) and scoped keys
    (``make_key``)."""

    @cached_property
    def http(self) -> Http:
        return Http(self.url)

    @property
    def api(self) -> str:
        return self.api_url

    def client_env(self, **extra: str) -> dict[str, str]:
        """An environment for a client process pointed at this emulator."""
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("SKYPILOT_", "O41_"))}
        env.update(O41_ARTIFACTS_API_URL=self.api, O41_ARTIFACTS_API_KEY=self.key)
        env.update(extra)
        return env

    def make_key(self, prefix: str, access: str) -> str:
        """A key scoped to ``prefix`` with ``read`` or ``write`` access (admin endpoint)."""
        resp = requests.post(f"{self.url}/_emulator/keys", timeout=60,
                             json={"scopes": [{"prefix": prefix, "access": access}]})
        resp.raise_for_status()
        return resp.json()["key"]
