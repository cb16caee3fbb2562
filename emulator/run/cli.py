"""`o41-emulator`: start the emulator (and, from other modules, its helper commands)."""

from __future__ import annotations

import contextlib
import errno
import importlib
import ipaddress
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from ..rules.origins import host_name, is_loopback
from ..settings.config import DEFAULT_KEY, SETTINGS, SettingRow, Settings, check_value, load_toml
from ..settings.faults import FAULTS


class _Commands(click.Group):
    """Commands whose modules load only when they run: `serve` starts faster without the
    replay harness's imports."""

    lazy = {"replay": ("replay.command", "replay")}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *self.lazy])

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.lazy:
            module, attr = self.lazy[name]
            return getattr(importlib.import_module(module), attr)
        return super().get_command(ctx, name)


def _checked(row: SettingRow) -> Callable[[click.Context, click.Parameter, Any], Any]:
    """A callback checking an option's value against its row's range, naming the variable
    when the value came from the environment rather than the command line."""

    def check(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if value is None:
            return None
        flag = f"--{row.name.replace('_', '-')}"
        hint = flag
        if ctx.get_parameter_source(param.name or "") is ParameterSource.ENVIRONMENT:
            hint = f"{ctx.auto_envvar_prefix}_{row.name.upper()} ({flag})"
        try:
            return check_value(row, value)
        except ValueError as exc:
            raise click.BadParameter(str(exc), ctx, param, param_hint=hint) from None

    return check


def setting_options(command: click.Command) -> click.Command:
    """`serve`'s options for the settings the table (`config.SETTINGS`) marks `cli`, with its
    help; each also reads O41_EMULATOR_SERVE_<NAME>. One left unset keeps the config file's.
    Each value is checked against the row's range (click only parses its type)."""
    for row in reversed([r for r in SETTINGS.values() if r.cli]):
        kind: click.ParamType = (click.Choice(row.choices) if row.choices
                                 else click.INT if row.type is int
                                 else click.FLOAT if row.type is float
                                 else click.STRING)
        default = f" (default {row.default})" if row.default not in (None, ()) else ""
        command = click.option(f"--{row.name.replace('_', '-')}", row.name, type=kind,
                               callback=_checked(row),
                               help=f"{row.help[0].upper()}{row.help[1:]}{default}.")(command)
    return command


def load_config(config_file: Path | None, data_dir: Path) -> Settings:
    """The settings of `data_dir`, with the --config file's on top (a bad file is a usage
    error naming --config)."""
    settings = Settings(data_dir=data_dir)
    if config_file is None:
        return settings
    try:
        return load_toml(settings, config_file)
    except (ValueError, KeyError, TypeError) as exc:
        raise click.BadParameter(str(exc), param_hint="--config") from None


def check_environment(ctx: click.Context) -> None:
    """A variable of this command's prefix that names no option is a typo, not a no-op."""
    prefix = f"{ctx.auto_envvar_prefix}_"
    known = {f"{prefix}{p.name.upper()}" for p in ctx.command.params if p.name}
    unknown = sorted(k for k in os.environ if k.startswith(prefix) and k not in known)
    if unknown:
        raise click.UsageError(f"unknown variable(s) {', '.join(unknown)}; this command "
                               f"reads {', '.join(sorted(known))}")


@click.group(
    cls=_Commands,
    context_settings={"help_option_names": ["-h", "--help"], "auto_envvar_prefix": "O41_EMULATOR"},
)
@click.version_option(package_name="o41-artifacts-emulator")
def main() -> None:
    """Local emulator of the o41 Artifacts checkpoint API over three fake cloud regions."""


@main.command()
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Interface to listen on; 0.0.0.0 exposes the emulator to the network.",
)
@click.option(
    "--port",
    default=8041,
    show_default=True,
    type=int,
    help="Port to listen on; 0 picks a free one.",
)
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where metadata and buckets live; persists across restarts. "
    "Default: a fresh temporary dir removed at exit.",
)
@setting_options
@click.option(
    "--config",
    "config_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="TOML file: locations, fallback, prices, keys, url_lifetime, limits.",
)
@click.option(
    "--fault",
    "faults",
    multiple=True,
    type=click.Choice(sorted(FAULTS)),
    help="Break one contract rule on purpose (repeatable); for testing test suites.",
)
@click.option(
    "--workers",
    default=2,
    show_default=True,
    type=click.IntRange(1, 64),
    help="Worker processes; they share the data dir safely.",
)
@click.option(
    "--threads",
    default=64,
    show_default=True,
    type=click.IntRange(1, 256),
    help="Threads per worker process: each request in progress holds one, so many keep "
    "slow clients from starving the rest. A stalled upload holds its thread until "
    "--read-timeout drops it: with --workers 1 --threads 2, two stalled PUT bodies keep "
    "even health waiting that long.",
)
@click.option(
    "--allow-unauthenticated-admin",
    is_flag=True,
    help="Serve beyond loopback without --admin-key anyway: anyone who can reach the port "
    "can then reset the emulator, add keys and set chaos rules.",
)
@click.option("--quiet", is_flag=True, help="No per-call log lines.")
def serve(
    host: str,
    port: int,
    data_dir: Path | None,
    config_file: Path | None,
    faults: tuple[str, ...],
    workers: int,
    threads: int,
    allow_unauthenticated_admin: bool,
    quiet: bool,
    **overrides: object,
) -> None:
    """Serve the Artifacts API and its signed-URL data plane."""
    from ..rules.identity import ForeignStorage
    from ..rules.upkeep import forget_node, prepare_storage
    from ..state.backend import Backend
    from ..state.nodes import DisagreeingNodes
    from .server import EmulatorServer, bind

    check_environment(click.get_current_context())
    temporary = data_dir is None
    # Nothing is written (no data dir, no database) before the port is ours: a busy port or
    # a bad setting leaves no trace. The settings are read against the data dir to come.
    planned = data_dir if data_dir is not None else Path(tempfile.gettempdir())
    settings = load_config(config_file, planned)
    settings = replace(settings, **{k: v for k, v in overrides.items() if v is not None})
    if faults:
        settings = replace(settings, faults=settings.faults | frozenset(faults))
    settings = exposure(host, settings, allow_unauthenticated_admin)
    exposed = not is_loopback(host_name(host))
    try:
        sock = bind(host, port)
    except OSError as exc:
        raise click.ClickException(_bind_failure(host, port, exc)) from None
    root = Path(tempfile.mkdtemp(prefix="o41-emulator-")) if temporary else data_dir
    settings = replace(settings, data_dir=root)
    try:
        try:
            prepared = Backend(settings)
            prepare_storage(prepared)
            prepared.close()
        except (DisagreeingNodes, ForeignStorage) as exc:
            raise click.ClickException(f"refusing to start: {exc}") from None
        except Exception as exc:  # a bad endpoint, database or data dir says so, no trace
            raise click.ClickException(f"cannot prepare storage: {exc}") from None
        url = f"http://{host if ':' not in host else f'[{host}]'}:{sock.getsockname()[1]}"
        for name in sorted(settings.faults):
            rule, what = FAULTS[name]
            click.secho(f"!!! FAULT {name} is ON: breaks {rule}: {what}", fg="red", err=True)
        if exposed and not settings.admin_key:
            click.secho(
                f"!!! listening on {host} without --admin-key (--allow-unauthenticated-admin):"
                " anyone who can reach it can reset it, add keys and set chaos rules",
                fg="red",
                err=True,
            )
        if settings.database and settings.storage == "fs":
            click.secho(
                "!!! database is shared but storage fs keeps bytes in this node's data dir: "
                "nodes sharing the database need storage s3 on one S3 endpoint",
                fg="yellow",
                err=True,
            )
        key = DEFAULT_KEY if any(k.key == DEFAULT_KEY for k in settings.keys) else "<your key>"
        click.echo(f"o41 emulator listening on {url}")
        click.echo(f"export O41_ARTIFACTS_API_URL={url}/api/v1")
        click.echo(f"export O41_ARTIFACTS_API_KEY={key}")
        click.echo(
            f"data in {root}{' (temporary)' if temporary else ''}; storage "
            f"{settings.storage}; metadata {_database_shown(settings)}; Ctrl-C to stop",
            err=True,
        )
        sys.stdout.flush()
        try:
            EmulatorServer(settings, sock, workers, threads, quiet).run()
        finally:
            forget_node(settings)
    finally:
        with contextlib.suppress(OSError):  # gunicorn serves copies of it; ours is spare
            sock.close()
        if temporary:
            shutil.rmtree(root, ignore_errors=True)


