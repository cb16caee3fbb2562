"""Settings of one emulator: defaults, then a TOML file, then explicit overrides.

The same `Settings` object is built once in the CLI's master process and handed to every
worker, so all workers agree on locations, prices, keys and the data directory.
"""

from __future__ import annotations

import tempfile
import tomllib
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields, replace
from pathlib import Path
from types import NoneType, UnionType
from typing import Any, get_args, get_type_hints

from .errors import InvalidArgument
from .faults import check_faults
from .keys import parse_scopes
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


def _setting(default: Any = MISSING, help: str = "", *, cli: bool = False,
             toml: bool = True, choices: tuple[str, ...] = (), minimum: float | None = None,
             min_open: bool = False, factory: Any = MISSING) -> Any:
    """One row of the settings table: a `Settings` field with its help and where it may be
    given (a TOML key unless `toml=False`, also a `serve` option and variable when `cli`).
    `min_open`: the value must be above `minimum`, not equal to it."""
    meta = {"help": help, "cli": cli, "toml": toml, "choices": choices, "minimum": minimum,
            "min_open": min_open}
    return field(default=default, default_factory=factory, metadata=meta)


@dataclass(frozen=True)
class Settings:
    """Every setting of one emulator, with its type, default and help: the one table that
    the TOML file, `serve`'s options (and their O41_EMULATOR_SERVE_* variables) and
    `create_app`'s mapping are read against."""

    data_dir: Path = _setting(help="metadata and buckets", toml=False)
    database: str | None = _setting(None, "metadata database: a SQLite file in the data dir "
                                    "(default), or postgresql://user@host:port/db shared by "
                                    "several nodes", cli=True)
    storage: str = _setting("fs", "bucket backend: folders under the data dir (fs) or an S3 "
                            "endpoint (s3)", cli=True, choices=("fs", "s3"))
    s3_endpoint: str | None = _setting(None, "S3-compatible endpoint for storage s3, e.g. "
                                       "http://127.0.0.1:9000 (MinIO)", cli=True)
    s3_access_key: str | None = _setting(None, "access key for storage s3", cli=True)
    s3_secret_key: str | None = _setting(None, "secret key for storage s3", cli=True)
    s3_secure: bool = _setting(False, "use https to reach the S3 endpoint")
    s3_region: str = _setting("us-east-1", "region the S3 client signs for")
    locations: tuple[Location, ...] = _setting(DEFAULT_LOCATIONS, "the cloud regions, each "
                                               "with its bucket ([[locations]])")
    fallback: str = _setting("aws/us-east-1", "where writes from clouds without a location go")
    prices: Prices = _setting(help="USD per GB by route ([prices], merged over the defaults)",
                              factory=Prices)
    keys: tuple[KeySpec, ...] = _setting((KeySpec(DEFAULT_KEY, (("", "write"),)),),
                                         "API keys and their scopes ([[keys]])")
    admin_key: str | None = _setting(None, "require this bearer key on /_emulator/ admin "
                                     "endpoints and the pages", cli=True)
    url_lifetime: int = _setting(3600, "seconds a signed URL stays valid", cli=True, minimum=1)
    upload_lifetime: int = _setting(24 * 3600, "seconds an uncommitted upload is kept",
                                    minimum=1)
    max_file_size: int = _setting(1 << 40, "declared file sizes above this are 413",
                                  minimum=0)
    max_files: int = _setting(10_000, "files per version", minimum=1)
    max_json_bytes: int = _setting(4 << 20, "request bodies of /api/v1", minimum=1)
    chunk_size: int = _setting(1 << 20, "bytes per read and write of the data plane",
                               minimum=1)
    # Slow or stalled clients cannot hold a server thread forever.
    read_timeout: float = _setting(30.0, "seconds a request may send no byte (or a download "
                                   "read none) before it is dropped", cli=True, minimum=0,
                                   min_open=True)
    faults: frozenset[str] = _setting(frozenset(), "deliberate faults, by name")
    public_url: str | None = _setting(None, "base of signed URLs when behind a proxy")

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
    min_open: bool

    @property
    def kinds(self) -> tuple[Any, ...]:
        """The types a value may have: `str | None` is (str, NoneType)."""
        return get_args(self.type) if isinstance(self.type, UnionType) else (self.type,)

    @property
    def plain(self) -> bool:
        """A str, int, float or bool (perhaps None), given as it is; else a structure."""
        return all(t in (str, int, float, bool, NoneType) for t in self.kinds)


def _rows() -> dict[str, SettingRow]:
    hints = get_type_hints(Settings)
    rows = {}
    for f in fields(Settings):
        default = f.default_factory() if f.default_factory is not MISSING else f.default
        rows[f.name] = SettingRow(f.name, hints[f.name], default, **f.metadata)
    return rows


SETTINGS: dict[str, SettingRow] = _rows()


def check_value(row: SettingRow, value: Any) -> Any:
    """A plain (scalar) setting's value, type-checked against its row; else ValueError."""
    allowed = tuple(t for t in row.kinds if t is not NoneType)
    if value is None and NoneType in row.kinds:
        return None
    if float in allowed and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)  # TOML's 30 for a float setting
    if isinstance(value, bool) and bool not in allowed or not isinstance(value, allowed):
        kinds = " or ".join(t.__name__ for t in allowed)
        raise ValueError(f"setting {row.name!r} must be {kinds}, not {value!r}")
    if row.choices and value not in row.choices:
        raise ValueError(f"setting {row.name!r} must be one of {', '.join(row.choices)}")
    if row.minimum is not None and (value <= row.minimum if row.min_open
                                    else value < row.minimum):
        bound = "above" if row.min_open else "at least"
        raise ValueError(f"setting {row.name!r} must be {bound} {row.minimum}")
    return value


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
        if SETTINGS[name].plain:
            check_value(SETTINGS[name], value)
    if "faults" in values:
        values["faults"] = frozenset(check_faults(values["faults"]))
    return replace(base, **values)


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
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or not isinstance(item.get("key"), str):
            raise ValueError(f"keys[{i}] needs a string key")
        try:  # the same reading of scopes as POST /_emulator/keys
            scopes = parse_scopes(item.get("scopes"))
        except InvalidArgument as exc:
            raise ValueError(f"keys[{i}]: {exc.message}") from None
        out.append(KeySpec(item["key"], scopes))
    return tuple(out)


def _parse_prices(raw: dict) -> Prices:
    unknown = sorted(set(raw) - {"inter_region", "cross_cloud"})
    if unknown:
        raise ValueError(f"unknown price table(s) {', '.join(unknown)}")
    prices = Prices()
    return Prices(
        inter_region={**prices.inter_region, **raw.get("inter_region", {})},
        cross_cloud={**prices.cross_cloud, **raw.get("cross_cloud", {})},
    )


def load_toml(settings: Settings, path: Path) -> Settings:
    """Apply a TOML config file; unknown keys are an error so typos do not pass silently."""
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
        elif row.plain:
            changes[name] = check_value(row, value)
        elif name == "locations":
            changes["locations"] = _parse_locations(value)
        elif name == "keys":
            changes["keys"] = _parse_keys(value)
        elif name == "prices":
            changes["prices"] = _parse_prices(value)
        elif name == "faults":
            changes["faults"] = frozenset(check_faults(value))
    if raw.get("default_key", True):
        changes["keys"] = tuple(settings.keys) + changes.get("keys", ())
    else:
        changes.setdefault("keys", ())
    new = replace(settings, **changes)
    new.geography()  # validate locations and fallback now, not at the first request
    return new
