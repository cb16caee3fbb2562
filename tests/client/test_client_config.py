"""Environment parsing: API URL, key, place and holder, and o41:// locations."""

from __future__ import annotations

import json
import os
import socket

import pytest

from o41 import ConfigError, Location, Place, Settings, version_name
from o41.config import holder_from_env, normalize_api_url, place_from_env

BASE = {"O41_ARTIFACTS_API_URL": "http://127.0.0.1:8041/api/v1",
        "O41_ARTIFACTS_API_KEY": "ak_local"}


def cluster_info(cloud: str, region: str) -> str:
    return json.dumps({"cluster_name": "c1", "cloud": cloud, "region": region,
                       "zone": f"{region}-a"})


@pytest.mark.parametrize("url", ["http://h:1", "http://h:1/", "http://h:1/api/v1",
                                 "http://h:1/api/v1/"])
def test_api_url_normalized_with_or_without_suffix(url: str) -> None:
    assert normalize_api_url(url) == "http://h:1/api/v1"


def test_api_url_not_http_refused() -> None:
    with pytest.raises(ConfigError, match="not an http"):
        normalize_api_url("127.0.0.1:8041")


@pytest.mark.parametrize("missing", ["O41_ARTIFACTS_API_URL", "O41_ARTIFACTS_API_KEY"])
def test_settings_missing_variable_named_in_error(missing: str) -> None:
    env = {k: v for k, v in BASE.items() if k != missing}
    with pytest.raises(ConfigError, match=missing):
        Settings.from_env(env)


@pytest.mark.parametrize("cloud,expected", [("AWS", "aws"), ("GCP", "gcp"), ("Azure", "azure"),
                                            ("azure", "azure"), ("gCp", "gcp")])
def test_place_from_cluster_info_cloud_case_insensitive(cloud: str, expected: str) -> None:
    place = place_from_env({"SKYPILOT_CLUSTER_INFO": cluster_info(cloud, "r1")})
    assert place == Place(expected, "r1")


def test_place_cluster_info_wins_over_o41_place() -> None:
    env = {"SKYPILOT_CLUSTER_INFO": cluster_info("GCP", "europe-west4"),
           "O41_PLACE": "aws/us-east-1"}
    assert place_from_env(env) == Place("gcp", "europe-west4")


def test_place_from_o41_place_when_no_cluster_info() -> None:
    assert place_from_env({"O41_PLACE": "AWS/us-east-1"}) == Place("aws", "us-east-1")


def test_place_unknown_when_nothing_set() -> None:
    assert place_from_env({}) is None


def test_place_malformed_cluster_info_logged_and_falls_back(
        caplog: pytest.LogCaptureFixture) -> None:
    env = {"SKYPILOT_CLUSTER_INFO": "{not json", "O41_PLACE": "azure/westeurope"}
    assert place_from_env(env) == Place("azure", "westeurope")
    assert "SKYPILOT_CLUSTER_INFO" in caplog.text


def test_place_malformed_o41_place_gives_unknown(caplog: pytest.LogCaptureFixture) -> None:
    assert place_from_env({"O41_PLACE": "us-east-1"}) is None
    assert "O41_PLACE" in caplog.text


def test_place_unknown_cloud_passed_through_lowercase() -> None:
    place = place_from_env({"SKYPILOT_CLUSTER_INFO": cluster_info("Lambda", "us-west-1")})
    assert place == Place("lambda", "us-west-1")


def test_holder_from_task_id_and_rank() -> None:
    env = {"SKYPILOT_TASK_ID": "sky-managed-1", "SKYPILOT_NODE_RANK": "2"}
    assert holder_from_env(env) == "sky-managed-1/rank-2"
    assert holder_from_env({"SKYPILOT_TASK_ID": "sky-managed-1"}) == "sky-managed-1"


def test_holder_defaults_to_host_and_pid() -> None:
    assert holder_from_env({}) == f"{socket.gethostname()}:{os.getpid()}"


def test_settings_from_env_resolves_everything() -> None:
    env = {**BASE, "O41_ARTIFACTS_API_URL": "http://h:2/", "O41_PLACE": "gcp/europe-west4",
           "SKYPILOT_TASK_ID": "t"}
    s = Settings.from_env(env)
    assert (s.api_url, s.api_key, s.place, s.holder) == (
        "http://h:2/api/v1", "ak_local", Place("gcp", "europe-west4"), "t")


@pytest.mark.parametrize("text,artifact,version", [
    ("o41://experiments/run-1234", "experiments/run-1234", None),
    ("o41://experiments/run-1234/", "experiments/run-1234", None),
    ("o41://experiments/run-1234/latest", "experiments/run-1234", "latest"),
    ("o41://experiments/run-1234/step-00000300", "experiments/run-1234", "step-00000300"),
])
def test_location_parse_valid(text: str, artifact: str, version: str | None) -> None:
    loc = Location.parse(text)
    assert (loc.artifact, loc.version) == (artifact, version)


@pytest.mark.parametrize("text", ["experiments/run", "o41://experiments", "o41://a/b/step-x",
                                  "o41://a/b/c/d", "o41://a/../b", "s3://a/b"])
def test_location_parse_invalid_says_what_is_wrong(text: str) -> None:
    with pytest.raises(ConfigError, match="o41://"):
        Location.parse(text)


def test_version_name_eight_digits() -> None:
    assert version_name(300) == "step-00000300"
    with pytest.raises(ConfigError):
        version_name(-1)
    with pytest.raises(ConfigError):
        version_name(100_000_000)
