"""The ``o41`` command: list, copy and account for checkpoints.

Exit codes (``o41.ExitCode``; a failure prints one line ``o41: <code>: <message>`` on stderr):

====  ===========  ==============================================================
code  name         when
====  ===========  ==============================================================
0     OK           success
1     ERROR        any other o41 error
2     USAGE        bad command line (click)
3     INVALID      missing URL/key, malformed o41:// location, invalid_argument
4     AUTH         unauthenticated (unknown key) or forbidden (no access)
5     NOT_FOUND    artifact or version does not exist
6     CONFLICT     has_checkpoints, not_empty, version_exists, not_after_latest, ...
7     TRANSFER     network failure, signed URL rejected, sha256 mismatch
8     FENCED       a newer open of the artifact fenced this upload
====  ===========  ==============================================================
"""

from __future__ import annotations

import importlib.metadata
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import click

from o41.checkpoint import open as open_run
from o41.config import Settings
from o41.errors import ExitCode, O41Error
from o41.location import Location
from o41.models import Version
from o41.transport.api import ApiClient
from o41.transport.transfer import WORKERS, download
from o41.writing.guard import check_new_step

__all__ = ["cli", "main"]


def _api(settings: Settings) -> ApiClient:
    return ApiClient.from_settings(settings)


def _size(n: float) -> str:
    """Bytes in decimal units, as the price table counts them (GB = 10^9 bytes)."""
    for unit in ("B", "KB", "MB"):
        if n < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"


def _count(n: int, noun: str) -> str:
    """``1 file``, ``2 files``."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
             for r in [header, *rows]]
    return "\n".join(lines)


def _emit(data: object, as_json: bool, text: str) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=True) if as_json else text)


def _version() -> str:
    """The version of whichever distribution installed this client: the client alone
    (``o41-client``) or the whole project."""
    for name in importlib.metadata.packages_distributions().get("o41", []):
        return importlib.metadata.version(name)
    return "unknown"


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(f"o41 {_version()}")
        ctx.exit()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True,
              callback=_print_version, help="Show the version and exit.")
def cli() -> None:
    """Checkpoints of o41 Artifacts. API from O41_ARTIFACTS_API_URL, key from
    O41_ARTIFACTS_API_KEY."""


@cli.command("ls")
@click.argument("location")
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON instead of a table.")
def ls_command(location: str, as_json: bool) -> None:
    """List the versions of o41://P/N, or the files of o41://P/N/<version>."""
    loc = Location.parse(location)
    api = _api(Settings.from_env())
    if loc.version is None:
        versions = api.list_versions(loc.artifact)
        rows = [[v["version"], _size(int(v.get("size") or 0)), Version.from_json(v).location_name,
                 str(v.get("epoch")), str(v.get("holder")), str(v.get("created_at"))]
                for v in versions]
        text = (_table(rows, ["VERSION", "SIZE", "LOCATION", "EPOCH", "HOLDER", "CREATED"])
                if rows else f"{loc}: no checkpoints")
        _emit(versions, as_json, text)
        return
    data = api.read_version(loc.artifact, loc.version)
    rows = [[f["name"], _size(int(f["size"])), f["sha256"]] for f in data.get("files", [])]
    head = f"{loc.artifact}/{data['version']} at {Version.from_json(data).location_name}"
    _emit(data, as_json, head + "\n" + _table(rows, ["NAME", "SIZE", "SHA256"]))


@cli.command("cp")
@click.argument("source")
@click.argument("dest")
@click.option("--workers", default=WORKERS, show_default=True,
              help="Parallel transfers (files or byte ranges).")
@click.option("--progress/--no-progress", default=None,
              help="Force the progress bar on or off (default: on when stderr is a TTY).")
