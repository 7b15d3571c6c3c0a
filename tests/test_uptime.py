"""uptime parser: up-time forms, users, decimal commas, cut-off and foreign lines."""

from __future__ import annotations

import pandas as pd
import pytest

from perfkit.errors import ParseError
from perfkit.parsers import uptime

from .conftest import FIXTURES

U = FIXTURES / "uptime"


def test_real_values() -> None:
    # ` 07:05:06 up  1:19,  0 user,  load average: 1.84, 2.06, 4.95`: 1 h 19 min = 4740 s
    df = uptime.parse(U / "procps-4.0.2.txt", host="db1")
    assert len(df) == 1
    row = df.loc[0]
    assert row["host"] == "db1" and row["clock"] == "07:05:06"
    assert row["up_s"] == 4740.0 and row["users"] == 0
    assert (row["load_1"], row["load_5"], row["load_15"]) == (1.84, 2.06, 4.95)


def test_de_de_decimal_commas_read_explicitly() -> None:
    de = uptime.parse(U / "locale-de_DE.txt")  # `load average: 1,84, 2,06, 4,95`
    assert (de.loc[0, "load_1"], de.loc[0, "load_5"], de.loc[0, "load_15"]) == (1.84, 2.06, 4.95)
    assert "decimal commas" in de.attrs["notes"][0]
    c = uptime.parse(U / "procps-4.0.2.txt")
    assert de.drop(columns="host").equals(c.drop(columns="host"))


@pytest.mark.parametrize(
    ("line", "up_s", "users"),
    [
        (
            " 16:42:07 up 3 days,  2:04,  2 users,  load average: 1.00, 2.00, 3.00",
            3 * 86400 + 2 * 3600 + 4 * 60,
            2,
        ),
        (" 09:15:33 up 1 day, 45 min,  1 user,  load average: 1.00, 2.00, 3.00", 86400 + 45 * 60, 1),
        (" 07:01:49 up 45 min,  load average: 1.00, 2.00, 3.00", 45 * 60, None),
        ("10:00  up 2 hrs, 3 users, load averages: 1.00 2.00 3.00", 2 * 3600, 3),
    ],
)
def test_up_forms(line: str, up_s: float, users: int | None) -> None:
    row = uptime.parse(line + "\n").loc[0]
    assert row["up_s"] == up_s and row["load_15"] == 3.0
    assert pd.isna(row["users"]) if users is None else row["users"] == users


def test_cut_last_line_dropped_and_counted() -> None:
    df = uptime.parse(U / "truncated-last-line.txt")  # stops after `2.06, `
    assert len(df) == 0 and df.attrs["dropped_lines"] == 1


def test_garbage_names_the_line() -> None:
    text = (U / "procps-4.0.2.txt").read_text()
    with pytest.raises(ParseError) as info:
        uptime.parse("\n" + text.replace("up", "hoch"))
    assert info.value.line_no == 2


@pytest.mark.parametrize(
    "line",
    [
        " 07:05:06 up  1:19,  99999999999999999999999 users,  load average: 1.84, 2.06, 4.95",
        f" 07:05:06 up {'9' * 400} days,  1:19,  0 user,  load average: 1.84, 2.06, 4.95",
        f" 07:05:06 up  1:19,  0 user,  load average: {'9' * 400}.84, 2.06, 4.95",  # float(): inf
    ],
)
def test_numbers_too_large_name_the_line(line: str) -> None:
    with pytest.raises(ParseError, match="too l") as info:
        uptime.parse(f"{line}\n{line}\n")
    assert info.value.line_no == 1


def test_pretty_form_refused() -> None:
    with pytest.raises(ParseError):
        uptime.parse("up 1 hour, 16 minutes\n")


def test_empty() -> None:
    df = uptime.parse("")
    assert len(df) == 0 and list(df.columns) == list(uptime.SCHEMA)


def test_sniff() -> None:
    for f in sorted(U.glob("*.txt")):
        if "truncated" not in f.name:
            assert uptime.sniff(f.read_text()), f.name
    others = [f for f in FIXTURES.glob("*/*.txt") if f.parent.name != "uptime"]
    assert not [f for f in others if uptime.sniff(f.read_text(errors="replace"))]
