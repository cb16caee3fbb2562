"""Lightning's checkpointing, taught o41's layout, so ``dirpath="o41://P/N"`` is the only change.

Applied once per loaded Lightning (``mend``), at every ``url_to_fs`` or ``fsspec.open`` of
an ``o41://`` URL, so whichever of ``import lightning`` and the first ``o41://`` instance
comes first, a ``ModelCheckpoint(dirpath="o41://…")`` (which asks fsspec for its
filesystem) is mended before its fit; nothing changes for other paths. A Lightning whose
internals are not the ones mended (not 2.5 or 2.6) makes such a fit fail with one line.
What it mends in ``ModelCheckpoint`` and the checkpoint connector:

- **Open at launch.** ``trainer.fit`` opens the artifact before it resolves or reads what
  it resumes from, so the previous box is fenced before it can commit again. The open
  follows ``ckpt_path``: ``"last"`` or a checkpoint of this artifact resumes (``latest``),
  ``None`` starts fresh (refused with ``has_checkpoints`` on an artifact with checkpoints),
  a checkpoint of another artifact forks from it. ``validate``/``test``/``predict`` and
  ``load_from_checkpoint`` only read and never open.
- **``ckpt_path="last"``** is the latest committed version. Lightning's own lookup loses
  the protocol (``os.path.normpath`` over ``fs.ls``: Lightning issue 18261) and looks on
  local disk; here it returns the version's ``last*.ckpt`` (or its checkpoint), pinned to
  its ``step-…`` folder so the load cannot mix versions.
- **One global step, one version.** Every save of a fit's global step, whichever callback
  and hook makes it, goes into the pending version of that step (``o41.adapters.lightning_steps``):
  ``epoch=0-step=100.ckpt`` and ``last.ckpt`` become the files of ``step-00000100``, which
  commits when the fit saves at a later step or ends. A save at a step committed already
  (by the launch this one resumed from) keeps what is there.
- **``trainer.save_checkpoint("o41://P/N/final.ckpt")``** by hand goes into the version of
  the trainer's global step too.
- **A fit from an older checkpoint of its own artifact** is refused at launch
  (``not_after_latest``): its saves could never commit (VER-3).
- **``save_last="link"``**: the version is the link (``last_model_path`` names the linked
  checkpoint); **``AsyncCheckpointIO``**: ``o41.adapters.lightning_async``.
- **Top-k deletes delete versions** (``o41.writing.retain``, VER-7): a version goes once none of
  its files is reached at the top any more; the latest never does (a run must never lose the
  checkpoint it resumes from: Lightning issue 21813), it waits for the next commit. After
  each commit, a version whose files were all replaced by name (a step that saved only
  ``last.ckpt``) goes too unless a top-k path names it (``o41.adapters.lightning_steps``), so
  ``save_top_k=k`` with ``save_last`` keeps k+1 versions, as a bucket keeps k+1 files.
"""

from __future__ import annotations

import functools
import importlib
import logging
import os
import re
import threading
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, cast

import fsspec

from o41.adapters.lightning_async import mend_async
from o41.adapters.lightning_internals import (
    callback_hooks,
    checkpoint_connector,
    replace_callback_hooks,
)
from o41.adapters.lightning_steps import begin, flush, saving, targets
from o41.adapters.lightning_steps import teardown as end_of_fit
from o41.errors import ConfigError, Immutable, IsLatest, NotAfterLatest, VersionExists
from o41.location import version_name
from o41.paths import parse

if TYPE_CHECKING:
    from lightning.pytorch import Trainer
    from lightning.pytorch.callbacks import ModelCheckpoint
    from lightning.pytorch.trainer.connectors.checkpoint_connector import (
        _CheckpointConnector,
    )
    from lightning.pytorch.trainer.states import TrainerFn

    from o41.fs.filesystem import O41FileSystem

log = logging.getLogger("o41")

_LAST = re.compile(r"^last(-v\d+)?\.ckpt$")
_PACKAGES = ("lightning.pytorch", "pytorch_lightning")
_lock = threading.Lock()
_FITTING = "fit"
_mended: set[type] = set()  # the ModelCheckpoint classes mended (or refused) already
CkptPath = str | os.PathLike[str] | None


