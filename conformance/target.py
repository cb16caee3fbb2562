"""Is the target an o41 Artifacts API at all? One probe before any test runs.

Without it, an unreachable or wrong URL makes every test fail and every rule FAIL, which
says nothing about the target's conformance. The probe asks one harmless question with a
short deadline for the whole exchange (``--probe-deadline``, 5 s: a target that trickles
its answer is given up on too) and turns every way of not answering it into one sentence
naming the URL, what was tried and what the target did; the plugin then stops the run
before any test is charged. Everything the target sent is shown escaped.
"""

from __future__ import annotations

from typing import Any

import requests

from conformance.shown import safe
from conformance.transport import DEADLINES
from conformance.transport import RequestDeadline
from conformance.transport import bounded_request

__all__ = ["TargetError", "probe"]


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
    limit = DEADLINES.probe
    try:
        resp = bounded_request("GET", url, params={"artifact": artifact}, headers=headers,
                               deadline=limit)
    except RequestDeadline as exc:
        raise TargetError(f"target {base} did not answer within the {limit:g} s probe deadline"
                          f" (--probe-deadline; {tried}): target {exc.did} in "
                          f"{exc.seconds:.1f} s") from exc
    except requests.Timeout as exc:
        raise TargetError(f"target {base} did not answer within {limit:g} s ({tried}): "
                          f"{type(exc).__name__}") from exc
    except requests.RequestException as exc:
        raise TargetError(f"target {base} is unreachable ({tried}): {_reason(exc)}") from exc
    body, code = _error_code(resp)
    kind = safe(resp.headers.get("Content-Type", "no content type").split(";")[0])
    code = safe(code) if code is not None else None
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
