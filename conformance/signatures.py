"""A signed URL's signature as the tests read it: one character of it changed, whether a
query carries one at all, whether its letter case matters."""

from __future__ import annotations

from urllib.parse import parse_qsl
from urllib.parse import urlencode
from urllib.parse import urlsplit
from urllib.parse import urlunsplit

__all__ = ["carries_values", "case_matters", "tampered_url"]


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
