"""o41 Artifacts client: checkpoint a training run, resume it anywhere, get fenced safely.

Public surface (everything else is private to its module)::

    run = o41.open("o41://experiments/run-1234", resume="latest")
    run.resume_from  # Version | None
    run.load(dir)    # download and verify the checkpoint resumed from
    run.save(step, dir_or_files)
    o41.forget_launches()  # a test reset the emulator: this process's launches are gone
"""

from o41.checkpoint import Run, open
from o41.config import Place, Settings
from o41.errors import (
    ApiError,
    ConfigError,
    Conflict,
    ExitCode,
    Fenced,
    Forbidden,
    HasCheckpoints,
    Immutable,
    Incomplete,
    IntegrityError,
    InvalidArgument,
    IsLatest,
    NotAfterLatest,
    NotEmpty,
    NotFound,
    O41Error,
    PayloadTooLarge,
    ServerError,
    TransportError,
    Unauthenticated,
    VersionExists,
)
from o41.location import Location, version_name
from o41.models import FileEntry, Version
from o41.transport.api import ApiClient
from o41.writing.registry import forget_launches

__all__ = [
    "ApiClient",
    "ApiError",
    "ConfigError",
    "Conflict",
    "ExitCode",
    "Fenced",
    "FileEntry",
    "Forbidden",
    "HasCheckpoints",
    "Immutable",
    "Incomplete",
    "IntegrityError",
    "InvalidArgument",
    "IsLatest",
    "Location",
    "NotAfterLatest",
    "NotEmpty",
    "NotFound",
    "O41Error",
    "PayloadTooLarge",
    "Place",
    "Run",
    "ServerError",
    "Settings",
    "TransportError",
    "Unauthenticated",
    "Version",
    "VersionExists",
    "forget_launches",
    "open",
    "version_name",
]
