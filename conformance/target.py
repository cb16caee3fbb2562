"""Is the target an o41 Artifacts API at all? One probe before any test runs.

Without it, an unreachable or wrong URL makes every test fail and every rule FAIL, which
says nothing about the target's conformance. The probe asks one harmless question with a
short timeout and turns every way of not answering it into one sentence naming the URL and
what was tried; the plugin then stops the run before any test is charged.
"""

from __future__ import annotations

from typing import Any

import requests

__all__ = ["PROBE_TIMEOUT", "TargetError", "probe"]

#: Seconds to connect, then to read the answer: an API answers this question at once.
PROBE_TIMEOUT = (3.0, 3.0)


class TargetError(RuntimeError):
    """The target cannot be judged: unreachable, not an o41 API, or refusing the write key."""


def _reason(exc: BaseException) -> str:
    """The root cause of a failed connection in a few words ("Connection refused")."""
    stack: list[object] = [exc]
    seen: set[int] = set()
    while stack:
        e = stack.pop()
        if not isinstance(e, BaseException) or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno is not None and e.strerror:
            return f"{e.strerror} (errno {e.errno})"
        stack += [e.__cause__, e.__context__, getattr(e, "reason", None), *e.args]
    return type(exc).__name__


def _error_code(resp: requests.Response) -> tuple[Any, str | None]:
    try:
        body = resp.json()
    except ValueError:
        return None, None
    try:
        return body, str(body["error"]["code"])
    except (KeyError, TypeError):
        return body, None


def probe(base: str, key: str | None, artifact: str) -> None:
    """``GET {base}/artifacts/read?artifact=...`` with the write key, for an artifact no one
    has made: an o41 API answers 404 ``not_found`` (or 200 if it exists). Raise TargetError
    with one line for anything else."""
    url = f"{base}/artifacts/read"
    tried = f"tried GET {url}?artifact={artifact}"
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        resp = requests.get(url, params={"artifact": artifact}, headers=headers,
                            timeout=PROBE_TIMEOUT)
    except requests.Timeout as exc:
        raise TargetError(f"target {base} did not answer within {PROBE_TIMEOUT}s ({tried}): "
                          f"{type(exc).__name__}") from exc
    except requests.RequestException as exc:
        raise TargetError(f"target {base} is unreachable ({tried}): {_reason(exc)}") from exc
    body, code = _error_code(resp)
    kind = resp.headers.get("Content-Type", "no content type").split(";")[0]
    if resp.status_code == 401 and code == "unauthenticated":
        raise TargetError(f"target {base} refused the write key (401 unauthenticated, {tried}):"
                          " pass --api-key KEY or set $O41_ARTIFACTS_API_KEY")
    if resp.status_code >= 500:
        raise TargetError(f"target {base} is broken: {tried} answered {resp.status_code} {kind}"
                          + (f" {code}" if code else ""))
    if resp.status_code == 403 and code == "forbidden":
        raise TargetError(f"target {base}: the write key may not read {artifact} (403 forbidden,"
                          f" {tried}): pass a key with write on the run's --prefix")
    if resp.status_code == 404 and code == "not_found":
        return
    if resp.status_code == 200 and isinstance(body, dict):
        return
    shown = f"{resp.status_code} {kind}" + (f" code {code}" if code else "")
    raise TargetError(
        f"target {base} is not an o41 Artifacts API: {tried} answered {shown}, expected "
        '404 {"error": {"code": "not_found"}} (is the URL the API base, e.g. http://host:port?)'
    )
