"""The checks a replay must pass, each a stable id that names its violations.

They read only what any implementation shows: the calls each box made through the proxy and
their replies, the artifact's final version list, and the usage report (reads per place).

``Facts`` (replay/facts.py) indexes the log; ``zombie-write`` lives in replay/zombies.py.
"""

from __future__ import annotations

from collections import Counter

from .facts import WRITES, Facts, Violation, place_text, step_of
from .runner import Replay
from .zombies import zombie_write

CHECKS: dict[str, str] = {
    "fresh-start": "no fresh start clobbered checkpoints",
    "not-resumed": "every relaunch resumed from the latest",
    "zombie-write": "the zombie's late writes were fenced and never visible; it stopped",
    "placement": "writes landed in the box's own region where a location exists",
    "cross-cloud-reads": "one cross-cloud read per hop",
    "history": "the history holds exactly the committed versions, epochs never going back",
    "box-exit": "every box ran until preempted, and the last one to its end",
}
DEFAULT_LOCATIONS = frozenset({"aws/us-east-1", "gcp/europe-west4", "azure/westeurope"})
# A load may read a little over the files' size (ranged reads rounded to block edges): the
# bound a load must meet (issue 18: 1.02x). A second download is 2x, far beyond it.
READ_SLACK = 1.02


def _load_bytes(version: dict, size: int) -> int:
    """The fewest bytes a load of ``version`` reads: its largest file, when it lists them.

    A trainer loads a checkpoint, not always every file of the version: one Lightning save
    holds ``epoch=E-step=S.ckpt`` and ``last.ckpt``, each a whole checkpoint, and a resume
    reads one of them.
    """
    sizes = [int(x.get("size") or 0) for x in version.get("files") or [] if isinstance(x, dict)]
    return max(sizes) if sizes else size


def _fresh_start(f: Facts) -> list[Violation]:
    out = []
    for o in f.opens:
        if o.request.get("resume") is not None:
            continue
        prior = f.latest_before(o.started)
        if prior is None:
            continue
        outcome = ("the service refused it (409 has_checkpoints)" if o.code == "has_checkpoints"
                   else "the service ACCEPTED it: the checkpoints were clobbered" if o.ok
                   else f"it failed with {o.status} {o.code}")
        out.append(Violation("fresh-start", o.box, f"opened fresh (resume=null) on an artifact "
                             f"whose latest is {prior.get('version')}; {outcome}"))
    return out


def _not_resumed(f: Facts, fresh: set[str]) -> list[Violation]:
    out = []
    for run in f.replay.runs:
        box = run.box.id
        o = f.first_open(box)
        if box in fresh:
            continue
        if o is None:
            if run.preempted is None:
                expected = f.latest_before(run.ended or float("inf"))
                if expected is not None:
                    out.append(Violation("not-resumed", box, "never opened the artifact"))
            continue
        expected = f.latest_before(o.started)
        if expected is None:
            continue
        want = expected.get("version")
        if o.request.get("resume") != "latest":
            out.append(Violation("not-resumed", box, f"opened with resume="
                                 f"{o.request.get('resume')!r}, not latest ({want})"))
            continue
        if not o.ok:
            out.append(Violation("not-resumed", box, f"its open failed: {o.status} {o.code}"))
            continue
        got = (o.reply.get("resume_from") or {}).get("version")
        # A zombie's commit in flight while the open ran may be ordered on either side of it.
        racing = {c.reply.get("version"): c.reply for c in f.commits
                  if c.box != box and c.started < o.ended and c.ended >= o.started}
        if got != want and got in racing:
            expected, want = racing[got], got
        if got != want:
            out.append(Violation("not-resumed", box, f"the open resumed from {got}, but the "
                                 f"latest committed before it was {want}"))
            continue
        wrote = [c for c in f.of(box, *WRITES) if c.request.get("token") == o.reply.get("token")]
        early = [c for c in wrote if c.op == "write"
                 and 0 <= step_of(c.request.get("version")) <= int(expected.get("step") or 0)]
        if early:
            out.append(Violation("not-resumed", box, f"tried to write "
                                 f"{early[0].request.get('version')} at or before {got}, the step "
                                 "it resumed from: it restarted instead of resuming"))
            continue
        need = _load_bytes(o.reply.get("resume_from") or {}, int(expected.get("size") or 0))
        # A trainer that sends no place has its reads counted under an unknown place: they
        # are still this box's reads of what it resumed from.
        read = f.read_bytes(run.box.place, got)
        if run.box.place is not None:
            read += f.read_bytes(None, got)
        if f.replay.usage is not None and any(c.ok for c in wrote) and read < need:
            out.append(Violation("not-resumed", box, f"read {read} bytes of {got} before "
                                 f"writing, less than the {need} a load of it takes: it did "
                                 "not load what it resumed from"))
    return out


