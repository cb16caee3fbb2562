"""Multi-request steps (checkpoint, download) and the response checks every test shares.

Each check names the rule it enforces, so a failing step reports the broken rule id.
"""

from __future__ import annotations

import hashlib
import random
import re
import secrets
from collections.abc import Iterator
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any
from urllib.parse import parse_qsl
from urllib.parse import urlencode
from urllib.parse import urlsplit
from urllib.parse import urlunsplit

from conformance.client import Client
from conformance.client import Reply
from conformance.model import UNKNOWN_PLACE
from conformance.model import FileSpec
from conformance.model import Place
from conformance.model import Placement
from conformance.model import Topology
from conformance.rules import RuleViolation
from conformance.rules import check
from conformance.rules import check_equal

if TYPE_CHECKING:
    from conformance.env import Env

__all__ = [
    "Box",
    "Upload",
    "carries_values",
    "commit_ok",
    "expect_outcome",
    "open_box",
    "checkpoint",
    "download",
    "expect_error",
    "expect_ok",
    "file_specs",
    "make_files",
    "ranges",
    "sha256",
    "start_upload",
    "tampered_url",
]

_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def make_files(sizes: Mapping[str, int], seed: int = 0) -> dict[str, bytes]:
    """Deterministic pseudo-random file contents (reproducible from the seed)."""
    rng = random.Random(seed)
    return {name: rng.randbytes(size) for name, size in sizes.items()}


def file_specs(files: Mapping[str, bytes]) -> list[FileSpec]:
    return [FileSpec(name, len(data), sha256(data)) for name, data in files.items()]


def expect_ok(reply: Reply, rule: str, what: str) -> dict[str, Any]:
    """A 2xx with a JSON object body, else a violation of ``rule``."""
    check(reply.ok, rule, f"{what}: expected success, got {reply.brief()}")
    check(isinstance(reply.body, dict), rule, f"{what}: the body is not a JSON object")
    return reply.body


def expect_error(reply: Reply, status: int, code: str, rule: str, what: str) -> None:
    """The contract's error shape with this status and code, else a violation of ``rule``."""
    if reply.status != status or reply.code != code:
        raise RuleViolation(rule, f"{what}: expected {status} {code}, got {reply.brief()}")
    message = reply.body["error"].get("message")
    check(isinstance(message, str) and message, rule, f"{what}: error without a message")


@dataclass
class Upload:
    """A started upload: the write's reply and, when it was accepted, the upload id."""

    write: Reply
    files: dict[str, bytes]

    @property
    def upload_id(self) -> str | None:
        return str(self.write.body["upload"]) if self.write.ok else None


def start_upload(
    api: Client,
    artifact: str,
    token: str,
    version: str,
    files: Mapping[str, bytes],
    *,
    put: bool = True,
) -> Upload:
    """``/versions/write`` then, if accepted and ``put``, PUT every file to its URL."""
    specs = [f.as_json() for f in file_specs(files)]
    reply = api.write(artifact, token, version, specs)
    up = Upload(reply, dict(files))
    if reply.ok and put:
        body = expect_ok(reply, "VER-4", "write")
        urls = {f["name"]: f["url"] for f in body.get("files", [])}
        check(set(urls) == set(files), "VER-4", f"write returned URLs for {sorted(urls)}")
        for name, data in files.items():
            res = api.put(urls[name], data)
            check(res.ok, "VER-4", f"PUT of {name} ({len(data)} bytes) got {res.status}")
    return up


def expect_fork_forbidden(api: Client, target: str, source: str, rule: str, what: str,
                          holder: str | None = None) -> None:
    """A fork of ``source``'s step-00000001 into ``target`` with ``api``'s key is 403."""
    expect_error(api.open(target, f"o41://{source}/step-00000001", None, holder), 403,
                 "forbidden", rule, what)