def _database_shown(settings: Settings) -> str:
    """The metadata database as a log line may show it: never with its password."""
    if settings.database is None:
        return "in the data dir (SQLite)"
    from .. import store  # loaded already by the Backend `serve` made

    return store.shown_url(settings.database)


def exposure(host: str, settings: Settings, open_admin: bool) -> Settings:
    """The settings for listening on `host`: beyond loopback, only with an admin key or
    `--allow-unauthenticated-admin` (else one line saying so), and with the address it
    listens on admitted as a Host (requests to a specific address name it)."""
    name = host_name(host)
    if is_loopback(name):
        return settings
    if not settings.admin_key and not open_admin:
        raise click.ClickException(
            f"--host {host} reaches beyond this machine, and without an admin key anyone "
            "there could reset the emulator: set --admin-key (or "
            "O41_EMULATOR_SERVE_ADMIN_KEY), or pass --allow-unauthenticated-admin to "
            "accept that")
    try:
        if ipaddress.ip_address(name).is_unspecified:  # 0.0.0.0 or ::, no one address
            return settings
    except ValueError:
        pass
    return replace(settings, allowed_hosts=(*settings.allowed_hosts, name))


def _bind_failure(host: str, port: int, exc: OSError) -> str:
    """One line saying why the port cannot be had and what to do instead."""
    if exc.errno == errno.EADDRINUSE:
        return (f"port {port} on {host} is already in use (another emulator?): pick another "
                "with --port PORT, or --port 0 for any free port")
    if exc.errno == errno.EACCES:
        return f"not allowed to listen on {host}:{port}: use --port above 1023, or --port 0"
    return f"cannot listen on {host}:{port}: {exc.strerror or exc}"


