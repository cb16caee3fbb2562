"""How values are kept as text in the database: times as ISO-8601 UTC, places as
``cloud/region`` and ``''`` when unknown, in every table (the ``transfers`` key needs an
unknown place that compares equal, which NULL does not). A low module, so every layer
converts the same way."""

from __future__ import annotations

from datetime import UTC, datetime

from .names import Place


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def place_text(place: Place | None) -> str:
    return str(place) if place is not None else ""


def place_from_text(text: str | None) -> Place | None:
    if not text:
        return None
    cloud, _, region = text.partition("/")
    return Place(cloud, region)