def mend() -> None:
    """Patch each loaded Lightning (``lightning`` and ``pytorch_lightning``) once."""
    with _lock:
        for package in _PACKAGES:
            try:
                callbacks = importlib.import_module(f"{package}.callbacks.model_checkpoint")
                connector = importlib.import_module(
                    f"{package}.trainer.connectors.checkpoint_connector")
            except ImportError:
                continue
            checkpoint_cls = callbacks.ModelCheckpoint
            if checkpoint_cls in _mended:
                continue
            trainer_cls = importlib.import_module(f"{package}.trainer.trainer").Trainer
            try:
                _check_mendable(checkpoint_cls, connector, trainer_cls)
            except AttributeError as exc:
                _refuse_fit(trainer_cls, checkpoint_cls, package, exc)
                _mended.add(checkpoint_cls)
                continue
            _mend_checkpoint(checkpoint_cls)
            _mend_connector(checkpoint_connector(connector), checkpoint_cls)
            _mend_trainer(trainer_cls, checkpoint_cls)
            _mend_hooks(importlib.import_module(f"{package}.trainer.call"), checkpoint_cls)
            mend_async(package)
            _mended.add(checkpoint_cls)


def _check_mendable(checkpoint_cls: type[ModelCheckpoint], connector: ModuleType,
                    trainer_cls: type[Trainer]) -> None:
    """Every Lightning internal the mend wraps is there, or none is wrapped."""
    for owner, names in ((checkpoint_cls, ("_find_last_checkpoints", "_remove_checkpoint",
                                           "setup", "_save_last_checkpoint")),
                         (checkpoint_connector(connector), ("_select_ckpt_path",)),
                         (trainer_cls, ("save_checkpoint", "_teardown", "fit"))):
        for name in names:
            getattr(owner, name)


def _refuse_fit(trainer_cls: type[Trainer], checkpoint_cls: type[ModelCheckpoint], package: str,
                why: Exception) -> None:
    """Where this Lightning cannot be mended, a fit into o41:// fails with one line,
    instead of saving checkpoints that would not resume."""
    fit = trainer_cls.fit
    version = getattr(importlib.import_module(package.partition(".")[0]), "__version__", "?")

    @functools.wraps(fit)
    def fit_(self: Trainer, *args: object, **kwargs: object) -> None:
        if any(isinstance(cb, checkpoint_cls) and _o41(cb) is not None
               for cb in self.checkpoint_callbacks):
            raise ConfigError(f"o41: cannot teach {package} {version} o41's checkpoint "
                              f"layout ({why}); a ModelCheckpoint(dirpath='o41://…') needs "
                              "lightning 2.5 or 2.6")
        fit(self, *args, **kwargs)

    trainer_cls.fit = fit_


def _o41(callback: object) -> O41FileSystem | None:
    """The callback's o41 filesystem, or None when its dirpath is elsewhere."""
    fs = getattr(callback, "_fs", None)
    dirpath = str(getattr(callback, "dirpath", "") or "")
    found = fs if getattr(fs, "protocol", None) == "o41" and dirpath.startswith("o41://") else None
    return cast("O41FileSystem | None", found)


def _mend_checkpoint(cls: type[ModelCheckpoint]) -> None:
    find_last = cls._find_last_checkpoints
    remove = cls._remove_checkpoint

    @functools.wraps(find_last)
    def _find_last_checkpoints(self: ModelCheckpoint, trainer: Trainer) -> set[str]:
        fs = _o41(self)
        if fs is None:
            return find_last(self, trainer)
        return last_checkpoint(fs, parse(fs.strip(self.dirpath)).artifact)

    @functools.wraps(remove)
    def _remove_checkpoint(self: ModelCheckpoint, trainer: Trainer, filepath: str) -> None:
        if _o41(self) is None or not str(filepath).startswith("o41://"):
            return remove(self, trainer, filepath)
        try:  # o41.writing.retain: the version goes once nothing at the top reaches it
            return remove(self, trainer, filepath)
        except (IsLatest, Immutable) as exc:
            log.info("o41: kept %s: %s", filepath, exc)

    cls._find_last_checkpoints = _find_last_checkpoints
    cls._remove_checkpoint = _remove_checkpoint
    _mend_link(cls)
    for name in [n for n in vars(cls) if n.startswith("on_") and callable(vars(cls)[n])]:
        setattr(cls, name, _one_version_per_save(vars(cls)[name]))


def _mend_link(cls: type[ModelCheckpoint]) -> None:
    """``save_last="link"``: Lightning allows it on local paths only (a symlink). On o41
    the version is the link: ``last_model_path`` names the checkpoint the save linked to,
    nothing is uploaded twice, and ``ckpt_path="last"`` is the latest version's checkpoint."""
    setup, save_last = cls.setup, cls._save_last_checkpoint

    @functools.wraps(setup)
    def setup_(self: ModelCheckpoint, trainer: Trainer, *args: object, **kwargs: object) -> None:
        if self.save_last != "link" or not str(self.dirpath or "").startswith("o41://"):
            return setup(self, trainer, *args, **kwargs)
        self.save_last = True  # past Lightning's check for a local path
        try:
            return setup(self, trainer, *args, **kwargs)
        finally:
            self.save_last = "link"

    @functools.wraps(save_last)
    def _save_last_checkpoint(self: ModelCheckpoint, trainer: Trainer, *args: object,
                              **kwargs: object) -> None:
        if (self.save_last == "link" and _o41(self) is not None and self.save_top_k != 0
                and self._last_checkpoint_saved):
            self.last_model_path = self._last_checkpoint_saved
            return None
        return save_last(self, trainer, *args, **kwargs)

    cls.setup = setup_
    cls._save_last_checkpoint = _save_last_checkpoint