def _duration(ctx: click.Context, param: click.Parameter, value: str) -> float:
    from ..rules.cost import parse_duration

    try:
        return parse_duration(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


@main.command()
@click.option(
    "--checkpoint-gb",
    type=click.FloatRange(min=0, min_open=True),
    required=True,
    help="Size of one checkpoint in GB (10^9 bytes).",
)
@click.option("--every", required=True, callback=_duration,
              help="Interval between checkpoints, e.g. 30m, 30min, 1h, 90s.")
@click.option("--for", "for_", required=True, callback=_duration,
              help="Length of the run, e.g. 7d, 12h, 1w, 2days.")
@click.option(
    "--config",
    "config_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="TOML file whose [prices] replace the defaults, as for serve.",
)
@click.option("--json", "as_json", is_flag=True,
              help="Print the table as JSON (bytes, seconds and USD, unrounded).")
def cost(checkpoint_gb: float, every: float, for_: float, config_file: Path | None,
         as_json: bool) -> None:
    """Print what writing checkpoints costs by where they go, from the price table."""
    import json

    from ..core.prices import GB
    from ..rules.cost import as_json as table_json
    from ..rules.cost import cost_table, render

    settings = load_config(config_file, Path("."))
    try:
        table = cost_table(settings.prices, round(checkpoint_gb * GB), every, for_)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    click.echo(json.dumps(table_json(table), indent=2) if as_json else render(table))


