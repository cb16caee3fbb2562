"""A run against a URL with only the write key: its first lines name the options that would
test the rest (the other keys, an expiry target), and it exits 0 when no test failed, its
base verdict NOT TESTED rather than PASS. What the served emulator offers on its default
settings (a file size limit, VER-6.e) is tested without options."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.spawn import SpawnedEmulator
from tests.conformance.test_conformance_options import HAS_EMULATOR, REPO, pytest_run


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SpawnedEmulator]:
    """The emulator on its default settings, as a user serves it."""
    if not HAS_EMULATOR:
        pytest.skip("o41-emulator is not installed (pip install -e .)")
    proc = SpawnedEmulator(tmp_path_factory.mktemp("served"))
    proc.start()
    try:
        yield proc
    finally:
        proc.stop()


def test_run_without_keys_names_the_options_first_and_exits_0(
    tmp_path: Path, served: SpawnedEmulator
) -> None:
    report = tmp_path / "r.json"
    done = pytest_run(REPO, "conformance", "--target", served.url, "--api-key",
                      served.key or "ak_local", "-q", "--rules", "AUTH-2.a,OPEN-1.a,VER-6.e",
                      "--conformance-report", str(report))
    out = done.stdout + done.stderr
    data = json.loads(report.read_text())
    assert data["summary"]["failed"] == 0 and data["summary"]["passed"] > 0, out[-3000:]
    assert data["verdict"]["base"] == "not tested"
    # The emulator's default 1 TiB file size limit is tested without any option.
    assert data["clauses"]["VER-6.e"]["status"] == "pass", out[-3000:]
    assert done.returncode == 0, out[-3000:]
    first = done.stdout.splitlines()[:6]
    assert first[0].startswith("o41 conformance: not given"), first
    named = " ".join(first)
    for option in ("--read-key KEY", "--scoped-key KEY=PREFIX", "--scoped-read-prefix PREFIX",
                   "--expiry-target URL"):
        assert option in named, first
