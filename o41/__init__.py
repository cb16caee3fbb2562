"""o41 Artifacts client: checkpoint a training run, resume it anywhere, get fenced safely.

Public surface (everything else is private to its module)::

    run = o41.open("o41://experiments/run-1234", resume="latest")
    run.resume_from  # Version | None
    run.load(dir)    # download and verify the checkpoint resumed from
    run.save(step, dir_or_files)
    o41.forget_launches()  # a test reset the emulator: this process's launches are gone
"""

from .api import ApiClient
from .checkpoint import Run, open
from .config import Place, Settings
from .errors import (
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
from .fsrun import forget_launches
from .location import Location, version_name
from .models import FileEntry, Version

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
