"""Settings of one emulator: defaults, then a TOML file, then explicit overrides.

The same `Settings` object is built once in the CLI's master process and handed to every
worker, so all workers agree on locations, prices, keys and the data directory.
"""

from __future__ import annotations

import math
import tempfile
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields, replace
from pathlib import Path
from types import NoneType, UnionType
from typing import Any, get_args, get_type_hints

from ..core.errors import InvalidArgument
from ..core.keys import parse_scopes
from ..core.locations import Geography, Location
from ..core.names import place as parse_place
from ..core.prices import Prices
from . import bounds
from .bounds import HTTP_URL, TOKEN, Format
from .faults import check_faults

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


def _setting(default: Any = MISSING, help: str = "", *, cli: bool = False,
             toml: bool = True, choices: tuple[str, ...] = (), minimum: float | None = None,
             maximum: float | None = None, min_open: bool = False,
             format: Format | None = None, items: tuple[Callable[[object], bool], str] | None
             = None, range: str = "", factory: Any = MISSING) -> Any:
    """One row of the settings table: a `Settings` field with its help and where it may be
    given (a TOML key unless `toml=False`, also a `serve` option and variable when `cli`),
    and its range: `minimum`..`maximum` for numbers (`min_open`: above `minimum`), `format`
    for strings (default: printable text), `items` (test, words) for lists, or `range` in
    words for the structures their own parsers check."""
    meta = {"help": help, "cli": cli, "toml": toml, "choices": choices, "minimum": minimum,
            "maximum": maximum, "min_open": min_open, "format": format, "items": items,
            "range_text": range}
    return field(default=default, default_factory=factory, metadata=meta)


