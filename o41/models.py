"""Plain records for the API's JSON objects (Version, its files), parsed leniently.

Unknown keys are ignored and optional ones default, so a newer server does not break an
older client.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class FileEntry:
    """One file of a version; ``url`` is present only when the version was read signed."""

    name: str
    size: int
    sha256: str
    url: str | None = None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FileEntry:
        return cls(str(data["name"]), int(data.get("size", 0)), str(data.get("sha256", "")),
                   data.get("url"))


@dataclass(frozen=True)
class Version:
    """A committed checkpoint: ``step-XXXXXXXX`` of an artifact, at one location."""

    artifact: str
    version: str
    step: int
    size: int
    location: dict[str, str] | None = None
    created_at: str | None = None
    epoch: int | None = None
    holder: str | None = None
    route: str | None = None
    cross_cloud: bool | None = None
    urls_expire_at: str | None = None
    files: tuple[FileEntry, ...] = field(default_factory=tuple)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Version:
        name = str(data["version"])
        step = data.get("step")
        return cls(
            artifact=str(data.get("artifact", "")),
            version=name,
            step=int(step) if step is not None else int(name.removeprefix("step-")),
            size=int(data.get("size") or 0),
            location=data.get("location"),
            created_at=data.get("created_at"),
            epoch=data.get("epoch"),
            holder=data.get("holder"),
            route=data.get("route"),
            cross_cloud=data.get("cross_cloud"),
            urls_expire_at=data.get("urls_expire_at"),
            files=tuple(FileEntry.from_json(f) for f in data.get("files") or ()),
        )

    @property
    def location_name(self) -> str:
        """``cloud/region`` of the bucket holding this version, or ``?``."""
        loc = self.location or {}
        return f"{loc.get('cloud', '?')}/{loc.get('region', '?')}"


__all__ = ["FileEntry", "Version"]
