"""One retry policy for every call and byte the client sends: which failures are worth
another try, how long to wait before it, and for how long to keep trying.

Built on urllib3's ``Retry`` (its status lists, backoff with jitter, and ``Retry-After``
parsing), with one addition: a deadline. A storage outage or a database restart behind the
service answers 503 ``unavailable`` with ``Retry-After`` for tens of seconds; a checkpoint
must outlive it, so a transient failure is tried again until ``Policy.seconds`` have passed,
however many tries that takes. A reply that is not transient (a 4xx of the contract: a bad
name, a fenced token, a rejected signature) is never tried again.

Callers own their request (``requests`` for the API, ``http.client`` for signed URLs); each
operation takes an ``Attempts`` from ``attempts()`` and tells it of every failure.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from urllib3.exceptions import MaxRetryError
from urllib3.response import HTTPResponse
from urllib3.util.retry import Retry

# A GET changes nothing, so any 5xx is worth another try; a call that changes state is tried
# again only on the replies that say nothing was done (bad gateway, unavailable, timeout).
READ_STATUSES = frozenset({429, 500, 502, 503, 504})
WRITE_STATUSES = frozenset({429, 502, 503, 504})
READS = frozenset({"GET", "HEAD"})


class Deadline(Retry):
    """urllib3's ``Retry``, exhausted also once a moment (``time.monotonic``) has passed."""

    def __init__(self, *args: object, deadline: float | None = None, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.deadline = deadline

    def new(self, **kw: object) -> Deadline:
        kw.setdefault("deadline", self.deadline)
        return super().new(**kw)

    def is_exhausted(self) -> bool:
        late = self.deadline is not None and time.monotonic() > self.deadline
        return late or super().is_exhausted()


@dataclass(frozen=True)
class Policy:
    """How long and how often transient failures are tried again."""

    seconds: float = 120.0  # a transient failure is ridden out this long, then surfaces
    backoff: float = 0.1  # the second retry waits about this, each next one twice as long
    backoff_max: float = 3.0  # ...up to this
    jitter: float = 0.25  # plus up to this, at random: many threads do not retry in step
    retry_after_max: float = 30.0  # a server's Retry-After is honoured up to this
    tries: int | None = None  # at most this many tries as well (None: the deadline alone)

    def start(self, method: str) -> Deadline:
        statuses = READ_STATUSES if method.upper() in READS else WRITE_STATUSES
        total = None if self.tries is None else max(0, self.tries - 1)
        return Deadline(total=total, connect=None, read=None, redirect=0, status=None,
                        other=None, allowed_methods=None, status_forcelist=statuses,
                        backoff_factor=self.backoff, backoff_max=self.backoff_max,
                        backoff_jitter=self.jitter, respect_retry_after_header=True,
                        raise_on_status=False,
                        deadline=time.monotonic() + self.seconds)


POLICY = Policy()


def sleep(seconds: float) -> None:
    """The wait between tries (a name of its own, so a test can record the waits)."""
    time.sleep(seconds)


class Attempts:
    """The tries of one operation (``method`` on ``what``) under the policy.

    ``count`` is how many tries were made so far; ``failed`` and ``status`` either wait for
    the next try or raise the caller's error once it is not worth one.
    """

    def __init__(self, method: str, what: str, policy: Policy | None = None) -> None:
        self.policy = policy or POLICY
        self.method, self.what = method.upper(), what
        self.retry = self.policy.start(self.method)
        self.count = 1

    def transient(self, status: int) -> bool:
        """Whether a reply of ``status`` is worth another try (before the budget counts)."""
        return self.retry.is_retry(self.method, status)

    def failed(self, error: BaseException) -> None:
        """No usable reply (a dropped connection, a cut body): wait, or raise ``error``."""
        try:
            self.retry = self.retry.increment(self.method, self.what,
                                              error=error if isinstance(error, Exception)
                                              else None)
        except MaxRetryError:
            raise error from None
        self._wait(None)

    def status(self, status: int, retry_after: str | None, error: BaseException) -> None:
        """A reply of ``status`` (with its ``Retry-After``, if any): wait, or raise ``error``
        when the status is not transient or the budget is spent."""
        if not self.transient(status):
            raise error
        headers = {"Retry-After": retry_after} if retry_after else {}
        reply = HTTPResponse(body=b"", headers=headers, status=status, preload_content=False)
        try:
            self.retry = self.retry.increment(self.method, self.what, response=reply)
        except MaxRetryError:
            raise error from None
        self._wait(retry_after)

    def after(self, status: int | None, retry_after: str | None,
              error: BaseException) -> None:
        """``status`` when a reply came, else ``failed``: wait, or raise ``error``."""
        if status is None:
            self.failed(error)
        else:
            self.status(status, retry_after, error)

    def _wait(self, retry_after: str | None) -> None:
        delay = self.retry.get_backoff_time()
        if retry_after:
            try:
                asked = self.retry.parse_retry_after(retry_after)
            except Exception:  # noqa: BLE001 - a malformed header means "no advice"
                asked = 0.0
            delay = max(delay, min(asked, self.policy.retry_after_max))
        deadline = self.retry.deadline or 0.0
        delay = max(0.0, min(delay, deadline - time.monotonic()))
        self.count += 1
        if delay:
            sleep(delay)


def attempts(method: str, what: str) -> Attempts:
    """The tries of one operation under the client's policy (``POLICY``)."""
    return Attempts(method, what)


__all__ = ["POLICY", "Attempts", "Deadline", "Policy", "attempts"]
