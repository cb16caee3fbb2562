"""``--expiry-target``: a URL target's signed URLs may live an hour, so the suite can be given
a second instance, with the same keys, whose URLs expire within ``--max-url-wait`` seconds;
the READ-4.c expiry tests then run against it instead of skipping.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from conformance.spawn import SpawnedEmulator
from tests.conformance.test_conformance_options import HAS_EMULATOR, REPO, pytest_run

SHORT_URLS = "url_lifetime = 3\n"


@contextmanager
def _short_lived(workdir: Path, faults: tuple[str, ...] = ()) -> Iterator[SpawnedEmulator]:
    """An emulator whose signed URLs live 3 s."""
    workdir.mkdir()
    proc = SpawnedEmulator(workdir, config=SHORT_URLS, faults=faults)
    proc.start()
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture(scope="module")
def main_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SpawnedEmulator]:
    """An emulator with the default hour-long URLs, as a served implementation has."""
    if not HAS_EMULATOR:
        pytest.skip("o41-emulator is not installed (pip install -e .)")
    proc = SpawnedEmulator(tmp_path_factory.mktemp("main"))
    proc.start()
    try:
        yield proc
    finally:
        proc.stop()


def _expiry_tests(tmp: Path, main: SpawnedEmulator, *extra: str) -> tuple[int, dict[str, str]]:
    """Exit code and outcome per test of the URL expiry tests (``-m url_expiry``)."""
    path = tmp / "r.json"
    proc = pytest_run(REPO, "conformance", "--target", main.url, "--api-key",
                      main.key or "ak_local", "-q", "-m", "url_expiry",
                      "--conformance-report", str(path), *extra)
    report: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    assert report, (proc.stdout + proc.stderr)[-3000:]
    return proc.returncode, {t["nodeid"]: t["outcome"] for t in report["tests"]}


def test_expiry_tests_skip_when_the_target_urls_outlive_max_url_wait(
    tmp_path: Path, main_target: SpawnedEmulator
) -> None:
    code, outcomes = _expiry_tests(tmp_path, main_target)
    assert code == 0
    assert len(outcomes) >= 2 and set(outcomes.values()) == {"skipped"}, outcomes


def test_expiry_tests_pass_against_an_expiry_target_with_short_urls(
    tmp_path: Path, main_target: SpawnedEmulator
) -> None:
    with _short_lived(tmp_path / "short") as short:
        code, outcomes = _expiry_tests(tmp_path, main_target, "--expiry-target", short.url,
                                       "--expiry-api-key", short.key or "ak_local")
        assert code == 0, outcomes
        assert len(outcomes) >= 2 and set(outcomes.values()) == {"passed"}, outcomes


def test_expiry_tests_fail_when_the_expiry_target_serves_expired_urls(
    tmp_path: Path, main_target: SpawnedEmulator
) -> None:
    with _short_lived(tmp_path / "broken", faults=("url-never-expires",)) as broken:
        code, outcomes = _expiry_tests(tmp_path, main_target, "--expiry-target", broken.url)
        assert code == 1
        assert "failed" in set(outcomes.values()), outcomes
