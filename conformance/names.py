"""Artifact names tests make: one spelled with every character class a name part allows,
and names under, or just outside, a prefix-scoped key's prefixes."""

from __future__ import annotations

import re
import secrets
from typing import TYPE_CHECKING
from typing import Any

if TYPE_CHECKING:
    pass

__all__ = ["edge_name", "names_just_outside", "scoped_name", "scoped_prefixes"]


def edge_name(prefix: str, slug: str, salt: str) -> str:
    """An artifact name using every character class the contract allows in a name part
    (upper and lower case, digits, ``.``, ``_``, ``-``): implementations that mishandle one
    spelling fail on these while plain names pass."""
    return f"{prefix}/{slug}.V2_{salt}-x"


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
