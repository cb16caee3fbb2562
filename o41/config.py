"""Settings read from the environment: API URL and key, the box's place, the holder id.

Everything here is a pure function of an environment mapping (``os.environ`` by default), so
it is tested without touching the process environment.
"""

from __future__ import annotations

import json
import logging
import os
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass

from o41.errors import ConfigError
from o41.job import membership

log = logging.getLogger("o41")

API_SUFFIX = "/api/v1"
ENV_URL = "O41_ARTIFACTS_API_URL"
ENV_KEY = "O41_ARTIFACTS_API_KEY"
ENV_PLACE = "O41_PLACE"
ENV_CLUSTER_INFO = "SKYPILOT_CLUSTER_INFO"
ENV_TASK_ID = "SKYPILOT_TASK_ID"
ENV_NODE_RANK = "SKYPILOT_NODE_RANK"
ENV_HOLDER = "O41_HOLDER"

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")



@dataclass(frozen=True)
class Place:
    """Where a box runs: a lower-case cloud and a region, e.g. ``gcp/europe-west4``."""

    cloud: str
    region: str

    @classmethod
    def parse(cls, text: str) -> Place:
        """Parse ``cloud/region`` (cloud compared case-insensitively)."""
        cloud, sep, region = text.strip().partition("/")
        if not sep or not _NAME.match(cloud) or not _NAME.match(region):
            raise ConfigError(f"place {text!r} is not of the form cloud/region")
        return cls(cloud.lower(), region)

    def to_json(self) -> dict[str, str]:
        return {"cloud": self.cloud, "region": self.region}

    def __str__(self) -> str:
        return f"{self.cloud}/{self.region}"


def normalize_api_url(url: str) -> str:
    """Return the API base ending in ``/api/v1``; a URL given without the suffix gets it."""
    url = url.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"{ENV_URL}={url!r} is not an http(s) URL")
    if not url.endswith(API_SUFFIX):
        url += API_SUFFIX
    return url


def place_from_cluster_info(text: str) -> Place:
    """Read the place from SkyPilot's ``SKYPILOT_CLUSTER_INFO`` JSON."""
    try:
        info = json.loads(text)
        cloud, region = info["cloud"], info["region"]
    except (ValueError, TypeError, KeyError) as exc:
        raise ConfigError(f"{ENV_CLUSTER_INFO} is not SkyPilot cluster info: {exc}") from None
    if not isinstance(cloud, str) or not isinstance(region, str):
        raise ConfigError(f"{ENV_CLUSTER_INFO} has a non-string cloud or region")
    return Place.parse(f"{cloud}/{region}")


def place_from_env(env: Mapping[str, str] | None = None) -> Place | None:
    """Place from ``SKYPILOT_CLUSTER_INFO``, else ``O41_PLACE``, else ``None`` (unknown).

    A malformed value is logged and skipped rather than raised: a box whose place cannot be
    told still trains, its checkpoints going where the service puts unknown places.
    """
    env = os.environ if env is None else env
    for name, parse in ((ENV_CLUSTER_INFO, place_from_cluster_info), (ENV_PLACE, Place.parse)):
        value = env.get(name, "").strip()
        if not value:
            continue
        try:
            return parse(value)
        except ConfigError as exc:
            log.warning("ignoring %s: %s", name, exc)
    return None


def holder_from_env(env: Mapping[str, str] | None = None) -> str:
    """Holder id: ``O41_HOLDER``, else ``<task id>/rank-<rank>`` under SkyPilot, else
    ``<host>:<pid>`` of the job's first process (``o41.job.membership``: a fork, a
    ``multiprocessing`` child and a rank of ``torch.multiprocessing.spawn`` share it).
    (``o41 run`` sets ``O41_HOLDER`` for its command: one launch, one holder.)

    When ``SKYPILOT_CLUSTER_INFO`` names the cluster, ``@<cluster>`` follows, so boxes of one
    task on different clusters are told apart; ``same_task`` still sees them as one task.
    """
    env = os.environ if env is None else env
    given = env.get(ENV_HOLDER, "").strip()
    if given:
        return given
    task = env.get(ENV_TASK_ID, "").strip()
    if task:
        rank = env.get(ENV_NODE_RANK, "").strip()
        holder = f"{task}/rank-{rank}" if rank else task
        cluster = _cluster_name(env.get(ENV_CLUSTER_INFO, ""))
        return f"{holder}@{cluster}" if cluster else holder
    return f"{socket.gethostname()}:{membership.root()}"


def _cluster_name(text: str) -> str | None:
    try:
        name = json.loads(text).get("cluster_name") if text.strip() else None
    except (ValueError, AttributeError):
        return None
    return name if isinstance(name, str) and name.strip() else None


def same_task(holder: str | None, other: str | None) -> bool:
    """Whether two holder ids are launches of one task (they differ at most in ``@cluster``)."""
    if not holder or not other:
        return False
    return holder.partition("@")[0] == other.partition("@")[0]


@dataclass(frozen=True)
class Settings:
    """Everything the client needs from the environment, resolved once."""

    api_url: str
    api_key: str
    place: Place | None
    holder: str

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Read the settings; a missing URL or key is a ``ConfigError`` naming the variable."""
        env = os.environ if env is None else env
        url = env.get(ENV_URL, "").strip()
        key = env.get(ENV_KEY, "").strip()
        if not url:
            raise ConfigError(f"{ENV_URL} is not set: it holds the API base, e.g. "
                              "http://127.0.0.1:8041/api/v1")
        if not key:
            raise ConfigError(f"{ENV_KEY} is not set: it holds the API key (ak_...)")
        return cls(normalize_api_url(url), key, place_from_env(env), holder_from_env(env))


def redact_key(key: str) -> str:
    """Show enough of a key to recognise it in a message, never the whole secret.

    Long keys keep 6 leading and 2 trailing characters; shorter ones only their ``ak_``-like
    prefix (at most 3 characters), so a short key is masked as well as a long one.
    """
    if len(key) >= 24:
        return f"{key[:6]}…{key[-2:]}"
    return f"{key[:min(3, len(key) // 2)]}…"


__all__ = ["Place", "Settings", "holder_from_env", "normalize_api_url",
           "place_from_cluster_info", "place_from_env", "redact_key", "same_task"]