@dataclass(frozen=True)
class Settings:
    """Every setting of one emulator, with its type, default and help: the one table that
    the TOML file, `serve`'s options (and their O41_EMULATOR_SERVE_* variables) and
    `create_app`'s mapping are read against."""

    data_dir: Path = _setting(help="metadata and buckets", toml=False, range="a directory")
    database: str | None = _setting(None, "metadata database: a SQLite file in the data dir "
                                    "(default), or postgresql://user@host:port/db shared by "
                                    "several nodes", cli=True)
    storage: str = _setting("fs", "bucket backend: folders under the data dir (fs) or an S3 "
                            "endpoint (s3)", cli=True, choices=("fs", "s3"))
    s3_endpoint: str | None = _setting(None, "S3-compatible endpoint for storage s3, e.g. "
                                       "http://127.0.0.1:9000 (MinIO)", cli=True,
                                       format=HTTP_URL)
    s3_access_key: str | None = _setting(None, "access key for storage s3", cli=True)
    s3_secret_key: str | None = _setting(None, "secret key for storage s3", cli=True)
    s3_secure: bool = _setting(False, "use https to reach the S3 endpoint")
    s3_region: str = _setting("us-east-1", "region the S3 client signs for")
    locations: tuple[Location, ...] = _setting(DEFAULT_LOCATIONS, "the cloud regions, each "
                                               "with its bucket ([[locations]])",
                                               range=f"cloud and region names; buckets "
                                               f"{bounds.BUCKET_RANGE}")
    fallback: str = _setting("aws/us-east-1", "where writes from clouds without a location go",
                             range="cloud/region of one of the locations")
    prices: Prices = _setting(help="USD per GB by route ([prices], merged over the defaults)",
                              factory=Prices, range=f"tables inter_region and cross_cloud of "
                              f"{bounds.PRICE_RANGE}")
    keys: tuple[KeySpec, ...] = _setting((KeySpec(DEFAULT_KEY, (("", "write"),)),),
                                         "API keys and their scopes ([[keys]])",
                                         range="keys of 1 to 256 printable ASCII characters "
                                         "without spaces, scopes {prefix, access}")
    admin_key: str | None = _setting(None, "require this bearer key on /_emulator/ admin "
                                     "endpoints and the pages", cli=True, format=TOKEN)
    url_lifetime: int = _setting(3600, "seconds a signed URL stays valid", cli=True, minimum=1,
                                 maximum=7 * 24 * 3600)  # S3's limit for presigned URLs
    upload_lifetime: int = _setting(24 * 3600, "seconds an uncommitted upload is kept",
                                    minimum=1, maximum=30 * 24 * 3600)
    max_file_size: int = _setting(1 << 40, "declared file sizes above this are 413",
                                  minimum=0, maximum=5 << 40)  # S3's largest object
    max_files: int = _setting(10_000, "files per version", minimum=1, maximum=100_000)
    max_json_bytes: int = _setting(4 << 20, "request bodies of /api/v1", minimum=1024,
                                   maximum=64 << 20)
    # Each PUT in progress holds two chunks: 2 workers x 64 threads x 2 x 16 MiB is 4 GiB.
    chunk_size: int = _setting(1 << 20, "bytes per read and write of the data plane",
                               minimum=4096, maximum=16 << 20)
    # Slow or stalled clients cannot hold a server thread forever.
    read_timeout: float = _setting(30.0, "seconds a request may send no byte (or a download "
                                   "read none) before it is dropped", cli=True, minimum=0,
                                   min_open=True, maximum=3600)
    # A node frozen inside a transaction (a paused VM, a cut-off host) must not stall the
    # others: PostgreSQL gives up a lock wait after this, and ends such a node's session.
    db_lock_timeout: float = _setting(5.0, "seconds a PostgreSQL statement waits for a lock "
                                      "(then 503, retried by clients); a session idle in a "
                                      "transaction for twice this long is ended", cli=True,
                                      minimum=0.1, maximum=600)
    faults: frozenset[str] = _setting(frozenset(), "deliberate faults, by name",
                                      range="names from the fault table")
    public_url: str | None = _setting(None, "base of signed URLs when behind a proxy",
                                      format=HTTP_URL)
    # Requests under any other Host are refused (DNS rebinding); see emulator.rules.origins.
    allowed_hosts: tuple[str, ...] = _setting((), "host names besides loopback that requests "
                                              "may address, comma-separated (e.g. compose "
                                              "service names)", cli=True,
                                              items=(bounds.is_host_pattern,
                                                     bounds.HOSTS_RANGE))
    allowed_origins: tuple[str, ...] = _setting((), "web origins besides the emulator's own "
                                                "whose pages may send it state-changing "
                                                "requests, comma-separated", cli=True,
                                                items=(bounds.is_origin, bounds.ORIGINS_RANGE))

    def geography(self) -> Geography:
        return Geography(list(self.locations), self.fallback)

    @property
    def db_path(self) -> Path:
        return self.data_dir / "metadata.sqlite3"

    @property
    def database_url(self) -> str:
        """The metadata database as an SQLAlchemy URL."""
        return self.database or f"sqlite:///{self.db_path}"


@dataclass(frozen=True)
class SettingRow:
    """A row of the settings table, as `SETTINGS` lists it."""

    name: str
    type: Any
    default: Any
    help: str
    cli: bool
    toml: bool
    choices: tuple[str, ...]
    minimum: float | None
    maximum: float | None
    min_open: bool
    format: Format | None
    items: tuple[Callable[[object], bool], str] | None
    range_text: str

    @property
    def kinds(self) -> tuple[Any, ...]:
        """The types a value may have: `str | None` is (str, NoneType)."""
        return get_args(self.type) if isinstance(self.type, UnionType) else (self.type,)

    @property
    def plain(self) -> bool:
        """A str, int, float or bool (perhaps None), given as it is; else a structure."""
        return all(t in (str, int, float, bool, NoneType) for t in self.kinds)

    @property
    def range(self) -> str:
        """The values this setting may take, in words (every row has one)."""
        if self.range_text:
            return self.range_text
        if self.items:
            return f"a list of {self.items[1]}"
        if self.choices:
            return f"one of {', '.join(self.choices)}"
        if bool in self.kinds:
            return "true or false"
        if int in self.kinds:
            return f"an integer from {self.minimum:,} to {self.maximum:,}"
        if float in self.kinds:
            low = f"above {self.minimum:g}" if self.min_open else f"at least {self.minimum:g}"
            return f"a finite number {low} and at most {self.maximum:g}"
        return (self.format or bounds.TEXT).describe


