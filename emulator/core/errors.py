"""Errors of the Artifacts contract, one class per error code.

Rules raise these; a single Flask error handler (``emulator.web.error_bodies``) renders them as
``{"error": {"code", "message"}}`` with the class's status. Nothing else builds error bodies.

    ApiError
    ├── Unauthenticated      401 unauthenticated
    ├── Forbidden            403 forbidden
    ├── NotFound             404 not_found
    ├── InvalidArgument      400 invalid_argument
    ├── HasCheckpoints       409 has_checkpoints
    ├── NotEmpty             409 not_empty
    ├── Fenced               409 fenced
    ├── VersionExists        409 version_exists
    ├── NotAfterLatest       409 not_after_latest
    ├── Incomplete           409 incomplete
    ├── IsLatest             409 is_latest
    └── PayloadTooLarge      413 payload_too_large
"""

from __future__ import annotations


class ApiError(Exception):
    """A refusal the contract names; carries its HTTP status and error code."""

    status: int = 500
    code: str = "internal"

    def __init__(self, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.headers = headers or {}  # e.g. Retry-After, sent with the error body


class Unauthenticated(ApiError):
    status, code = 401, "unauthenticated"


class Forbidden(ApiError):
    status, code = 403, "forbidden"


class NotFound(ApiError):
    status, code = 404, "not_found"


class InvalidArgument(ApiError):
    status, code = 400, "invalid_argument"


class HasCheckpoints(ApiError):
    status, code = 409, "has_checkpoints"


class NotEmpty(ApiError):
    status, code = 409, "not_empty"


class Fenced(ApiError):
    status, code = 409, "fenced"


class VersionExists(ApiError):
    status, code = 409, "version_exists"


class NotAfterLatest(ApiError):
    status, code = 409, "not_after_latest"


class Incomplete(ApiError):
    status, code = 409, "incomplete"


class IsLatest(ApiError):
    status, code = 409, "is_latest"


class PayloadTooLarge(ApiError):
    status, code = 413, "payload_too_large"


ALL_ERRORS: tuple[type[ApiError], ...] = (
    Unauthenticated,
    Forbidden,
    NotFound,
    InvalidArgument,
    HasCheckpoints,
    NotEmpty,
    Fenced,
    VersionExists,
    NotAfterLatest,
    Incomplete,
    IsLatest,
    PayloadTooLarge,
)


class RangeNotSatisfiable(ApiError):
    """Data plane only (not an `/api/v1` code): a Range the object cannot satisfy."""

    status, code = 416, "range_not_satisfiable"

    def __init__(self, message: str, size: int) -> None:
        super().__init__(message, {"Content-Range": f"bytes */{size}"})


class Unavailable(ApiError):
    """Emulator only: a transient failure injected by a chaos rule (`/_emulator/chaos`)."""

    status, code = 503, "unavailable"

    def __init__(self, message: str, status: int = 503) -> None:
        super().__init__(message, {"Retry-After": "0"})
        self.status = status