def _one_version_per_save(hook: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(hook)
    def wrapped(self: ModelCheckpoint, trainer: Trainer, *args: object, **kwargs: object) -> None:
        fs = _o41(self)
        if fs is None:
            return hook(self, trainer, *args, **kwargs)
        step = int(trainer.global_step)
        try:
            with fs.transaction as trans:
                if trans.root_step is None:
                    trans.root_step = step
                return hook(self, trainer, *args, **kwargs)
        except (VersionExists, NotAfterLatest):
            artifact = parse(fs.strip(self.dirpath)).artifact
            if fs.writer.held_latest(artifact) != version_name(step):
                raise
            log.info("o41: %s/%s was saved already by this run; this save at the same step "
                     "is not a new version", artifact, version_name(step))
            return None

    return wrapped


def _mend_hooks(call: ModuleType, checkpoint_cls: type[ModelCheckpoint]) -> None:
    """Each call of the callbacks' saving hooks saves into the fit's pending version of its
    global step, whichever callbacks save (``o41.adapters.lightning_steps``)."""
    hooks = callback_hooks(call)
    saving_hooks = {n for n in vars(checkpoint_cls) if n.startswith("on_")}

    @functools.wraps(hooks)
    def _call_callback_hooks(trainer: Trainer, hook_name: str, *args: object,
                             **kwargs: object) -> None:
        if hook_name == "on_train_batch_start":
            flush(trainer)  # the last step's saves (its batch, epoch, validation) are made
        found = targets(trainer, checkpoint_cls, _o41) if hook_name in saving_hooks else []
        if not found:
            return hooks(trainer, hook_name, *args, **kwargs)
        with saving(trainer, found, int(trainer.global_step)):
            return hooks(trainer, hook_name, *args, **kwargs)

    replace_callback_hooks(call, _call_callback_hooks)


def _mend_trainer(cls: type[Trainer], checkpoint_cls: type[ModelCheckpoint]) -> None:
    save, teardown = cls.save_checkpoint, cls._teardown

    @functools.wraps(teardown)
    def _teardown(self: Trainer) -> None:
        end_of_fit(self)  # commit the pending version before the saving thread stops
        return teardown(self)

    @functools.wraps(save)
    def save_checkpoint(self: Trainer, filepath: str | os.PathLike[str], *args: object,
                        **kwargs: object) -> None:
        """A checkpoint saved by hand at the top (``o41://P/N/final.ckpt``) goes into the
        version of the trainer's global step, as ModelCheckpoint's do (during a fit, into
        its pending version)."""
        if not str(filepath).startswith("o41://"):
            return save(self, filepath, *args, **kwargs)
        fs, _ = fsspec.core.url_to_fs(str(filepath))
        artifact = parse(fs.strip(str(filepath))).artifact
        found = [t for t in targets(self, checkpoint_cls, _o41)
                 if t[0] is fs and t[1] == artifact]
        try:
            with saving(self, found, int(self.global_step)), fs.transaction as trans:
                if trans.root_step is None:
                    trans.root_step = int(self.global_step)
                return save(self, filepath, *args, **kwargs)
        except VersionExists as exc:
            if found or trans.depth or parse(fs.strip(str(filepath))).version:
                raise  # inside a ModelCheckpoint save, or a version named by the caller
            raise VersionExists(
                f"trainer.save_checkpoint({str(filepath)!r}) at global step "
                f"{self.global_step}: {exc.message}; a checkpoint of this step is there "
                "already (ModelCheckpoint saved it), or save by hand before it does",
                status=exc.status) from None

    cls.save_checkpoint = save_checkpoint
    cls._teardown = _teardown


def last_checkpoint(fs: O41FileSystem, artifact: str) -> set[str]:
    """``{o41://P/N/step-…/last.ckpt}`` of the latest version, or nothing on a new artifact."""
    try:
        version = fs.version(artifact)
    except FileNotFoundError:
        return set()
    names = [e.name for e in version.files if "/" not in e.name]
    chosen = sorted(n for n in names if _LAST.match(n)) or sorted(
        n for n in names if n.endswith(".ckpt"))
    if not chosen:
        return set()
    return {f"o41://{artifact}/{version.version}/{chosen[-1]}"}


def _mend_connector(cls: type[_CheckpointConnector],
                    checkpoint_cls: type[ModelCheckpoint]) -> None:
    select = cls._select_ckpt_path

    @functools.wraps(select)
    def _select_ckpt_path(self: _CheckpointConnector, state_fn: TrainerFn, ckpt_path: CkptPath,
                          *args: object, **kwargs: object) -> CkptPath:
        trainer = self.trainer
        fitting = str(getattr(state_fn, "value", state_fn)) == _FITTING
        if fitting:
            _refuse_root_dir(trainer, checkpoint_cls)
            begin(trainer)
        targets = [(cb, fs) for cb in trainer.checkpoint_callbacks
                   if isinstance(cb, checkpoint_cls) and (fs := _o41(cb)) is not None]
        for cb, _ in targets:
            _check_dirpath(cb.dirpath)
        # One launch, one open: in a multi-process run only global rank 0 opens (and saves,
        # as Lightning does); the other ranks read.
        if not getattr(trainer, "is_global_zero", True):
            targets = []
        if fitting and ckpt_path == "last":
            for cb, fs in targets:  # fence first: "last" is then what no zombie can change
                fs.run(cb.dirpath, resume="latest")
        chosen = select(self, state_fn, ckpt_path, *args, **kwargs)
        if fitting:
            for cb, fs in targets:
                _refuse_rewind(fs, cb.dirpath, chosen)
                fs.run(cb.dirpath, resume=_resume_for(cb.dirpath, chosen))
        return chosen

    cls._select_ckpt_path = _select_ckpt_path


def _check_dirpath(dirpath: str) -> None:
    """A ModelCheckpoint's dirpath is the artifact itself: its saves are the versions."""
    where = parse(dirpath[6:])
    if where.version is not None or where.name:
        raise ConfigError(f"ModelCheckpoint(dirpath={dirpath!r}): the dirpath of an o41 run "
                          f"is its artifact, o41://{where.artifact}; each save becomes a "
                          "version (step-XXXXXXXX/) of it")


def _refuse_rewind(fs: O41FileSystem, dirpath: str, ckpt_path: CkptPath) -> None:
    """A fit from an older checkpoint of its own artifact would fail at its first save
    (steps only move forward, VER-3): refuse it at launch, before anything is fenced."""
    text = str(ckpt_path or "")
    if not text.startswith("o41://"):
        return
    mine, theirs = parse(dirpath[6:]), parse(fs.strip(text))
    if theirs.artifact != mine.artifact or theirs.version == "latest":
        return
    chosen = fs.version_of(text).version
    latest = fs.api.read_artifact(mine.artifact).get("latest")  # the service's, not a held one
    if chosen == latest or latest is None:
        return
    raise NotAfterLatest(
        f"fit(ckpt_path={text!r}) goes back to {chosen} of o41://{mine.artifact}, whose "
        f"latest is {latest}: its saves would not be after the latest (not_after_latest, "
        "VER-3); resume with ckpt_path='last', or fork it into a new artifact: "
        f"ModelCheckpoint(dirpath='o41://{mine.artifact}-from-{chosen}') with this ckpt_path",
        status=409)


def _resume_for(dirpath: str, ckpt_path: CkptPath) -> str | None:
    """The open a fit asks for: resume this artifact, fork another's version, or fresh."""
    if ckpt_path is None:
        return None
    text = str(ckpt_path)
    if not text.startswith("o41://"):
        return None
    mine, theirs = parse(dirpath[6:]), parse(text[6:])
    if theirs.artifact == mine.artifact:
        return "latest"
    if theirs.version and theirs.version != "latest":
        return f"o41://{theirs.artifact}/{theirs.version}"
    raise ConfigError(f"ckpt_path={text!r}: a fit into {dirpath} forks from a version of "
                      "another artifact, o41://P/N/step-XXXXXXXX/<file>")


def _refuse_root_dir(trainer: Trainer, checkpoint_cls: type[ModelCheckpoint]) -> None:
    """``default_root_dir="o41://…"`` would put logs and checkpoints/ into folders an
    artifact does not have: say at launch what to write instead."""
    root = str(getattr(trainer, "default_root_dir", "") or "")
    if not root.startswith("o41://"):
        return
    logged = [lg for lg in trainer.loggers
              if str(getattr(lg, "save_dir", "") or getattr(lg, "root_dir", "") or "")
              .startswith("o41://")]
    homeless = [cb for cb in trainer.checkpoint_callbacks
                if isinstance(cb, checkpoint_cls) and not cb.dirpath]
    if logged or homeless:
        raise ConfigError(
            f"Trainer(default_root_dir={root!r}) puts lightning_logs/ and checkpoints/ into "
            "an o41 artifact, which holds only versions: write Trainer(default_root_dir="
            f"'<a local folder>', callbacks=[ModelCheckpoint(dirpath={root!r})])")


__all__ = ["last_checkpoint", "mend"]