def cp_command(source: str, dest: str, workers: int, progress: bool | None) -> None:
    """Copy a checkpoint: o41://P/N[/latest|/step-N] -> DIR, or DIR|FILE -> o41://P/N/step-N.

    Uploading opens the artifact with resume=latest, which fences any run writing to it.
    """
    remote_src, remote_dst = source.startswith("o41://"), dest.startswith("o41://")
    if remote_src == remote_dst:
        raise click.UsageError("exactly one of SOURCE and DEST must be an o41:// location")
    settings = Settings.from_env()
    if remote_src:
        loc = Location.parse(source)
        data = _api(settings).read_version(loc.artifact, loc.version or "latest", urls=True,
                                           place=settings.place)
        version = Version.from_json(data)
        download(version.files, dest, workers=workers, progress=progress)
        xc = " (cross-cloud)" if version.cross_cloud else ""
        files = _count(len(version.files), "file")
        click.echo(f"copied {loc.artifact}/{version.version} ({files}, "
                   f"{_size(version.size)}) from {version.location_name}{xc} to {dest}")
        return
    loc = Location.parse(dest)
    if loc.version is None or loc.version == "latest":
        raise click.UsageError("DEST must name a new version: o41://project/name/step-XXXXXXXX")
    if not Path(source).exists():
        raise click.UsageError(f"{source} does not exist")
    step = int(loc.version.removeprefix("step-"))
    # refused before the open: a copy onto an existing step fences nobody
    check_new_step(_api(settings), (loc.artifact, f"step-{step:08d}"), None, None)
    run = open_run(f"o41://{loc.artifact}", resume="latest", settings=settings,
                   workers=workers, progress=progress)
    version = run.save(step, source)
    click.echo(f"copied {source} to {loc.artifact}/{version.version} "
               f"({_count(len(version.files), 'file')}, {_size(version.size)}) at "
               f"{version.location_name}")


@cli.command("run", context_settings={"ignore_unknown_options": True})
@click.argument("location")
@click.option("--resume", default="latest", show_default=True,
              help='"latest", "fresh", or o41://P/N/step-XXXXXXXX to fork from.')
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def run_command(location: str, resume: str, command: tuple[str, ...]) -> None:
    """Open LOCATION (fencing the previous box), then run COMMAND holding the open.

    The trainer's o41:// filesystem uses the open (no second one); when a newer launch fences
    this one, COMMAND is stopped and the exit code is 8. Example:
    o41 run o41://experiments/run-1234 -- python train.py
    """
    from o41.run import launch

    if not command:
        raise click.UsageError("no COMMAND to run after the location (o41 run LOCATION -- CMD)")
    sys.exit(launch(location, None if resume == "fresh" else resume, command))


@cli.command("usage")
@click.argument("location", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON instead of tables.")
def usage_command(location: str | None, as_json: bool) -> None:
    """Bytes and cost per route, fallback placements and transfers (all readable artifacts,
    or one)."""
    artifact = Location.parse(location).artifact if location else None
    data = _api(Settings.from_env()).usage(artifact)
    routes = data.get("routes") or {}
    rows = [[name, _size(int(r.get("write_bytes", 0))), _size(int(r.get("read_bytes", 0))),
             f"${float(r.get('cost_usd', 0)):.2f}"] for name, r in routes.items()]
    parts = [_table(rows, ["ROUTE", "WRITTEN", "READ", "COST"]),
             f"total ${float(data.get('total_cost_usd') or 0):.2f}"]
    placements = data.get("placements") or []
    if placements:
        rows = [[p.get("kind", ""), _place(p.get("place")), _place(p.get("location")),
                 str(p.get("route")), str(p.get("versions")), _size(int(p.get("bytes") or 0))]
                for p in placements]
        parts += ["", "placements away from the box's own region:",
                  _table(rows, ["KIND", "PLACE", "LOCATION", "ROUTE", "VERSIONS", "BYTES"])]
    _emit(data, as_json, "\n".join(parts))


def _place(value: object) -> str:
    if isinstance(value, dict):
        return f"{value.get('cloud')}/{value.get('region')}"
    return "unknown" if value is None else str(value)


def main(argv: Sequence[str] | None = None) -> None:
    """Console entry point: run the command, turn o41 errors into one line and an exit code."""
    try:
        code = cli.main(args=list(argv) if argv is not None else None, prog_name="o41",
                        standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("o41: aborted", err=True)
        sys.exit(ExitCode.ERROR)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except O41Error as exc:
        message = " ".join(str(exc).split())
        click.echo(f"o41: {exc.code}: {message}", err=True)
        sys.exit(exc.exit_code)
    sys.exit(code if isinstance(code, int) else ExitCode.OK)