def expect_second_commit_refused(api: Client, box: Box, first: Upload, second: Upload,
                                 code: str, rule: str, what: str) -> None:
    """Of two uploads started by ``box``, ``first`` commits and then ``second``'s commit is
    409 ``code`` (``what``)."""
    expect_ok(api.commit(box.artifact, box.token, str(first.upload_id)), rule, "first commit")
    expect_error(api.commit(box.artifact, box.token, str(second.upload_id)), 409, code, rule,
                 what)


def checkpoint(
    api: Client, artifact: str, token: str, version: str, files: Mapping[str, bytes]
) -> Reply:
    """Write, upload and commit one version; the commit's reply (or the refused write's)."""
    up = start_upload(api, artifact, token, version, files)
    if up.upload_id is None:
        return up.write
    return api.commit(artifact, token, up.upload_id)


def tampered_url(url: str) -> str:
    """The URL with one character of its signature (its longest query value, else the path)
    changed. The third-last character is used: in base64 the last one may carry only
    ignored padding bits, so changing it need not change the signature at all."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)

    def flip(text: str) -> str:
        i = max(0, len(text) - 3)
        return text[:i] + ("1" if text[i : i + 1] == "0" else "0") + text[i + 1 :]

    if not carries_values(parts.query):
        return urlunsplit(parts._replace(path=flip(parts.path)))
    i = max(range(len(query)), key=lambda j: len(query[j][1]))
    query[i] = (query[i][0], flip(query[i][1]))
    return urlunsplit(parts._replace(query=urlencode(query)))


def carries_values(query: str) -> bool:
    """Whether a URL's query has a part with a value: one that may be a signature. Parts
    without a value (``place=``) say nothing, and a URL whose query has only such parts
    carries its signature in its path."""
    return any(v for _, v in parse_qsl(query, keep_blank_values=True))


def case_matters(signature: str) -> bool:
    """Whether swapping a signature's letter case changes it: only when it mixes cases, as
    base64 does. A hex or base32 signature may rightly be read in either case, so that a
    swapped case is the same signature there (and serves the file)."""
    return signature.lower() != signature and signature.upper() != signature


def ranges(size: int, parts: int) -> list[tuple[int, int]]:
    """Split ``size`` bytes into at most ``parts`` inclusive ranges."""
    parts = max(1, min(parts, size))
    step = -(-size // parts)
    return [(a, min(a + step, size) - 1) for a in range(0, size, step)]


def _get_range(api: Client, url: str, a: int, b: int, size: int) -> bytes:
    res = api.fetch(url, byte_range=(a, b))
    check(res.status == 206, "READ-3", f"GET Range bytes={a}-{b} got {res.status}, not 206")
    m = _CONTENT_RANGE.fullmatch(res.headers.get("Content-Range", ""))
    check(
        m is not None and (int(m[1]), int(m[2])) == (a, b) and m[3] in (str(size), "*"),
        "READ-3",
        f"Range bytes={a}-{b} of {size} answered Content-Range "
        f"{res.headers.get('Content-Range')!r}",
    )
    check(len(res.content) == b - a + 1, "READ-3", f"Range bytes={a}-{b} sent {len(res.content)}")
    return res.content


def download(api: Client, version: Mapping[str, Any], parts: int = 1) -> dict[str, bytes]:
    """Fetch every file of a Version-with-urls: one plain GET each, or ``parts`` parallel
    ranged GETs reassembled (the page's cross-cloud resume); checks sizes and sha256."""
    out: dict[str, bytes] = {}
    for f in version["files"]:
        name, size, url = f["name"], int(f["size"]), f.get("url")
        check(url, "READ-2", f"file {name} of {version.get('version')} has no url")
        if parts <= 1 or size == 0:
            res = api.fetch(url)
            check(res.status == 200, "READ-2", f"plain GET of {name} got {res.status}")
            data, rule = res.content, "READ-2"
        else:
            spans = ranges(size, parts)
            with ThreadPoolExecutor(max_workers=min(len(spans), 8)) as pool:
                futures = [pool.submit(_get_range, api, url, a, b, size) for a, b in spans]
                chunks = [fut.result() for fut in futures]
            data, rule = b"".join(chunks), "READ-3"
        check(len(data) == size, rule, f"{name}: got {len(data)} bytes, version says {size}")
        check(sha256(data) == f["sha256"], rule, f"{name}: bytes do not match the sha256")
        out[name] = data
    return out


def expect_served(api: Client, url: str, data: bytes, span: tuple[int, int], clause: str,
                  what: str) -> None:
    """A GET of ``url`` answers 200 and ``data``; a GET of the inclusive range ``span``, 206
    and those bytes (``what`` names the URL and when it was tried)."""
    got = api.fetch(url)
    check_equal((got.status, got.content == data), (200, True), clause, f"GET of {what}")
    part = api.fetch(url, byte_range=span)
    check_equal((part.status, part.content), (206, data[span[0]:span[1] + 1]), clause,
                f"ranged GET of {what}")


@dataclass
class Box:
    """One training box: its holder id, place, and the token and epoch of its open."""

    holder: str
    artifact: str
    place: Place | None
    token: str
    epoch: int
    opened: dict[str, Any]


def expect_version_refused(api: Client, box: Box, version: str, specs: list[dict[str, Any]],
                           rule: str) -> None:
    """A write of ``version`` (a name that is no version name) is 400 invalid_argument."""
    expect_error(api.write(box.artifact, box.token, version, specs), 400, "invalid_argument",
                 rule, f"write of version {version!r}")


def open_box(
    api: Client,
    artifact: str,
    holder: str,
    place: Place | str | None = None,
    resume: str | None = "latest",
    rule: str = "OPEN-1",
) -> Box:
    """Open ``artifact`` for ``holder``; a violation of ``rule`` unless it succeeds."""
    if isinstance(place, str):
        place = Place.parse(place)
    body = expect_ok(api.open(artifact, resume, place, holder), rule, f"open by {holder}")
    check(isinstance(body.get("token"), str), rule, f"open returned token {body.get('token')!r}")
    check(isinstance(body.get("epoch"), int), rule, f"open returned epoch {body.get('epoch')!r}")
    return Box(holder, artifact, place, body["token"], body["epoch"], body)


def commit_ok(
    api: Client, box: Box, version: str, files: Mapping[str, bytes], rule: str = "VER-4"
) -> dict[str, Any]:
    """Checkpoint ``version`` from ``box``; a violation of ``rule`` unless it commits."""
    reply = checkpoint(api, box.artifact, box.token, version, files)
    return expect_ok(reply, rule, f"checkpoint {version} by {box.holder}")


def a_version_in_each_cloud(
    env: Env, api: Client, slug: str, sizes: Mapping[str, int], seed: int, rule: str
) -> Iterator[tuple[str, Place, str]]:
    """For each cloud in turn, a new artifact ``{slug}-{cloud}`` holding ``step-00000001``,
    committed from the cloud's default location: yields (cloud, that location, artifact)."""
    topo = env.topology
    for cloud in topo.clouds:
        home = topo.default_for(cloud)
        assert home is not None
        name = env.artifact(f"{slug}-{cloud}")
        commit_ok(api, open_box(api, name, "box-a", home), "step-00000001",
                  make_files(sizes, seed), rule)
        yield cloud, home, name


def expect_open_placed(body: Mapping[str, Any], want: Placement, fallback: Place, rule: str,
                       warned: str, what: str) -> None:
    """An open's answer (``what``): writes go to ``want``'s location and route (``rule``); a
    default placement is warned about, a fallback one by a warning naming ``fallback``
    (``warned``)."""
    wl = body.get("write_location") or {}
    check_equal((Place.from_json(wl) if wl else None, wl.get("route")),
                (want.location, want.route), rule, f"write_location of {what}")
    warnings = [str(w) for w in body.get("warnings") or []]
    if want.kind == "default":
        check(warnings, warned, f"no warning for {what}")
    elif want.kind == "fallback":
        check(any(fallback.cloud in w and fallback.region in w for w in warnings), warned,
              f"{what}: no warning naming the fallback {fallback}: {warnings}")


def expect_write_placed(
    reply: Reply, want: Placement, rule: str, what: str, placed_what: str
) -> dict[str, Any]:
    """A write's answer: a success (``what``) whose location and route are ``want``'s
    (``placed_what``); its body."""
    body = expect_ok(reply, rule, what)
    check_equal((Place.from_json(body.get("location")), body.get("route")),
                (want.location, want.route), rule, placed_what)
    return body


def expect_outcome(
    reply: Reply, expected: tuple[int, str, str] | None, ok_rule: str, what: str
) -> dict[str, Any] | None:
    """Success (checked under ``ok_rule``) or the expected (status, code, rule) error."""
    if expected is None:
        return expect_ok(reply, ok_rule, what)
    expect_error(reply, expected[0], expected[1], expected[2], what)
    return None


# --- "changes nothing" and "never shows": the checks behind every refusal ----------------


def edge_name(prefix: str, slug: str, salt: str) -> str:
    """An artifact name using every character class the contract allows in a name part
    (upper and lower case, digits, ``.``, ``_``, ``-``): implementations that mishandle one
    spelling fail on these while plain names pass."""
    return f"{prefix}/{slug}.V2_{salt}-x"


def edge_box(
    api: Client, prefix: str, slug: str, place: Place | str | None = None, holder: str = "box-a"
) -> Box:
    """A box holding a fresh artifact with an :func:`edge_name` (a random salt keeps names
    of reruns against one target apart)."""
    return open_box(api, edge_name(prefix, slug, secrets.token_hex(3)), holder, place)


def open_raw(
    api: Client,
    artifact: str,
    resume: str | None = "latest",
    place: dict[str, Any] | None = None,
    holder: str | None = None,
) -> Reply:
    """An open whose place is sent exactly as given (e.g. ``{"cloud": "GCP", ...}``)."""
    body: dict[str, Any] = {"artifact": artifact, "resume": resume, "place": place}
    if holder is not None:
        body["holder"] = holder
    return api.call("POST", "/artifacts/open", body=body)


@dataclass(frozen=True)
class Snapshot:
    """What a refused request must leave as it was: epoch, holder, latest, listed versions."""

    exists: bool
    epoch: Any = None
    holder: Any = None
    latest: Any = None
    count: Any = None
    versions: tuple[str, ...] = ()
    forked_from: Any = None


def snapshot(api: Client, artifact: str) -> Snapshot:
    reply = api.artifact(artifact)
    if reply.status == 404:
        return Snapshot(False)
    body = expect_ok(reply, "READ-1.a", f"artifacts/read {artifact}")
    listed = expect_ok(api.list(artifact), "READ-1.a", f"list {artifact}")["versions"]
    return Snapshot(
        True,
        body.get("epoch"),
        body.get("holder"),
        body.get("latest"),
        body.get("versions"),
        tuple(v.get("version") for v in listed),
        body.get("forked_from"),
    )


def expect_unchanged(api: Client, artifact: str, before: Snapshot, clause: str, what: str) -> None:
    """The artifact looks exactly as in ``before`` (a refused open or write changed nothing)."""
    after = snapshot(api, artifact)
    if after != before:
        raise RuleViolation(clause, f"{what} changed {artifact}: before {before}, after {after}")


def expect_writer_alive(
    api: Client, box: Box, version: str, clause: str, what: str, size: int = 16
) -> dict[str, Any]:
    """The box still writes and commits (nobody fenced it): its checkpoint shows as latest."""
    files = make_files({"alive.bin": size}, len(version))
    body = expect_ok(
        checkpoint(api, box.artifact, box.token, version, files),
        clause,
        f"{what}: checkpoint {version} by {box.holder}",
    )
    latest = expect_ok(api.artifact(box.artifact), "READ-1.a", "artifacts/read")["latest"]
    check(latest == version, clause, f"{what}: latest is {latest!r}, not {version}")
    return body


def expect_invisible(api: Client, artifact: str, version: str, clause: str, what: str) -> None:
    """A version that must never show: read 404, not listed, not latest, not counted."""
    expect_error(api.read(artifact, version), 404, "not_found", clause, f"{what}: read {version}")
    reply = api.artifact(artifact)
    if reply.status == 404:
        return
    state = expect_ok(reply, clause, f"{what}: artifacts/read")
    listed = [v.get("version") for v in expect_ok(api.list(artifact), clause, "list")["versions"]]
    check(version not in listed, clause, f"{what}: {version} listed in {listed}")
    check(state.get("latest") != version, clause, f"{what}: {version} is latest")
    check(
        state.get("versions") == len(listed),
        clause,
        f"{what}: artifacts/read counts {state.get('versions')} versions, list shows {listed}",
    )
    latest = api.read(artifact, "latest")
    if latest.ok:
        check(latest.body.get("version") != version, clause, f"{what}: latest read {version}")


# --- names under a prefix-scoped key ---------------------------------------------------------

_ARTIFACT_NAME = re.compile(r"[A-Za-z0-9._-]+/[A-Za-z0-9._-]+")


def scoped_prefixes(env: Any) -> tuple[str, str | None]:
    """The scoped key's write prefix and read-only prefix (None: it has none). The Env of a
    ``--scoped-key KEY=PREFIX`` run says; else the spawn configuration's two prefixes."""
    scoped = getattr(env, "scoped", None)
    if scoped is not None:
        return scoped.write_prefix, getattr(scoped, "read_prefix", None)
    return f"{env.prefix}-w/", f"{env.prefix}/r-"


def scoped_name(env: Any, slug: str, access: str = "write") -> str:
    """A fresh artifact name under the scoped key's write or read-only prefix; the test
    skips, naming the option, when the run has no such prefix."""
    import pytest

    write, read = scoped_prefixes(env)
    prefix = write if access == "write" else read
    if prefix is None:
        pytest.skip("optional capability: no read-only prefix (pass --scoped-read-prefix)")
    return f"{prefix}{slug}-{secrets.token_hex(3)}"


def names_just_outside(env: Any, salt: str) -> list[str]:
    """Valid artifact names one character away from the scoped key's write prefix (another
    case, a character before it, the prefix cut short): all outside every prefix it has."""
    write, read = scoped_prefixes(env)
    candidates = [
        write.swapcase() + salt,
        "x" + write + salt,
        write[:-1] + "x" + salt,
        write[:-1] + salt,
        write.rstrip("-_.") or write,
    ]
    if write.endswith("/"):
        # A project grant (``teamb/``): the projects that start with its name but are not it
        # (``teamb2x/``, ``teambx/``), which a grant matched without its slash would reach.
        project = write[:-1]
        candidates += [f"{project}2x/{salt}", f"{project}x/{salt}", f"{project}-/{salt}",
                       f"{project[:-1]}/{salt}" if len(project) > 1 else ""]
    inside = tuple(p for p in (write, read) if p)
    return [
        n
        for n in dict.fromkeys(candidates)
        if _ARTIFACT_NAME.fullmatch(n) and not n.startswith(inside)
    ]


def two_clouds(env: Env) -> Topology:
    """The target's topology; a skip when all its locations are in one cloud."""
    topo = env.topology
    if len(topo.clouds) < 2:
        import pytest

        pytest.skip("the target has locations in one cloud only")
    return topo


def a_box_and_a_reader_elsewhere(env: Env, api: Client, slug: str) -> tuple[Place, Place, Box]:
    """A new artifact opened at the target's first location: that location, a reader in
    another cloud (an unknown place when there is none), and the box."""
    topo = env.topology
    home = topo.locations[0]
    reader = next((p for p in topo.locations if p.cloud != home.cloud), UNKNOWN_PLACE)
    return home, reader, open_box(api, env.artifact(slug), "box-a", home)


def expect_resumes(box: Box, version: str, clause: str, what: str) -> None:
    """The open that made ``box`` resumes ``version``."""
    check_equal((box.opened.get("resume_from") or {}).get("version"), version, clause, what)
