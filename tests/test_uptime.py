"""uptime parser: up-time forms, users, decimal commas, cut-off and foreign lines."""

from __future__ import annotations

import numpy as np
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


def test_pretty_form_read() -> None:
    # issue 17: `uptime -p` is read for its time since boot (was refused)
    df = uptime.parse("up 1 hour, 16 minutes\n")
    assert df.at[0, "up_s"] == 4560 and pd.isna(df.at[0, "clock"]) and np.isnan(df.at[0, "load_1"])
    assert uptime.parse("up 2 weeks, 1 day, 0 minutes\n").at[0, "up_s"] == 15 * 86400
    with pytest.raises(ParseError, match="uptime -p part"):
        uptime.parse("up 3 fortnights\n")


def test_plain_p_and_s_in_one_file() -> None:
    # `uptime; uptime -p; uptime -s`: two rows, the boot time skipped and counted
    df = uptime.parse(U / "procps-4.0.2-plain-p-s.txt")
    # ` 12:55:19 up  5:39,  0 user,  load average: 2.43, 2.94, 2.41`, `up 5 hours, 39 minutes`
    assert len(df) == 2 and df.at[0, "clock"] == "12:55:19" and df.at[0, "load_1"] == 2.43
    assert df.at[0, "up_s"] == df.at[1, "up_s"] == 5 * 3600 + 39 * 60 and df.at[0, "users"] == 0
    skipped = df.attrs["skipped"]
    assert skipped.count == 1 and skipped.quoted[0].line_no == 3
    assert skipped.quoted[0].text == "2026-11-27 07:15:57"
    with pytest.raises(ParseError, match=r"nothing readable \(1 lines skipped\)"):
        uptime.parse("2026-11-27 07:15:57\n")


def test_clockless_line_of_pt_summary() -> None:
    # pt-summary keeps what follows `up `: `1 day, 15:14,  5 users,  load average: 0.00, 0.06, 0.07`
    line = "1 day, 15:14,  5 users,  load average: 0.00, 0.06, 0.07\n"
    df = uptime.parse(line)
    assert df.at[0, "up_s"] == 86400 + 15 * 3600 + 14 * 60 and df.at[0, "users"] == 5
    assert pd.isna(df.at[0, "clock"]) and df.at[0, "load_15"] == 0.07
    assert uptime.sniff(line)
    assert not uptime.sniff("top - 07:02:23 up  1:16,  0 user,  load average: 0.68, 2.43, 5.63\n")


def test_empty() -> None:
    df = uptime.parse("")
    assert len(df) == 0 and list(df.columns) == list(uptime.SCHEMA)


def test_sniff() -> None:
    for f in sorted(U.glob("*.txt")):
        if "truncated" not in f.name:
            assert uptime.sniff(f.read_text()), f.name
    others = [f for f in FIXTURES.glob("*/*.txt") if f.parent.name != "uptime"]
    assert not [f for f in others if uptime.sniff(f.read_text(errors="replace"))]
