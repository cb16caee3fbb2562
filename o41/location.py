"""``o41://`` locations: an artifact ``o41://P/N`` or one of its versions ``o41://P/N/step-…``."""

from __future__ import annotations

import re
from dataclasses import dataclass

from o41.errors import ConfigError

SCHEME = "o41://"
VERSION_RE = re.compile(r"^step-[0-9]{8}$")  # ASCII digits only: \d would take "٥"
_STEP_FOLDER = re.compile(r"step-([0-9]{1,8})")  # step-100 is step-00000100
# The contract's grammar: a part starts with a letter or digit (so never "." or "..").
_SEGMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
ALLOWED = ("letters, digits, '.', '_' and '-', at most 128 characters, starting with a letter "
           "or digit")


def version_name(step: int) -> str:
    """The version name of a step: ``step-`` and 8 digits."""
    if not isinstance(step, int) or isinstance(step, bool) or not 0 <= step <= 99_999_999:
        raise ConfigError(f"step {step!r} is not an integer in 0..99999999")
    return f"step-{step:08d}"


@dataclass(frozen=True)
class Location:
    """A parsed ``o41://`` string; ``version`` is ``None``, ``"latest"`` or ``step-XXXXXXXX``."""

    project: str
    name: str
    version: str | None = None

    @classmethod
    def parse(cls, text: str) -> Location:
        """Parse ``o41://P/N`` or ``o41://P/N/<version>``, saying what is wrong otherwise."""
        if not isinstance(text, str) or not text.startswith(SCHEME):
            raise ConfigError(f"{text!r} is not an o41:// location (o41://project/name)")
        parts = text[len(SCHEME):].rstrip("/").split("/")
        if len(parts) not in (2, 3):
            raise ConfigError(
                f"{text!r} is not o41://project/name or o41://project/name/step-XXXXXXXX"
            )
        bad = [p for p in parts[:2] if not _SEGMENT.fullmatch(p)]
        if bad:
            raise ConfigError(f"{text!r}: {bad[0]!r} is not a valid project or name: use "
                              f"{ALLOWED}")
        version = parts[2] if len(parts) == 3 else None
        if version is not None and version != "latest":
            found = _STEP_FOLDER.fullmatch(version)
            if found is None:
                raise ConfigError(f"{text!r}: version {version!r} is not 'latest' or a step "
                                  "(step-100 or step-00000100)")
            version = version_name(int(found.group(1)))
        return cls(parts[0], parts[1], version)

    @property
    def artifact(self) -> str:
        """The artifact id used by the API, ``project/name``."""
        return f"{self.project}/{self.name}"

    def __str__(self) -> str:
        tail = f"/{self.version}" if self.version else ""
        return f"{SCHEME}{self.artifact}{tail}"


__all__ = ["Location", "version_name"]
