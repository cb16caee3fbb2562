"""The per-hop report: one row per box launch, then each check's verdict."""

from __future__ import annotations

from .checks import CHECKS, Facts, Violation, place_text
from .runner import BoxRun, Replay


def _steps(steps: list[int]) -> str:
    """``[1, 2, 3, 5]`` -> ``1-3,5``."""
    groups: list[list[int]] = []
    for s in sorted(steps):
        if groups and groups[-1][-1] == s - 1:
            groups[-1].append(s)
        else:
            groups.append([s])
    return ",".join(f"{g[0]}-{g[-1]}" if len(g) > 1 else str(g[0]) for g in groups) or "-"


def _size(n: int) -> str:
    return f"{n / 1e6:.2f} MB" if n >= 100_000 else f"{n / 1e3:.1f} kB"


def _open(f: Facts, run: BoxRun) -> tuple[str, str, str]:
    o = f.first_open(run.box.id)
    if o is None:
        return "never opened", "-", "-"
    asked = o.request.get("resume") or "fresh"
    if not o.ok:
        return f"{asked} -> {o.code or o.status}", "-", "-"
    resume = o.reply.get("resume_from") or {}
    got = resume.get("version") or "nothing"
    if resume.get("cross_cloud"):
        got += " (cross-cloud)"
    fenced = o.reply.get("fenced") or {}
    by = f"{f.epoch_box.get(fenced.get('epoch'), '?')}@{fenced.get('epoch')}" if fenced else "-"
    return f"{asked} -> {got}", str(o.reply.get("epoch")), by


def _read(f: Facts, run: BoxRun) -> str:
    o = f.first_open(run.box.id)
    resume = (o.reply.get("resume_from") or {}) if o is not None and o.ok else {}
    if not resume or f.replay.usage is None:
        return "-"
    version = resume["version"]
    total = f.read_bytes(run.box.place, version)
    xc = f.read_bytes(run.box.place, version, "cross_cloud")
    return f"{_size(total)}" + (" cross-cloud" if xc else "") if total else "none"


def _commits(calls: list) -> str:
    """Committed steps and where they landed: ``1-3 -> aws/us-east-1``."""
    where = sorted({f"{place_text(c.reply.get('location'))}" for c in calls})
    return _steps([int(c.reply.get("step", 0)) for c in calls]) + (
        f" -> {','.join(where)}" if where else "")


def _writes(f: Facts, run: BoxRun) -> str:
    """Its commits before any SIGCONT, those after (a zombie's own until it is fenced), refusals."""
    late = set(map(id, f.late(run)))
    ok = [c for c in f.of(run.box.id, "commit") if c.ok]
    text = _commits([c for c in ok if id(c) not in late])
    woke = [c for c in ok if id(c) in late]
    if woke:
        text += f"; after SIGCONT {_commits(woke)}"
    refused = [c for c in f.of(run.box.id, "write", "commit") if not c.ok]
    if refused:
        codes = sorted({str(c.code or c.status) for c in refused})
        text += f"; {len(refused)} refused ({','.join(codes)})"
    return text


def _end(f: Facts, run: BoxRun) -> str:
    parts = []
    if run.preempted == "stop":
        parts.append("SIGSTOP")
        if run.continued_at is not None:
            parts.append("SIGCONT")
    elif run.preempted == "kill":
        parts.append("SIGKILL (timeout)" if run.timed_out else "SIGKILL")
    if run.returncode is not None and run.returncode >= 0:
        parts.append(f"exit {run.returncode}")
        z = f.zombie(run)
        told = z.told() if z is not None else None
        if told is not None and run.ended is not None:
            parts[-1] += f" ({max(0.0, run.ended - told.ended):.1f} s after fenced)"
    return " -> ".join(parts) or "?"


def render(replay: Replay, violations: list[Violation]) -> str:
    """The table, each check with PASS or its violations, and where the logs are."""
    f = Facts(replay)
    header = ["HOP", "BOX", "PLACE", "OPEN (resume -> from)", "EPOCH", "FENCED", "READ",
              "WRITES (steps -> location)", "END"]
    rows = []
    for i, run in enumerate(replay.runs):
        opened, epoch, by = _open(f, run)
        rows.append([str(i), run.box.id, run.box.place or "unknown", opened, epoch, by,
                     _read(f, run), _writes(f, run), _end(f, run)])
    widths = [max(len(r[c]) for r in [header, *rows]) for c in range(len(header))]
    lines = [f"replay of {replay.scenario.name}: artifact o41://{replay.artifact}", ""]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip()
              for r in [header, *rows]]
    lines.append("")
    by_check: dict[str, list[Violation]] = {}
    for v in violations:
        by_check.setdefault(v.check, []).append(v)
    for check, what in CHECKS.items():
        found = by_check.get(check, [])
        lines.append(f"{'FAIL' if found else 'PASS'}  {check}: {what}")
        lines += [f"      VIOLATION {v}" for v in found]
    lines += [f"note: {n}" for n in replay.notes]
    lines.append(f"box logs: {replay.workdir}")
    return "\n".join(lines)