def _rows() -> dict[str, SettingRow]:
    hints = get_type_hints(Settings)
    rows = {}
    for f in fields(Settings):
        default = f.default_factory() if f.default_factory is not MISSING else f.default
        rows[f.name] = SettingRow(f.name, hints[f.name], default, **f.metadata)
    return rows


SETTINGS: dict[str, SettingRow] = _rows()


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def refused(name: str, range_: str, value: Any, origin: str | None) -> ValueError:
    """The one wording of a refused setting: where, which, what it may be, what it was."""
    where = f"{origin}: " if origin else ""
    return ValueError(f"{where}setting {name!r} must be {range_}, not {_shown(value)}")


def check_value(row: SettingRow, value: Any, origin: str | None = None) -> Any:
    """A plain or list setting's value, checked against its row's type and range; else a
    ValueError naming the setting, its range and `origin` (a file, flag or variable)."""
    if row.items:
        listed = bounds.as_list(value)
        test = row.items[0]
        if listed is None or not all(test(item) for item in listed):
            raise refused(row.name, row.range, value, origin)
        return tuple(listed)
    allowed = tuple(t for t in row.kinds if t is not NoneType)
    if value is None and NoneType in row.kinds:
        return None
    if float in allowed and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)  # TOML's 30 for a float setting
    if isinstance(value, bool) and bool not in allowed or not isinstance(value, allowed):
        kinds = " or ".join(t.__name__ for t in allowed)
        raise refused(row.name, f"{kinds}: {row.range}", value, origin)
    if row.choices and value not in row.choices:
        raise refused(row.name, row.range, value, origin)
    if isinstance(value, int | float) and not isinstance(value, bool):
        low_ok = row.minimum is None or (value > row.minimum if row.min_open
                                         else value >= row.minimum)
        high_ok = row.maximum is None or value <= row.maximum
        if not (math.isfinite(value) and low_ok and high_ok):
            raise refused(row.name, row.range, value, origin)
    if isinstance(value, str) and not (row.format or bounds.TEXT).test(value):
        raise refused(row.name, row.range, value, origin)
    return value


def check_structures(settings: Settings, origin: str | None = None) -> None:
    """The structured settings' ranges (buckets, prices, keys), however they were given:
    a value the TOML parsers built, or one handed to `create_app` as it is."""
    for i, loc in enumerate(settings.locations):
        if not bounds.is_bucket_name(loc.bucket):
            raise refused(f"locations[{i}].bucket", bounds.BUCKET_RANGE, loc.bucket, origin)
    for table in ("inter_region", "cross_cloud"):
        for cloud, price in getattr(settings.prices, table).items():
            if not bounds.is_price(price):
                raise refused(f"prices.{table}.{cloud}", bounds.PRICE_RANGE, price, origin)
    for i, spec in enumerate(settings.keys):
        if not (isinstance(spec.key, str) and TOKEN.test(spec.key)):
            raise refused(f"keys[{i}].key", TOKEN.describe, spec.key, origin)
    try:
        settings.geography()  # locations and fallback, now rather than at the first request
    except ValueError as exc:
        raise ValueError(f"{origin}: {exc}" if origin else str(exc)) from None


def settings_from(values: Mapping[str, Any], base: Settings | None = None) -> Settings:
    """`base` (default: a fresh temporary data dir) with `values`, each named in the table;
    an unknown name is an error, as in the TOML file."""
    values = dict(values)
    unknown = sorted(set(values) - SETTINGS.keys())
    if unknown:
        raise ValueError(f"unknown setting(s) {', '.join(unknown)}; known: "
                         f"{', '.join(SETTINGS)}")
    if base is None:
        data_dir = values.pop("data_dir", None) or tempfile.mkdtemp(prefix="o41-emulator-")
        base = Settings(data_dir=Path(data_dir))
    for name, value in values.items():
        if SETTINGS[name].plain or SETTINGS[name].items:
            values[name] = check_value(SETTINGS[name], value, "create_app")
    if "faults" in values:
        values["faults"] = frozenset(check_faults(values["faults"]))
    settings = replace(base, **values)
    check_structures(settings, "create_app")
    return settings


