"""Which requests a browser may have sent without meaning to: foreign Hosts and cross-site
state changes. Plain rules over header values; the web layer asks them before anything else.

The emulator runs beside a developer's browser, where two attacks reach it:

- DNS rebinding: a page on `evil.example` re-points its name at 127.0.0.1, and its requests,
  same-origin to the browser, carry `Host: evil.example` (and may use the well-known dev key).
  So a request is served only under a loopback name or address, or a name the user admits
  (`allowed_hosts`, the host of `public_url`, the address `serve` listens on).
- Cross-site requests: any page can POST a form, or a `fetch` with a Blob body and no
  Content-Type, without asking. Browsers mark such a request with `Origin` (and
  `Sec-Fetch-Site`); a state-changing one is refused unless it comes from the emulator's own
  pages or an origin the user admits (`allowed_origins`). Clients that are not browsers
  (curl, requests, the o41 client) send neither header and are served as before.

Like Jupyter Server's and webpack-dev-server's Host and Origin checks.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from urllib.parse import urlsplit

from ..core.errors import Forbidden

SAFE_METHODS = frozenset(("GET", "HEAD", "OPTIONS"))
#: Paths whose state-changing requests must not come from another site's page.
GUARDED_PREFIXES = ("/_emulator/", "/api/v1/")
HOSTS_SETTING = ("allowed_hosts (--allowed-hosts, O41_EMULATOR_SERVE_ALLOWED_HOSTS, or "
                 "allowed_hosts = [...] in the config file)")
ORIGINS_SETTING = ("allowed_origins (--allowed-origins, O41_EMULATOR_SERVE_ALLOWED_ORIGINS, "
                   "or allowed_origins = [...] in the config file)")


def host_name(host: str) -> str:
    """The name or address of a Host header, without its port, brackets or final dot."""
    host = host.strip().lower()
    if host.startswith("["):  # [::1]:8041
        return host[1:].partition("]")[0]
    if host.count(":") == 1:
        host = host.partition(":")[0]
    return host.rstrip(".")


def is_loopback(name: str) -> bool:
    """localhost, any *.localhost (RFC 6761: always this machine), 127.0.0.0/8 or ::1."""
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _admits(pattern: str, name: str) -> bool:
    pattern = host_name(pattern)
    if pattern == "*":
        return True
    if pattern.startswith("."):  # ".example.com": the name and every subdomain
        return name == pattern[1:] or name.endswith(pattern)
    return name == pattern


class Guard:
    """The hosts and origins one emulator admits, from its settings."""

    def __init__(self, allowed_hosts: Iterable[str] = (), allowed_origins: Iterable[str] = (),
                 public_url: str | None = None) -> None:
        self.hosts = list(allowed_hosts)
        self.origins = {o.rstrip("/").lower() for o in allowed_origins}
        if public_url:
            split = urlsplit(public_url)
            self.hosts.append(split.hostname or "")
            self.origins.add(f"{split.scheme}://{split.netloc}".lower())

    def host_admitted(self, host: str) -> bool:
        name = host_name(host)
        return is_loopback(name) or any(_admits(p, name) for p in self.hosts)

    def check_host(self, host: str) -> None:
        """Refuse a request addressed to a name the emulator does not answer to."""
        if not self.host_admitted(host):
            raise Forbidden(
                f"Host {host_name(host)[:100]!r} is not a name of this emulator (a page on a "
                f"DNS-rebinding domain would look like this); to serve under it, add it to "
                f"{HOSTS_SETTING}")

    def check_origin(self, method: str, path: str, scheme: str, host: str,
                     origin: str | None, fetch_site: str | None) -> None:
        """Refuse a state-changing request a page of another site made the browser send.

        Allowed: no browser marks at all (not a browser), `Sec-Fetch-Site: same-origin` or
        `none` (the user's own navigation), an `Origin` equal to the request's own origin
        (the emulator's pages), or one of the admitted origins."""
        if method.upper() in SAFE_METHODS or not path.startswith(GUARDED_PREFIXES):
            return
        site = (fetch_site or "").strip().lower()
        if site in ("same-origin", "none"):
            return
        if origin is None and not site:
            return
        given = (origin or "").strip().rstrip("/").lower()
        if given and (given == f"{scheme}://{host}".lower() or given in self.origins):
            return
        shown = given or f"a {site} page"
        raise Forbidden(
            f"refused a cross-site {method.upper()} from {shown[:100]!r}: a page of another "
            f"site may not change this emulator; to let that origin's pages do so, add it to "
            f"{ORIGINS_SETTING}")
