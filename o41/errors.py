"""Errors raised by the o41 client, one class per contract error code.

The hierarchy (exit code of the ``o41`` CLI on the right)::

    O41Error                                   1  anything the client raises
    ├── ConfigError                            3  missing URL/key, malformed o41:// location
    ├── TransportError                         7  network failure, unexpected reply, data plane
    │   └── IntegrityError                     7  downloaded bytes do not match their sha256
    └── ApiError(status, code, message)        1  an error body from the API
        ├── InvalidArgument    400 invalid_argument     3
        ├── Unauthenticated    401 unauthenticated      4
        ├── Forbidden          403 forbidden            4  also a PermissionError
        ├── NotFound           404 not_found            5  also a FileNotFoundError
        ├── PayloadTooLarge    413 payload_too_large    6
        ├── ServerError        5xx (any code)           7
        └── Conflict           409                      6
            ├── HasCheckpoints     has_checkpoints
            ├── NotEmpty           not_empty
            ├── VersionExists      version_exists           also a FileExistsError
            │   └── Immutable      version_exists           mv of a committed file, rm of an
            │                                               artifact; also a PermissionError
            ├── NotAfterLatest     not_after_latest
            ├── IsLatest           is_latest             a delete of the latest version
            ├── Incomplete         incomplete
            └── Fenced             fenced               8  names who fenced the run; also a
                                                           PermissionError

Errors map once, as s3fs's do (``s3fs.errors``): the classes that have a builtin meaning are
also that builtin ``OSError``, so code that knows nothing of o41 (fsspec's ``exists``,
Lightning, DCP) sees the failure it knows: ``except FileNotFoundError`` catches a missing
version, ``except PermissionError`` a key without access. ``str(exc)`` is the message alone.

Third-party errors (requests, OSError from sockets) are mapped to these at the boundary in
``o41.transport.api`` and ``o41.transport.transfer``; callers never need to import ``requests``.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any


class ExitCode(IntEnum):
    """Exit codes of the ``o41`` CLI (and of trainers that choose to reuse them)."""

    OK = 0
    ERROR = 1
    USAGE = 2
    INVALID = 3
    AUTH = 4
    NOT_FOUND = 5
    CONFLICT = 6
    TRANSFER = 7
    FENCED = 8


class O41Error(Exception):
    """Base of every error the client raises; ``code`` is what ``o41: <code>: ...`` shows."""

    code: str = "error"
    exit_code: ExitCode = ExitCode.ERROR


class ConfigError(O41Error, ValueError):
    """The environment or an argument is unusable (missing key, bad ``o41://`` location)."""

    code = "config_error"
    exit_code = ExitCode.INVALID


class TransportError(O41Error):
    """The API or a signed URL could not be reached, or replied with something unexpected."""

    code = "transport_error"
    exit_code = ExitCode.TRANSFER

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class IntegrityError(TransportError):
    """Downloaded bytes do not match the sha256 (or size) the version declares."""

    code = "integrity_error"


class ApiError(O41Error):
    """An error reply of the API: ``{"error": {"code", "message"}}`` with its HTTP status."""

    code = "unknown"

    def __init__(self, message: str, *, status: int, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        if code is not None:
            self.code = code

    @property
    def message(self) -> str:
        """The human sentence, as given to the constructor."""
        return str(self.args[0]) if self.args else ""

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[Any, ...]:
        """Picklable with its attributes: DCP gathers a rank's failure to the coordinator."""
        return (_rebuild, (type(self), self.message, dict(self.__dict__)))


def _rebuild(cls: type[ApiError], message: str, state: dict[str, Any]) -> ApiError:
    exc = cls.__new__(cls, message)
    exc.args = (message,)
    exc.__dict__.update(state)
    return exc


class InvalidArgument(ApiError):
    code = "invalid_argument"
    exit_code = ExitCode.INVALID


class Unauthenticated(ApiError):
    code = "unauthenticated"
    exit_code = ExitCode.AUTH


class Forbidden(ApiError, PermissionError):
    """The key may not do this (AUTH-2, AUTH-3): as a bucket without access refuses."""

    code = "forbidden"
    exit_code = ExitCode.AUTH


class NotFound(ApiError, FileNotFoundError):
    """No such artifact, version or upload."""

    code = "not_found"
    exit_code = ExitCode.NOT_FOUND


class PayloadTooLarge(ApiError):
    code = "payload_too_large"
    exit_code = ExitCode.CONFLICT


class ServerError(ApiError):
    code = "server_error"
    exit_code = ExitCode.TRANSFER


class Conflict(ApiError):
    code = "conflict"
    exit_code = ExitCode.CONFLICT


class HasCheckpoints(Conflict):
    code = "has_checkpoints"


class NotEmpty(Conflict):
    code = "not_empty"


class VersionExists(Conflict, FileExistsError):
    """The version is committed already (VER-2): as an object store refuses a create-only
    write of a key that exists."""

    code = "version_exists"


class Immutable(VersionExists, PermissionError):
    """A removal or rename of a committed file: versions are immutable (VER-2).

    A ``PermissionError`` too, as a read-only bucket refuses a delete, so generic code (a
    retention loop calling ``fs.rm``) sees the failure it knows. Never raised by a write:
    Lightning's ``_atomic_save`` swallows ``PermissionError``, and a refused save must not
    vanish silently.
    """


class NotAfterLatest(Conflict):
    code = "not_after_latest"


class IsLatest(Conflict, PermissionError):
    """A delete of the artifact's latest version (VER-7): a run resumes from it, so it stays.

    A ``PermissionError`` too, as a bucket's refused delete is, so a retention loop that
    logs and goes on (torchtitan's purge thread) does so here.
    """

    code = "is_latest"


class Incomplete(Conflict):
    code = "incomplete"


class Fenced(Conflict, PermissionError):
    """A newer open of the artifact fenced this run: its writes are refused.

    A ``PermissionError`` too, so code that knows nothing of o41 (fsspec callers, generic
    checkpoint writers) sees a permission failure rather than an unknown exception.

    ``by_holder`` and ``by_epoch`` name who holds the artifact now (the fencer, or whoever
    opened it after the fencer); ``epoch`` is the fenced run's own epoch.
    """

    code = "fenced"
    exit_code = ExitCode.FENCED

    def __init__(
        self,
        message: str,
        *,
        status: int = 409,
        code: str | None = None,
        artifact: str | None = None,
        epoch: int | None = None,
        by_holder: str | None = None,
        by_epoch: int | None = None,
    ) -> None:
        super().__init__(message, status=status, code=code)
        self.artifact = artifact
        self.epoch = epoch
        self.by_holder = by_holder
        self.by_epoch = by_epoch


_BY_CODE: dict[str, type[ApiError]] = {
    cls.code: cls
    for cls in (
        InvalidArgument,
        Unauthenticated,
        Forbidden,
        NotFound,
        PayloadTooLarge,
        HasCheckpoints,
        NotEmpty,
        VersionExists,
        NotAfterLatest,
        IsLatest,
        Incomplete,
        Fenced,
    )
}
_BY_STATUS: dict[int, type[ApiError]] = {
    400: InvalidArgument,
    401: Unauthenticated,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: PayloadTooLarge,
}


def from_response(status: int, body: object) -> ApiError:
    """Build the error for an API reply: by its ``error.code``, else by its HTTP status."""
    code: str | None = None
    message = f"HTTP {status}"
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        code = body["error"].get("code")
        message = str(body["error"].get("message") or message)
    cls = _BY_CODE.get(code or "")
    if cls is None:
        cls = ServerError if status >= 500 else _BY_STATUS.get(status, ApiError)
    return cls(message, status=status, code=code)


CODES: tuple[str, ...] = tuple(_BY_CODE)
"""Every contract error code the client maps to its own class."""

__all__ = [
    "CODES", "ApiError", "ConfigError", "Conflict", "ExitCode", "Fenced", "Forbidden",
    "HasCheckpoints", "Immutable", "Incomplete", "IntegrityError", "InvalidArgument", "IsLatest",
    "NotAfterLatest", "NotEmpty", "NotFound", "O41Error", "PayloadTooLarge", "ServerError",
    "TransportError", "Unauthenticated", "VersionExists", "from_response",
]