def _parse_locations(raw: object) -> tuple[Location, ...]:
    if not isinstance(raw, list) or not all(isinstance(item, dict) for item in raw):
        raise ValueError("setting 'locations' must be a list of tables ([[locations]])")
    out = []
    for i, item in enumerate(raw):
        try:
            p = parse_place({"cloud": item.get("cloud"), "region": item.get("region")})
        except InvalidArgument as exc:
            raise ValueError(f"locations[{i}]: {exc.message}") from None
        assert p is not None
        bucket = item.get("bucket") or f"o41-{p.cloud}-{p.region}"
        out.append(Location(p.cloud, p.region, bucket, bool(item.get("default", False))))
    return tuple(out)


def _parse_keys(raw: object) -> tuple[KeySpec, ...]:
    if not isinstance(raw, list):
        raise ValueError("setting 'keys' must be a list of tables ([[keys]])")
    out = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or not isinstance(item.get("key"), str):
            raise ValueError(f"keys[{i}] needs a string key")
        try:  # the same reading of scopes as POST /_emulator/keys
            scopes = parse_scopes(item.get("scopes"))
        except InvalidArgument as exc:
            raise ValueError(f"keys[{i}]: {exc.message}") from None
        out.append(KeySpec(item["key"], scopes))
    return tuple(out)


def _parse_prices(raw: object) -> Prices:
    if not isinstance(raw, dict):
        raise ValueError("setting 'prices' must be a table ([prices])")
    unknown = sorted(set(raw) - {"inter_region", "cross_cloud"})
    if unknown:
        raise ValueError(f"unknown price table(s) {', '.join(unknown)}")
    for table, given in raw.items():
        if not isinstance(given, dict):
            raise ValueError(f"setting 'prices.{table}' must be a table of cloud = price")
    prices = Prices()
    return Prices(
        inter_region={**prices.inter_region, **raw.get("inter_region", {})},
        cross_cloud={**prices.cross_cloud, **raw.get("cross_cloud", {})},
    )


def load_toml(settings: Settings, path: Path) -> Settings:
    """Apply a TOML config file; unknown keys are an error so typos do not pass silently,
    and a value out of its range is refused naming the file."""
    with open(path, "rb") as fh:
        raw = tomllib.load(fh)
    changes: dict = {}
    for name, value in raw.items():
        row = SETTINGS.get(name)
        if name == "default_key":
            # The dev key stays unless the file says otherwise with `default_key = false`.
            if not isinstance(value, bool):
                raise ValueError(f"{path}: default_key must be true or false")
        elif row is None or not row.toml:
            known = ", ".join(["default_key", *(r.name for r in SETTINGS.values() if r.toml)])
            raise ValueError(f"{path}: unknown setting {name!r}; known: {known}")
        elif row.plain or row.items:
            if row.items and not isinstance(value, list):
                raise refused(name, row.range, value, str(path))
            changes[name] = check_value(row, value, str(path))
        else:
            try:
                changes[name] = _STRUCTURES[name](value)
            except ValueError as exc:
                raise ValueError(f"{path}: {exc}") from None
    if raw.get("default_key", True):
        changes["keys"] = tuple(settings.keys) + changes.get("keys", ())
    else:
        changes.setdefault("keys", ())
    new = replace(settings, **changes)
    check_structures(new, str(path))
    return new


_STRUCTURES: dict[str, Callable[[Any], Any]] = {
    "locations": _parse_locations,
    "keys": _parse_keys,
    "prices": _parse_prices,
    "faults": lambda value: frozenset(check_faults(value)),
}
