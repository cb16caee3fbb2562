"""The dashboard (`/`) and the usage page (`/usage`): server-rendered HTML, no build step.

Reads come from `emulator.rules.dashboard_data`; this module only picks colours, lays out the bar
chart and renders the templates. With an admin key configured the pages need it, as
`/_emulator/state` does: a browser sends it as the password of HTTP Basic auth.
"""

from __future__ import annotations

from dataclasses import dataclass

from flask import Blueprint, render_template, request
from markupsafe import Markup, escape

from ..core.errors import Unauthenticated
from ..core.locations import Geography
from ..rules import dashboard_data
from ..rules.cost import human_bytes, usd
from .context import backend, is_admin_key, presented_admin_key

bp = Blueprint("dashboard", __name__)

# Each cloud's hue; a cloud's second and third locations get darker and lighter shades.
PALETTE = {
    "aws": ("#f59e0b", "#b45309", "#fcd34d"),
    "gcp": ("#16a34a", "#166534", "#86efac"),
    "azure": ("#2563eb", "#1e3a8a", "#93c5fd"),
}
OTHER = ("#9333ea", "#db2777", "#0d9488", "#64748b", "#a16207")

CHART_WIDTH, LABEL_WIDTH, BAR_AREA, ROW_HEIGHT, BAR_HEIGHT = 720, 130, 400, 64, 18


@bp.app_template_filter("bytes")
def _bytes_filter(n: float) -> str:
    return human_bytes(n)


@bp.app_template_filter("breakable")
def _breakable_filter(text: object) -> Markup:
    """Let a long id wrap after its '/' and '@' only, never inside a word."""
    return Markup(
        str(escape(text)).replace("/", "/<wbr>").replace("@", "<wbr>@")
    )


@bp.app_template_filter("usd")
def _usd_filter(amount: float) -> str:
    return usd(amount)


def location_colours(geography: Geography) -> dict[str, str]:
    """A stable colour per location id, grouped by cloud so a cloud's buckets look alike."""
    colours: dict[str, str] = {}
    seen: dict[str, int] = {}
    spare = iter(OTHER * 10)
    for loc in geography.locations.values():
        n = seen.get(loc.cloud, 0)
        seen[loc.cloud] = n + 1
        shades = PALETTE.get(loc.cloud, ())
        colours[loc.id] = shades[n] if n < len(shades) else next(spare)
    return colours


@dataclass(frozen=True)
class Bar:
    route: str
    direction: str
    bytes: int
    x: float
    y: float
    width: float


def bar_chart(routes: list[dashboard_data.RouteUse]) -> tuple[list[Bar], int]:
    """Bars for written and read bytes of each route, on one scale; returns bars and height."""
    top = max([r.write_bytes for r in routes] + [r.read_bytes for r in routes] + [1])
    bars = []
    for i, r in enumerate(routes):
        for j, (direction, n) in enumerate((("write", r.write_bytes), ("read", r.read_bytes))):
            width = BAR_AREA * n / top
            bars.append(Bar(r.route, direction, n, LABEL_WIDTH,
                            16 + i * ROW_HEIGHT + j * (BAR_HEIGHT + 4),
                            max(width, 2.0) if n else 0.0))
    return bars, 16 + len(routes) * ROW_HEIGHT


@bp.before_request
def _require_admin() -> None:
    if not is_admin_key(presented_admin_key()):
        raise Unauthenticated("the dashboard needs the admin key (as the Basic auth password)",
                              {"WWW-Authenticate": 'Basic realm="o41 emulator"'})


def _common() -> dict:
    be = backend()
    geo = be.geography
    return {
        "colours": location_colours(geo),
        "locations": list(geo.locations.values()),
        "defaults": {loc.id for loc in geo.defaults.values()},
        "fallback": geo.fallback.id,
        "faults": sorted(be.faults),
    }


@bp.get("/")
def index() -> str:
    """Every artifact, or one project's (`?project=`), or all but conformance runs'
    (`?conformance=hide`)."""
    everything = dashboard_data.artifacts(backend())
    project = request.args.get("project") or None
    hide = request.args.get("conformance") == "hide"
    shown = [a for a in everything
             if (project is None or a.project == project) and not (hide and a.conformance)]
    left = [a for a in everything if a.conformance]
    return render_template(
        "dashboard.html", artifacts=shown, total=len(everything), page="dashboard",
        projects=dashboard_data.projects(everything), project=project, hide_conformance=hide,
        conformance_left=len(left), conformance_runs=len({a.project for a in left}),
        **_common())


@bp.get("/usage")
def usage() -> str:
    view = dashboard_data.usage(backend())
    bars, height = bar_chart(view.routes)
    return render_template(
        "usage.html",
        usage=view,
        bars=bars,
        chart={"width": CHART_WIDTH, "height": height, "label": LABEL_WIDTH,
               "area": BAR_AREA, "row": ROW_HEIGHT, "bar": BAR_HEIGHT},
        page="usage",
        **_common(),
    )
