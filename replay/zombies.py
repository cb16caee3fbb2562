"""The ``zombie-write`` check: late writes are fenced, never visible, and a fenced box stops.

Two halves. Every write or commit with a token a later open had superseded must be refused
with ``fenced`` (whoever sent it). And each continued zombie is judged over its whole life
after SIGCONT (``Facts.zombie``): it must not re-open, none of its commits may land after
the relaunch began and before the relaunch fenced it, and once fenced it must stop. Fencing
counts as exercised when the zombie got a ``fenced`` refusal, or stopped by itself with the
fenced exit code after a call once superseded (a check of the artifact's epoch); only a
zombie that no newer open ever superseded while it ran is a note.
"""

from __future__ import annotations

from .facts import FENCED_EXIT, WRITES, Facts, Violation, Zombie


def stale_writes(f: Facts) -> list[Violation]:
    """Writes and commits with a token some later open had superseded must all be fenced."""
    out = []
    fenced_tokens: set[str] = set()
    for c in f.calls:
        token = str(c.request.get("token"))
        epoch = f.token_epoch.get(token)
        if c.op not in WRITES or epoch is None:
            continue
        if token in fenced_tokens:
            what = c.request.get("version") or "an upload"
            out.append(Violation("zombie-write", c.box, f"kept writing with a token that was "
                                 f"already fenced ({c.op} of {what})"))
            continue
        by = f.superseded(epoch, c.started)
        if by is None:
            continue
        who = f"box {by.box} opened at epoch {by.reply.get('epoch')}"
        if c.ok and c.op == "commit":
            out.append(Violation("zombie-write", c.box, f"its late write "
                                 f"{c.reply.get('version')} (epoch {epoch}) became visible "
                                 f"after {who}"))
        elif c.ok:
            out.append(Violation("zombie-write", c.box, f"its late write call for "
                                 f"{c.request.get('version')} (epoch {epoch}) was accepted, "
                                 f"not fenced, after {who}"))
        elif c.code != "fenced":
            out.append(Violation("zombie-write", c.box, f"its late {c.op} of "
                                 f"{c.request.get('version') or 'an upload'} (epoch {epoch}) "
                                 f"was refused with {c.status} {c.code}, not fenced, after {who}"))
        else:
            fenced_tokens.add(token)
    return out


def _before_the_fence(f: Facts, z: Zombie) -> list[Violation]:
    """Zombie commits that landed after the relaunch's first call, before its open."""
    by, began = z.by, z.began
    if by is None or began is None or began is by:
        return []
    landed = [c for c in f.of(z.box, "commit") if c.ok
              and began.started <= c.started < by.started]
    return [Violation("zombie-write", z.box, f"its {c.reply.get('version')} (epoch {z.epoch}) "
                      f"became visible after box {by.box} had begun (its first call, "
                      f"{began.op}, came before its open): the relaunch must open the artifact "
                      "before it reads anything, or it resumes from a stale step")
            for c in landed]


def _judge(f: Facts, z: Zombie) -> list[Violation]:
    out = []
    for c in z.late:
        if c.op == "open" and c.ok:
            fenced = f.epoch_box.get((c.reply.get("fenced") or {}).get("epoch"), "?")
            out.append(Violation("zombie-write", z.box, f"re-opened the artifact after SIGCONT "
                                 f"(epoch {c.reply.get('epoch')}), fencing box {fenced}"))
    out += _before_the_fence(f, z)
    by = z.by.box if z.by is not None else "?"
    if z.fenced:
        if z.run.returncode == 0:
            out.append(Violation("zombie-write", z.box, f"was fenced ({len(z.fenced)} refused "
                                 "after SIGCONT) yet exited 0: it trained on instead of "
                                 "stopping (a framework swallowed the error?)"))
    elif not z.stopped_by_itself() and not any(c.op in WRITES for c in z.after_fence()):
        how = (f"exited {z.run.returncode}, not with the fenced exit {FENCED_EXIT}"
               if z.run.returncode not in (None, 0, FENCED_EXIT) else "did not stop by itself")
        out.append(Violation("zombie-write", z.box, f"made no write after SIGCONT once box "
                             f"{by} had superseded it and {how}, so fencing was not "
                             "exercised (does the command save after a pause?)"))
    return out


def zombie_write(f: Facts) -> list[Violation]:
    out = stale_writes(f)
    for run in f.replay.runs:
        z = f.zombie(run)
        if z is None:
            continue
        if z.by is None:
            f.replay.notes.append(f"zombie {z.box} was never superseded while it ran (no newer "
                                  "open succeeded before it ended): fencing was not exercised")
            continue
        out += _judge(f, z)
    return out
