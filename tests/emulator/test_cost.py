"""`o41-emulator cost`: the page's cost table, computed from the price table."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from emulator.core.prices import GB, Prices
from emulator.rules.cost import cost_table, human_bytes, human_duration, parse_duration, usd
from emulator.run.cli import main

WEEK = 7 * 86400


def test_page_example_writes_336_checkpoints_of_6_72_tb_and_prices_each_route():
    table = cost_table(Prices(), 20 * GB, 1800, WEEK)
    assert table.checkpoints == 336 and table.written_bytes == 6_720 * GB
    by = {(r.route, r.cloud): r.total_usd for r in table.rows}
    assert by[("local", None)] == 0
    assert by[("inter_region", None)] == pytest.approx(134.4)
    assert by[("cross_cloud", "aws")] == pytest.approx(604.8)
    assert by[("cross_cloud", "gcp")] == pytest.approx(806.4)
    assert by[("cross_cloud", "azure")] == pytest.approx(584.64)
    assert table.range("cross_cloud") == pytest.approx((584.64, 806.4))
    resume = {r.cloud: r.total_usd for r in table.resume}
    assert resume == pytest.approx({"aws": 1.8, "gcp": 2.4, "azure": 1.74})


def test_cost_command_prints_the_pages_table():
    r = CliRunner().invoke(main, ["cost", "--checkpoint-gb", "20", "--every", "30m",
                                  "--for", "7d"])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0] == "20 GB every 30m for 7d: 336 checkpoints, 6.72 TB written"
    text = r.output
    for expected in ("$0.00", "$134.40", "$604.80", "$806.40", "$584.64"):
        assert expected in text
    assert lines[-1] == ("one cross-cloud resume of the latest (20 GB): $1.74-$2.40 "
                         "(aws $1.80, azure $1.74, gcp $2.40)")


def test_cost_command_prints_json_with_every_figure():
    r = CliRunner().invoke(main, ["cost", "--checkpoint-gb", "20", "--every", "30min",
                                  "--for", "7d", "--json"])
    assert r.exit_code == 0, r.output
    table = json.loads(r.output)
    assert (table["checkpoints"], table["written_bytes"]) == (336, 6_720_000_000_000)
    assert (table["every_s"], table["for_s"]) == (1800, WEEK)
    by = {(row["route"], row["cloud"]): row["total_usd"] for row in table["rows"]}
    assert by[("cross_cloud", "aws")] == pytest.approx(604.8)
    assert by[("local", None)] == 0
    assert {row["cloud"]: row["total_usd"] for row in table["resume"]} == pytest.approx(
        {"aws": 1.8, "gcp": 2.4, "azure": 1.74})


def test_cost_command_of_one_checkpoint_says_1_checkpoint():
    r = CliRunner().invoke(main, ["cost", "--checkpoint-gb", "20", "--every", "1h",
                                  "--for", "1h"])
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[0] == "20 GB every 1h for 1h: 1 checkpoint, 20 GB written"


def test_cost_command_takes_prices_from_a_config_file(tmp_path):
    cfg = tmp_path / "prices.toml"
    cfg.write_text("[prices]\ninter_region = { aws = 0.01 }\ncross_cloud = { gcp = 0.2 }\n")
    r = CliRunner().invoke(main, ["cost", "--checkpoint-gb", "1", "--every", "1h", "--for",
                                  "10h", "--config", str(cfg)])
    assert r.exit_code == 0, r.output
    # Inter-region prices now differ by cloud, so each cloud gets its own row.
    assert "to another region of aws" in r.output and "$0.10" in r.output
    assert "out of the cloud, leaving gcp" in r.output and "$2.00" in r.output


@pytest.mark.parametrize("args, message", [
    (["--every", "30x", "--for", "7d"], "not a duration"),
    (["--every", "2d", "--for", "1d"], "longer than the run"),
    (["--every", "0m", "--for", "1d"], "not a positive duration"),
])
def test_cost_command_refuses_bad_durations(args, message):
    r = CliRunner().invoke(main, ["cost", "--checkpoint-gb", "20", *args])
    assert r.exit_code == 2 and message in r.output


@pytest.mark.parametrize("text, seconds", [("90s", 90), ("30m", 1800), ("1h", 3600),
                                           ("7d", WEEK), ("1w", WEEK), ("1h30m", 5400),
                                           ("0.5h", 1800), (" 2D ", 172800),
                                           ("30min", 1800), ("2 hours", 7200),
                                           ("1hr30mins", 5400), ("7days", WEEK),
                                           ("1week", WEEK), ("45sec", 45)])
def test_parse_duration_reads_units_and_sums(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "30", "m", "1h-5m", "1y", "h1", "30mn", "min"])
def test_parse_duration_refuses_what_it_cannot_read(text):
    with pytest.raises(ValueError):
        parse_duration(text)


@given(st.integers(min_value=1, max_value=10**8))
def test_human_duration_reads_back_as_the_same_seconds(seconds):
    assert parse_duration(human_duration(seconds)) == seconds


@pytest.mark.parametrize("n, text", [(0, "0 B"), (999, "999 B"), (1500, "1.5 kB"),
                                     (20 * GB, "20 GB"), (6_720 * GB, "6.72 TB"),
                                     (250 * GB, "250 GB")])
def test_human_bytes_counts_in_decimal_units(n, text):
    assert human_bytes(n) == text


@pytest.mark.parametrize("amount, text", [(0, "$0.00"), (134.4, "$134.40"),
                                          (1234.567, "$1,234.57"), (0.000015, "$0.000015"),
                                          (0.0001875, "$0.000188")])
def test_usd_keeps_cents_and_small_amounts_readable(amount, text):
    assert usd(amount) == text