def _placement(f: Facts, locations: frozenset[str]) -> list[Violation]:
    out = []
    for run in f.replay.runs:
        box, place = run.box.id, run.box.place
        late = set(map(id, f.late(run)))
        if place in locations:
            for c in f.of(box, "commit"):
                loc = place_text(c.reply.get("location"))
                if c.ok and id(c) not in late and loc != place:
                    out.append(Violation("placement", box, f"wrote {c.reply.get('version')} to "
                                         f"{loc}, not to its own region {place}"))
            continue
        opens = [c for c in f.of(box, "open") if c.ok and id(c) not in late]
        if not opens:
            continue
        warnings = [w for c in opens for w in c.reply.get("warnings") or []]
        if not warnings:
            out.append(Violation("placement", box, f"there is no location at "
                                 f"{place or 'an unknown place'}, yet the open gave no warning"))
            continue
        text = run.log.read_text(errors="replace") if run.log.exists() else ""
        for w in dict.fromkeys(warnings):
            if w not in text:
                out.append(Violation("placement", box, f"did not log the service's warning {w!r}"))
    return out


def _cross_cloud_reads(f: Facts) -> list[Violation]:
    usage = f.replay.usage
    if usage is None:
        return []
    expected: Counter[tuple[str | None, str]] = Counter()
    sizes: dict[str, int] = {}
    for run in f.replay.runs:
        o = f.first_open(run.box.id)
        version = (o.reply.get("resume_from") or {}) if o is not None and o.ok else {}
        if not version:
            continue
        loc_cloud = (version.get("location") or {}).get("cloud")
        if run.box.cloud is None or loc_cloud != run.box.cloud:
            expected[(run.box.place, version["version"])] += 1
            sizes[version["version"]] = int(version.get("size") or 0)
    got: Counter[tuple[str | None, str]] = Counter()
    for t in usage.get("transfers") or []:
        if t.get("direction") == "read" and t.get("route") == "cross_cloud":
            got[(place_text(t.get("place")), str(t.get("version")))] += int(t.get("bytes") or 0)
    out = []
    for (place, version), nbytes in sorted(got.items(), key=str):
        boxes = [r.box.id for r in f.replay.runs if r.box.place == place]
        who = boxes[-1] if boxes else None
        if (place, version) not in expected:
            out.append(Violation("cross-cloud-reads", who, f"read {version} cross-cloud from "
                                 f"{place or 'an unknown place'} ({nbytes} bytes), which no "
                                 "relaunch there resumed from"))
        elif nbytes > expected[(place, version)] * sizes[version] * READ_SLACK:
            times = nbytes / max(1, sizes[version])
            out.append(Violation("cross-cloud-reads", who, f"read {version} cross-cloud "
                                 f"{times:.1f} times its size ({nbytes} bytes): more than the "
                                 "one cross-cloud read of the hop"))
    return out


def _history(f: Facts) -> list[Violation]:
    out = []
    history = f.replay.history
    for prev, cur in zip(history, history[1:], strict=False):
        if cur.get("step", 0) <= prev.get("step", 0):
            out.append(Violation("history", None, f"{cur.get('version')} is listed after "
                                 f"{prev.get('version')}: steps do not increase"))
        if (cur.get("epoch") or 0) < (prev.get("epoch") or 0):
            out.append(Violation(
                "history", f.epoch_box.get(cur.get("epoch")),
                f"{cur.get('version')} (epoch {cur.get('epoch')}) follows {prev.get('version')} "
                f"(epoch {prev.get('epoch')}): an older epoch wrote after a newer open"))
    listed = {v.get("version"): v.get("epoch") for v in history}
    committed = {c.reply.get("version"): c for c in f.commits}
    for name, c in committed.items():
        if name in f.deleted:
            if name in listed:
                out.append(Violation("history", c.box, f"{name} was deleted but is still "
                                     "listed (VER-7)"))
        elif name not in listed:
            out.append(Violation("history", c.box, f"{name} was committed but is missing from "
                                 "the history (clobbered?)"))
        elif listed[name] != c.reply.get("epoch"):
            out.append(Violation("history", c.box, f"{name} was committed at epoch "
                                 f"{c.reply.get('epoch')} but is listed with {listed[name]}"))
    for name in listed:
        if name not in committed:
            out.append(Violation("history", None, f"{name} is visible, yet no box's commit of it "
                                 "succeeded"))
    return out


def _box_exit(f: Facts) -> list[Violation]:
    out = []
    runs = f.replay.runs
    for i, run in enumerate(runs):
        if run.timed_out:
            out.append(Violation("box-exit", run.box.id, "ran over the timeout and was killed"))
        elif run.preempted is None and run.returncode not in (0, None):
            end = "the end of the scenario" if i == len(runs) - 1 else "its preemption"
            out.append(Violation("box-exit", run.box.id, f"exited with {run.returncode} "
                                 f"before {end} (see {run.log})"))
    return out


def check(replay: Replay, locations: frozenset[str] = DEFAULT_LOCATIONS) -> list[Violation]:
    """Every violation of the replay, grouped by check in the order of ``CHECKS``."""
    f = Facts(replay)
    fresh = _fresh_start(f)
    return [*fresh, *_not_resumed(f, {v.box for v in fresh if v.box}), *zombie_write(f),
            *_placement(f, locations), *_cross_cloud_reads(f), *_history(f), *_box_exit(f)]


__all__ = ["CHECKS", "DEFAULT_LOCATIONS", "Facts", "Violation", "check", "place_text"]
