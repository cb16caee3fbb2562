"""READ-4.d from the outside, whatever the shape of the target's URLs: a URL built by hand
from a signed one for a sibling file, another version or another artifact, or the signed URL
with a part of it left out, must not give the bytes of a file.

The suite does not know how a target builds its URLs (a query signature, one opaque path,
the names in base64...), so it rewrites every spelling of the names it can see in one: the
artifact, the version and the file name as they are, percent-encoded, or inside a base64
piece of the path or query. A 403 or 404 is a pass; a 2xx with a file's bytes is a URL that
was never signed. Nothing here skips: a URL that shows no name still has parts to leave out.
"""

from __future__ import annotations

import base64
import binascii
import re
from urllib.parse import quote
from urllib.parse import urlsplit
from urllib.parse import urlunsplit

import pytest

from conformance.actions import commit_ok
from conformance.actions import make_files
from conformance.actions import open_box
from conformance.checks import expect_error
from conformance.checks import expect_ok
from conformance.client import Client
from conformance.env import Env
from conformance.rules import check

#: Runs of base64 characters long enough to hide a name: URL-safe (no ``/``) and standard.
_B64_RUNS = (re.compile(r"[A-Za-z0-9_-]{8,}={0,2}"), re.compile(r"[A-Za-z0-9+/]{8,}={0,2}"))
_ALPHABETS = (b"-_", b"+/")


def _b64_respelled(text: str, old: str, new: str) -> set[str]:
    """``text`` with every base64 piece that decodes to text holding ``old`` re-encoded with
    ``new`` in its place, in the piece's own alphabet and padding."""
    out = set()
    for run in _B64_RUNS:
        for m in run.finditer(text):
            piece = m.group(0)
            bare = piece.rstrip("=")
            for alphabet in _ALPHABETS:
                try:
                    raw = base64.b64decode(bare + "=" * (-len(bare) % 4), altchars=alphabet,
                                           validate=True)
                    decoded = raw.decode()
                except (binascii.Error, ValueError, UnicodeDecodeError):
                    continue
                if old not in decoded:
                    continue
                again = base64.b64encode(decoded.replace(old, new).encode(), altchars=alphabet)
                token = again.decode() if piece.endswith("=") else again.decode().rstrip("=")
                out.add(text[: m.start()] + token + text[m.end() :])
    return out


def respelled(url: str, old: str, new: str) -> set[str]:
    """``url`` with ``old`` replaced by ``new`` in every spelling it appears in: plain,
    percent-encoded (either case of hex digits), or inside a base64 piece."""
    parts = urlsplit(url)
    tail = urlunsplit(("", "", parts.path, parts.query, ""))
    spellings = {(old, new), (quote(old, safe=""), quote(new, safe="")),
                 (quote(old, safe="").lower(), quote(new, safe="").lower()),
                 (quote(old), quote(new))}
    found = {tail.replace(o, n) for o, n in spellings if o in tail}
    found |= _b64_respelled(tail, old, new)
    head = f"{parts.scheme}://{parts.netloc}"
    return {head + t for t in found if t != tail}


def cut_down(url: str) -> list[tuple[str, str]]:
    """``url`` with each query parameter that carries a value, the whole query (when one
    does), and each path segment left out, and with its path changed by one slash
    (appended, or its last one doubled)."""
    parts = urlsplit(url)
    head, _, leaf = parts.path.rpartition("/")
    out = [("path with a slash appended", urlunsplit(parts._replace(path=parts.path + "/"))),
           ("path with its last slash doubled",
            urlunsplit(parts._replace(path=f"{head}//{leaf}")))]
    params = [p for p in parts.query.split("&") if p]
    # A part without a value (``place=``, or ``place``) says nothing: leaving it out gives a
    # URL of the same meaning, which may rightly serve the same bytes. Only parts that carry
    # a value are left out.
    valued = [i for i, p in enumerate(params) if p.partition("=")[2]]
    for i in valued:
        rest = "&".join(params[:i] + params[i + 1 :])
        what = f"query part {params[i].split('=')[0]!r} left out"
        out.append((what, urlunsplit(parts._replace(query=rest))))
    if valued:
        out.append(("the whole query left out", urlunsplit(parts._replace(query=""))))
    segments = parts.path.split("/")
    for i, seg in enumerate(segments):
        if seg:
            path = "/".join(segments[:i] + segments[i + 1 :]) or "/"
            out.append((f"path segment {i} left out", urlunsplit(parts._replace(path=path))))
    return out


@pytest.mark.rule("READ-4.d", "AUTH-1.a")
def test_urls_built_by_hand_for_other_files_give_no_bytes(o41_env: Env, o41_api: Client) -> None:
    """Only the signed URLs of ``a``'s step 1 are ever asked for; the other files' bytes are
    known because the test wrote them. Equal sizes everywhere, so only bytes tell them apart."""
    a = open_box(o41_api, o41_env.artifact("r4d-a"), "box-a")
    b = open_box(o41_api, o41_env.artifact("r4d-b"), "box-b")
    names = {"alpha.bin": 300, "beta.bin": 300}
    a1, a2, b1 = make_files(names, 401), make_files(names, 402), make_files(names, 403)
    commit_ok(o41_api, a, "step-00000001", a1)
    commit_ok(o41_api, a, "step-00000002", a2)
    commit_ok(o41_api, b, "step-00000001", b1)
    body = expect_ok(o41_api.read(a.artifact, "step-00000001", urls=True), "READ-2", "read")
    issued = {f["name"]: o41_api.absolute(f["url"]) for f in body["files"]}
    source = issued["alpha.bin"]
    check(o41_api.fetch(source).content == a1["alpha.bin"], "READ-2.a", "the signed URL's bytes")
    others = {a1["beta.bin"]: "a step 1 beta.bin", a2["alpha.bin"]: "a step 2 alpha.bin",
              a2["beta.bin"]: "a step 2 beta.bin", b1["alpha.bin"]: "b step 1 alpha.bin",
              b1["beta.bin"]: "b step 1 beta.bin"}
    built = [
        ("the sibling file", "alpha.bin", "beta.bin"),
        ("another version", "step-00000001", "step-00000002"),
        ("another artifact", a.artifact, b.artifact),
        ("another artifact's name part", a.artifact.split("/")[1], b.artifact.split("/")[1]),
    ]
    for what, old, new in built:
        for url in sorted(respelled(source, old, new)):
            if url in issued.values():
                continue  # the target handed this very URL out: it is signed for that file
            got = o41_api.fetch(url)
            leaked = others.get(got.content) if got.ok else None
            check(leaked is None, "READ-4.d",
                  f"a URL built by hand for {what} ({old!r} -> {new!r}) answered {got.status} "
                  f"with the bytes of {leaked}: {url}")
    known = {**others, a1["alpha.bin"]: "a step 1 alpha.bin"}
    for what, url in cut_down(source):
        got = o41_api.fetch(url)
        check(not (got.ok and got.content in known), "READ-4.d",
              f"the signed URL, {what}, answered {got.status} with the bytes of "
              f"{known.get(got.content)}: {url}")
    bare = o41_api.with_key(None)
    for version in ("step-00000001", "step-00000002"):
        reply = bare.read(a.artifact, version, urls=True)
        expect_error(reply, 401, "unauthenticated", "AUTH-1.a", f"read {version} with no key")
        check('"url"' not in reply.content.decode(errors="replace"), "READ-4.d",
              f"a keyless read of {version} carries URLs")
