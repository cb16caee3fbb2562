"""What the checks and the report share: the violation record and indexes over the call log.

A zombie is judged over its whole life after SIGCONT, not at the moment of its SIGCONT: a
zombie may wake before the relaunch has opened (a trainer that opens late, a launcher still
starting), commit a step that is legitimately its own, and only then be superseded and
fenced. ``Facts.zombie`` gathers that story once, so the checks and the table tell it alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .proxy import Call
from .runner import BoxRun, Replay

WRITES = ("write", "commit")
# The o41 client's exit code for a fenced launch (docs/client.md): how a zombie that learnt of
# its fence from a check of the artifact, not from a refused write, says it stopped for that.
FENCED_EXIT = 8


@dataclass(frozen=True)
class Violation:
    check: str
    box: str | None
    message: str

    def __str__(self) -> str:
        who = f"box {self.box}: " if self.box else ""
        return f"{self.check}: {who}{self.message}"


def place_text(value: Any) -> str | None:
    """``{"cloud","region"}`` (or ``cloud/region``) as ``cloud/region``; ``None`` if unknown."""
    if isinstance(value, dict) and value.get("cloud"):
        return f"{value['cloud']}/{value.get('region')}"
    return value if isinstance(value, str) and value else None


def step_of(version: Any) -> int:
    """``step-00000300`` -> 300 (-1 when malformed)."""
    text = str(version or "")
    return int(text[5:]) if text.startswith("step-") and text[5:].isdigit() else -1


@dataclass(frozen=True)
class Zombie:
    """A stopped box that got SIGCONT, and what happened to it afterwards.

    ``by`` is the first successful open of another box with a higher epoch than the zombie's
    own, whenever it happened (before or after the SIGCONT); ``None`` if there was none while
    the zombie lived. ``began`` is that box's first call of any kind: a zombie commit that
    lands after it and before ``by`` is a step the relaunch could not have seen when it
    started, which is why a launch must open before it reads anything.
    """

    run: BoxRun
    epoch: int
    by: Call | None
    began: Call | None
    late: list[Call]
    fenced: list[Call]

    @property
    def box(self) -> str:
        return self.run.box.id

    @property
    def superseded_at(self) -> float | None:
        return self.by.ended if self.by is not None else None

    def after_fence(self) -> list[Call]:
        """Its calls after SIGCONT that started once it was superseded."""
        t = self.superseded_at
        return [] if t is None else [c for c in self.late if c.started >= t]

    def stopped_by_itself(self) -> bool:
        """Exited on its own with the fenced exit code after a call made once it was
        superseded (a check of the artifact that told it so). Without such a call, or with
        another code, the exit is a crash, not a fence."""
        r = self.run
        return bool(self.after_fence()) and r.returncode == FENCED_EXIT and not r.timed_out

    def told(self) -> Call | None:
        """The call that told it of its fence: its first ``fenced`` refusal after SIGCONT, or
        for a zombie that stopped by itself, its first call once superseded."""
        if self.fenced:
            return self.fenced[0]
        return self.after_fence()[0] if self.stopped_by_itself() else None


class Facts:
    """Indexes over the call log that several checks share."""

    def __init__(self, replay: Replay) -> None:
        self.replay = replay
        self.calls = replay.calls
        self.commits = [c for c in self.calls if c.op == "commit" and c.ok]
        # VER-7: versions the holder deleted (keep-the-last-k) leave the history
        self.deleted = {c.reply.get("version") for c in self.calls if c.op == "delete" and c.ok}
        self.opens = [c for c in self.calls if c.op == "open"]
        self.epoch_box = {c.reply.get("epoch"): c.box for c in self.opens if c.ok}
        self.token_epoch = {str(c.reply.get("token")): int(c.reply["epoch"])
                            for c in self.opens if c.ok and "epoch" in c.reply}

    def superseded(self, epoch: int, t: float) -> Call | None:
        """The first successful open of a higher epoch whose reply came back before ``t``."""
        return next((o for o in self.opens if o.ok and o.ended < t
                     and int(o.reply.get("epoch") or 0) > epoch), None)

    def of(self, box: str, *ops: str) -> list[Call]:
        return [c for c in self.calls if c.box == box and (not ops or c.op in ops)]

    def latest_before(self, t: float) -> dict[str, Any] | None:
        """The highest-step version whose commit reply came back before time ``t``."""
        done = [c.reply for c in self.commits if c.ended < t]
        return max(done, key=lambda v: v.get("step", 0)) if done else None

    def first_open(self, box: str) -> Call | None:
        opens = self.of(box, "open")
        return opens[0] if opens else None

    def late(self, run: BoxRun) -> list[Call]:
        """Calls a zombie made after it was continued."""
        if run.continued_at is None:
            return []
        return [c for c in self.of(run.box.id) if c.started >= run.continued_at]

    def zombie(self, run: BoxRun) -> Zombie | None:
        """The story of a continued zombie that had opened; ``None`` for any other box."""
        if run.preempted != "stop" or run.continued_at is None:
            return None
        box = run.box.id
        own = [c for c in self.of(box, "open") if c.ok and c.started < run.continued_at]
        if not own:
            return None
        epoch = int(own[-1].reply.get("epoch") or 0)
        end = run.ended if run.ended is not None else float("inf")
        by = next((o for o in self.opens if o.ok and o.box != box and o.ended <= end
                   and int(o.reply.get("epoch") or 0) > epoch), None)
        began = self.of(by.box)[0] if by is not None else None
        late = self.late(run)
        return Zombie(run, epoch, by, began, late, [c for c in late if c.code == "fenced"])

    def read_bytes(self, place: str | None, version: str, route: str | None = None) -> int:
        usage = self.replay.usage or {}
        return sum(int(t.get("bytes") or 0) for t in usage.get("transfers") or []
                   if t.get("direction") == "read" and t.get("version") == version
                   and place_text(t.get("place")) == place
                   and (route is None or t.get("route") == route))
