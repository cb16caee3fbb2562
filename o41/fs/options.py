"""The settings of one ``o41://`` filesystem, read once from its storage options and the
environment, and handed to its reader and writer as one typed value.

Configured like the client, from the environment (``O41_ARTIFACTS_API_URL``,
``O41_ARTIFACTS_API_KEY``, ``SKYPILOT_CLUSTER_INFO`` or ``O41_PLACE``), or by storage options
``api_url``, ``api_key``, ``place``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from o41.config import Place, Settings
from o41.errors import ConfigError
from o41.transport.put import BUFFER
from o41.transport.transfer import WORKERS
from o41.writing import deferred, registry
from o41.writing.stage import DEFAULT_MARKERS, DEFAULT_PARTS


@dataclass(frozen=True)
class FsOptions:
    """What a filesystem was told: where the service is, who writes, and how."""

    settings: Settings
    place: Place | None
    holder: str
    resume: str | None
    markers: tuple[str, ...]
    parts: tuple[str, ...]
    workers: int
    mode: str
    write_buffer: int
    commit_after: float
    on_fenced: str

    @classmethod
    def from_options(cls, api_url: str | None = None, api_key: str | None = None,
                     place: str | None = None, resume: str | None = "latest",
                     markers: tuple[str, ...] | list[str] = DEFAULT_MARKERS,
                     parts: tuple[str, ...] | list[str] = DEFAULT_PARTS,
                     workers: int = WORKERS, holder: str | None = None,
                     mode: str | None = None, on_fenced: str | None = None,
                     write_buffer: int = BUFFER,
                     commit_after: float | None = None) -> FsOptions:
        env = dict(os.environ)
        env.update({k: v for k, v in (("O41_ARTIFACTS_API_URL", api_url),
                                      ("O41_ARTIFACTS_API_KEY", api_key)) if v})
        settings = Settings.from_env(env)
        if not isinstance(write_buffer, int) or not 1 << 20 <= write_buffer <= 1 << 34:
            raise ConfigError(f"write_buffer={write_buffer!r}: bytes of one open file held in "
                              "memory, 1 MiB to 16 GiB")
        return cls(settings=settings,
                   place=Place.parse(place) if place else settings.place,
                   holder=holder or settings.holder,
                   resume=None if resume in (None, "fresh") else resume,
                   markers=tuple(markers), parts=tuple(parts), workers=workers,
                   mode=registry.mode_of(mode), write_buffer=write_buffer,
                   commit_after=deferred.commit_after(commit_after),
                   on_fenced=registry.on_fenced_policy(on_fenced))


__all__ = ["FsOptions"]
