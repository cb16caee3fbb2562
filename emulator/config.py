"""Settings of one emulator: defaults, then a TOML file, then explicit overrides.

The same `Settings` object is built once in the CLI's master process and handed to every
worker, so all workers agree on locations, prices, keys and the data directory.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

from .faults import check_faults
from .locations import Geography, Location
from .names import place as parse_place
from .prices import Prices

DEFAULT_KEY = "ak_local"
DEFAULT_LOCATIONS = (
    Location("aws", "us-east-1", "o41-aws-us-east-1", default=True),
    Location("gcp", "europe-west4", "o41-gcp-europe-west4", default=True),
    Location("azure", "westeurope", "o41-azure-westeurope", default=True),
)


@dataclass(frozen=True)
class KeySpec:
    """An API key and its scopes: (artifact prefix, "read" | "write")."""

    key: str
    scopes: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Settings:
    data_dir: Path
    storage: str = "fs"  # "fs" (folders under data_dir) or "s3" (minio SDK)
    s3_endpoint: str | None = None
    s3_access_key: str | None = None
    s3_secret_key: str | None = None
    s3_secure: bool = False
    s3_region: str = "us-east-1"
    locations: tuple[Location, ...] = DEFAULT_LOCATIONS
    fallback: str = "aws/us-east-1"
    prices: Prices = field(default_factory=Prices)
    keys: tuple[KeySpec, ...] = (KeySpec(DEFAULT_KEY, (("", "write"),)),)
    admin_key: str | None = None
    url_lifetime: int = 3600
    upload_lifetime: int = 24 * 3600
    max_file_size: int = 1 << 40
    max_files: int = 10_000
    max_json_bytes: int = 4 << 20
    chunk_size: int = 1 << 20
    # Seconds a request may go without one byte arriving (headers or body) before the
    # server drops it: slow or stalled clients cannot hold threads forever.
    read_timeout: float = 30.0
    faults: frozenset[str] = frozenset()
    public_url: str | None = None  # base for signed URLs when behind a proxy

    def geography(self) -> Geography:
        return Geography(list(self.locations), self.fallback)

    @property
    def db_path(self) -> Path:
        return self.data_dir / "metadata.sqlite3"


def _parse_locations(raw: list) -> tuple[Location, ...]:
    out = []
    for item in raw:
        p = parse_place({"cloud": item.get("cloud"), "region": item.get("region")})
        assert p is not None
        bucket = item.get("bucket") or f"o41-{p.cloud}-{p.region}"
        out.append(Location(p.cloud, p.region, bucket, bool(item.get("default", False))))
    return tuple(out)


def _parse_keys(raw: list) -> tuple[KeySpec, ...]:
    out = []
    for item in raw:
        scopes = []
        for s in item.get("scopes", [{"prefix": "", "access": "write"}]):
            access = s.get("access", "read")
            if access not in ("read", "write"):
                raise ValueError(f"key scope access must be read or write, not {access!r}")
            scopes.append((str(s.get("prefix", "")), access))
        out.append(KeySpec(str(item["key"]), tuple(scopes)))
    return tuple(out)


def load_toml(settings: Settings, path: Path) -> Settings:
    """Apply a TOML config file; unknown keys are an error so typos do not pass silently."""
    with open(path, "rb") as fh:
        raw = tomllib.load(fh)
    changes: dict = {}
    simple = {
        "url_lifetime",
        "upload_lifetime",
        "max_file_size",
        "max_files",
        "max_json_bytes",
        "admin_key",
        "public_url",
        "fallback",
        "storage",
        "s3_endpoint",
        "s3_access_key",
        "s3_secret_key",
        "s3_secure",
        "s3_region",
        "chunk_size",
        "read_timeout",
    }
    for name, value in raw.items():
        if name in simple:
            changes[name] = value
        elif name == "locations":
            changes["locations"] = _parse_locations(value)
        elif name == "keys":
            # The dev key stays unless the file says otherwise with `default_key = false`.
            extra = _parse_keys(value)
            base = settings.keys if raw.get("default_key", True) else ()
            changes["keys"] = tuple(base) + extra
        elif name == "default_key":
            if not value and "keys" not in raw:
                changes["keys"] = ()
        elif name == "prices":
            prices = Prices()
            changes["prices"] = Prices(
                inter_region={**prices.inter_region, **value.get("inter_region", {})},
                cross_cloud={**prices.cross_cloud, **value.get("cross_cloud", {})},
            )
        elif name == "faults":
            changes["faults"] = frozenset(check_faults(value))
        else:
            raise ValueError(f"{path}: unknown setting {name!r}")
    new = replace(settings, **changes)
    new.geography()  # validate locations and fallback now, not at the first request
    return new
