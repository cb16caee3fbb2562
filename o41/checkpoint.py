"""The trainer-facing API: open a checkpoint location, load what it resumes from, save steps.

::

    run = o41.open("o41://experiments/run-1234", resume="latest")
    if run.resume_from is not None:
        run.load("ckpt/")                 # parallel ranged GETs, sha256 verified, resumable
    ...
    run.save(step, "ckpt/")               # parallel PUTs, then commit; Fenced if superseded

``resume`` follows the page: ``"latest"`` resumes from the latest checkpoint (or from nothing
on the first launch), ``None`` starts fresh (refused with ``HasCheckpoints`` on an artifact
that has checkpoints), and ``"o41://P/N/step-XXXXXXXX"`` forks from that checkpoint into a
new, empty artifact. The open checks the key, so a run learns before step 1 that it cannot
write.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from difflib import get_close_matches
from typing import Any

from o41.config import ENV_KEY, ENV_URL, Place, Settings, redact_key, same_task
from o41.errors import (
    ApiError,
    ConfigError,
    Fenced,
    Forbidden,
    NotFound,
    TransportError,
)
from o41.location import Location, version_name
from o41.models import Version
from o41.transport.api import ApiClient
from o41.transport.transfer import (
    WORKERS,
    LocalFile,
    Source,
    collect,
    download,
    upload,
    upload_hashed,
)

log = logging.getLogger("o41")


@dataclass
class Run:
    """An opened artifact: the token that lets this box write, and what it resumes from."""

    api: ApiClient
    artifact: str
    epoch: int
    token: str
    holder: str
    place: Place | None
    resume_from: Version | None
    write_location: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    fenced: dict[str, Any] | None = None
    workers: int = WORKERS
    progress: bool | None = None

    @property
    def location(self) -> str:
        return f"o41://{self.artifact}"

    def load(self, dest: str | os.PathLike[str], version: Version | None = None) -> Version:
        """Download ``version`` (default: ``resume_from``) into ``dest`` and verify it.

        Signed URLs that were rejected (expired during a long wait) are asked for once more;
        the second download resumes from the bytes the first one wrote.
        """
        version = version or self.resume_from
        if version is None:
            raise NotFound(f"{self.location} has nothing to load: it was opened fresh "
                           "or had no checkpoint yet", status=404)
        if not version.files or any(f.url is None for f in version.files):
            version = self._signed(version)
        try:
            download(version.files, dest, workers=self.workers, progress=self.progress)
        except TransportError as exc:
            if exc.status != 403:
                raise
            log.info("signed URLs of %s rejected (%s); asking for new ones", version.version, exc)
            version = self._signed(version)
            download(version.files, dest, workers=self.workers, progress=self.progress)
        return version

    def save(self, step: int, files: Source) -> Version:
        """Upload ``files`` as version ``step-XXXXXXXX`` and commit it.

        ``files`` is a directory, a file, an iterable of files, or a mapping of names to paths
        or bytes. Raises ``Fenced`` (naming who holds the artifact now) if a newer open
        superseded this run; the version is then never visible.

        The files are declared by name alone (VER-6) and each is hashed while it is sent;
        the PUT's answer must match the client's sha256, and the commit lists every file's
        size and sha256. One pass over each file's bytes, not a hash pass before the sends.
        """
        pairs = collect(files)
        name = version_name(step)
        try:
            ticket = self.api.write_version(self.artifact, self.token, name,
                                            [{"name": n} for n, _ in pairs])
            local = upload_hashed(pairs, {f["name"]: f["url"] for f in ticket["files"]},
                                  workers=self.workers, progress=self.progress)
            committed = self.api.commit(self.artifact, self.token, ticket["upload"],
                                        version=name, epoch=self.epoch,
                                        files=[f.declaration() for f in local])
        except Fenced as exc:
            raise self.explain_fenced(exc, name) from None
        return self._saved(name, committed)

    def save_files(self, step: int, local: list[LocalFile]) -> Version:
        """``save`` of files already sized and hashed: declared with their size and sha256,
        so the service checks each PUT against them."""
        name = version_name(step)
        try:
            ticket = self.api.write_version(self.artifact, self.token, name,
                                            [f.declaration() for f in local])
            upload(local, {f["name"]: f["url"] for f in ticket["files"]},
                   workers=self.workers, progress=self.progress)
            committed = self.api.commit(self.artifact, self.token, ticket["upload"],
                                        version=name, epoch=self.epoch)
        except Fenced as exc:
            raise self.explain_fenced(exc, name) from None
        return self._saved(name, committed)

    def _saved(self, name: str, committed: dict[str, Any]) -> Version:
        version = Version.from_json(committed)
        log.info("saved %s/%s (%d bytes) to %s", self.artifact, name, version.size,
                 version.location_name)
        return version

    def _signed(self, version: Version) -> Version:
        data = self.api.read_version(version.artifact or self.artifact, version.version,
                                     urls=True, place=self.place)
        return Version.from_json(data)

    def explain_fenced(self, exc: Fenced, name: str) -> Fenced:
        """Name the fencer: the artifact's current holder and epoch, read just now."""
        try:
            info = self.api.read_artifact(self.artifact)
            by_holder, by_epoch = info.get("holder"), info.get("epoch")
        except (ApiError, TransportError):
            by_holder = by_epoch = None
        if same_task(by_holder, self.holder):
            who = f"a newer launch of the same task (holder {by_holder!r}) at epoch {by_epoch}"
        elif by_holder or by_epoch:
            who = f"holder {by_holder!r} at epoch {by_epoch}"
        else:
            who = "a newer open"
        message = (f"{self.location}: {name} not saved: this run (holder {self.holder!r}, "
                   f"epoch {self.epoch}) was fenced by {who}")
        return Fenced(message, status=exc.status, artifact=self.artifact, epoch=self.epoch,
                      by_holder=by_holder, by_epoch=by_epoch)


