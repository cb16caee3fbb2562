"""The ranges settings may take: what each value must look like, said once in words.

A setting outside its range is refused when the settings load (naming the setting, this
range and where the value came from), not at the first request: `url_lifetime = 2**63 - 1`
used to make every write a 500, and `bucket = "../x"` put objects outside the data dir.
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

MAX_TEXT = 4096


@dataclass(frozen=True)
class Format:
    """A string setting's range: `describe` in words, `test` the check."""

    describe: str
    test: Callable[[str], bool]


def _text(value: str) -> bool:
    return 0 < len(value) <= MAX_TEXT and value.isprintable()


def _token(value: str) -> bool:
    # It travels in an Authorization header: printable ASCII, no spaces.
    return 0 < len(value) <= 256 and all("!" <= ch <= "~" for ch in value)


def _http_url(value: str) -> bool:
    """An http(s) base URL: scheme and host, perhaps a port and a path; nothing else."""
    if not _text(value) or any(ch.isspace() for ch in value):
        return False
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError on a port out of range
    except ValueError:
        return False
    return (parts.scheme in ("http", "https") and bool(parts.hostname)
            and not parts.query and not parts.fragment and parts.username is None)


TEXT = Format(f"a string of 1 to {MAX_TEXT} printable characters", _text)
TOKEN = Format("1 to 256 printable ASCII characters without spaces", _token)
HTTP_URL = Format("an http:// or https:// URL with a host, e.g. http://127.0.0.1:9000, "
                  "with no query, fragment or user", _http_url)

# S3's rules for bucket names (which also keep a folder bucket inside the data dir: no '/',
# no '..', no leading '.').
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
BUCKET_RANGE = ("a valid S3 bucket name: 3 to 63 lowercase letters, digits, '.' and '-', "
                "starting and ending with a letter or digit, no '..', not an IP address")


def is_bucket_name(name: object) -> bool:
    if not isinstance(name, str) or not _BUCKET.fullmatch(name) or ".." in name:
        return False
    if re.fullmatch(r"[0-9.]+", name):
        try:
            ipaddress.IPv4Address(name)
            return False
        except ValueError:
            pass
    return not name.startswith(("xn--", "sthree-")) and not name.endswith(("-s3alias", "--ol-s3"))


MAX_PRICE = 1000.0  # USD per GB; a real egress price is cents
PRICE_RANGE = f"a finite number of USD per GB from 0 to {MAX_PRICE:g}"


def is_price(value: object) -> bool:
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and math.isfinite(value) and 0 <= value <= MAX_PRICE)


# A Host the user admits: a name (perhaps with a leading '.' for it and its subdomains), an
# IP address, or '*' for any host at all.
_LABEL = r"[A-Za-z0-9_]([A-Za-z0-9_-]{0,62})?"
_HOST_NAME = re.compile(rf"\.?{_LABEL}(\.{_LABEL})*")
HOSTS_RANGE = ("host names (a leading '.' admits the name and its subdomains), IP "
               "addresses, or '*' for any host; no ports")


def is_host_pattern(value: object) -> bool:
    if not isinstance(value, str) or not 0 < len(value) <= 253:
        return False
    if value == "*":
        return True
    try:
        ipaddress.ip_address(value.strip("[]"))
        return True
    except ValueError:
        return bool(_HOST_NAME.fullmatch(value))


ORIGINS_RANGE = "origins as a browser sends them: scheme://host[:port], e.g. http://localhost:3000"


def is_origin(value: object) -> bool:
    if not isinstance(value, str) or not _http_url(value):
        return False
    parts = urlsplit(value)
    return parts.path == "" and value == value.rstrip("/")


def as_list(value: object) -> list | None:
    """A list setting's items: a TOML/JSON list, or a comma-separated string (a flag's or a
    variable's text); None when it is neither."""
    if isinstance(value, str):
        return [item.strip() for item in value.split(",") if item.strip()]
    if isinstance(value, list | tuple):
        return list(value)
    return None