def open(location: str, resume: str | None = None, *, settings: Settings | None = None,
         api: ApiClient | None = None, place: Place | None = None, holder: str | None = None,
         workers: int = WORKERS, progress: bool | None = None) -> Run:
    """Open a checkpoint location (``o41://P/N``), checking the key before any training.

    Settings default to the environment (``O41_ARTIFACTS_API_URL``, ``O41_ARTIFACTS_API_KEY``,
    ``SKYPILOT_CLUSTER_INFO`` or ``O41_PLACE``, ``SKYPILOT_TASK_ID``/``SKYPILOT_NODE_RANK``).
    Server warnings (e.g. a fallback placement) are logged on the ``o41`` logger.
    """
    loc = Location.parse(location)
    if loc.version is not None:
        raise ConfigError(f"{location!r} names a version; open the artifact "
                          "(o41://project/name) and pass the version as resume=")
    if resume not in (None, "latest"):
        _check_fork_source(resume)
    if settings is None:  # an ``api`` given says where and with which key; the rest is the env's
        given = {} if api is None else {ENV_URL: api.api_url, ENV_KEY: api.api_key}
        settings = Settings.from_env({**os.environ, **given})
    api = api or ApiClient.from_settings(settings)
    place = place if place is not None else settings.place
    holder = holder or settings.holder
    try:
        reply = api.open(loc.artifact, resume=resume, place=place, holder=holder)
    except Forbidden as exc:
        raise Forbidden(
            f"the API key {redact_key(api.api_key)} has no write access to {loc.artifact}"
            f"{' or no read access to ' + resume if resume not in (None, 'latest') else ''}: "
            f"{exc.message}", status=exc.status) from None
    raw_resume = reply.get("resume_from")
    run = Run(api=api, artifact=loc.artifact, epoch=int(reply["epoch"]), token=reply["token"],
              holder=reply.get("holder") or holder, place=place,
              resume_from=Version.from_json(raw_resume) if raw_resume else None,
              write_location=reply.get("write_location") or {},
              warnings=list(reply.get("warnings") or []), fenced=reply.get("fenced"),
              workers=workers, progress=progress)
    for warning in run.warnings:
        log.warning("%s: %s", loc.artifact, warning)
    if run.fenced:
        log.info("%s: opened at epoch %s, fencing holder %r (epoch %s)", loc.artifact,
                 run.epoch, run.fenced.get("holder"), run.fenced.get("epoch"))
    return run


def _check_fork_source(resume: object) -> None:
    """A resume other than "latest"/None must be an o41:// checkpoint; say what is allowed."""
    if isinstance(resume, str) and resume.startswith("o41://"):
        Location.parse(resume)
        return
    allowed = ('resume must be "latest", None or an o41:// checkpoint '
               '(o41://project/name/step-XXXXXXXX)')
    close = get_close_matches(resume.lower(), ["latest"], n=1, cutoff=0.6) if isinstance(
        resume, str) else []
    hint = ' Did you mean "latest"?' if close else ""
    raise ConfigError(f"resume={resume!r} is not allowed: {allowed}.{hint}")


__all__ = ["Run", "open"]
