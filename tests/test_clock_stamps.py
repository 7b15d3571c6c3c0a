"""`_common.clock_stamps`: the dates of top's and iotop's time-of-day clocks, one zone lookup per
distinct clock."""

from __future__ import annotations

from datetime import date, datetime, timedelta

import numpy as np
import pandas as pd

from perfkit.parsers._common import clock_stamps, to_utc


def test_each_row_is_its_clock_on_the_day_in_the_zone_nan_is_nat() -> None:
    # Berlin, 2026-10-25: 02:30 happens twice (the first, CEST, is taken); the next day's 01:00 is
    # past midnight (86400 + 3600); rows repeat their iteration's clock; NaN is a row without one
    clocks = np.array([7200.0, 7200.0, 9000.0, np.nan, 9000.0, 86400.0 + 3600, 7200.0])
    got = clock_stamps(clocks, date(2026, 10, 25), "Europe/Berlin")
    assert list(got[[0, 2, 5]]) == [
        pd.Timestamp("2026-10-25T00:00Z"),
        pd.Timestamp("2026-10-25T00:30Z"),  # 02:30 CEST
        pd.Timestamp("2026-10-26T00:00Z"),  # 01:00 CET the next day
    ]
    assert got[1] == got[0] == got[6] and got[4] == got[2] and pd.isna(got[3])
    midnight = datetime(2026, 10, 25)
    for sec, ts in zip(clocks, got, strict=True):
        if not np.isnan(sec):
            assert ts == to_utc(midnight + timedelta(seconds=float(sec)), "Europe/Berlin")


def test_a_clock_in_the_spring_gap_reads_as_to_utc_does() -> None:
    # 2026-03-29 02:30 does not exist in Berlin: read with the offset before the change, as to_utc
    got = clock_stamps(np.array([9000.0]), date(2026, 3, 29), "Europe/Berlin")
    expected = to_utc(datetime(2026, 3, 29, 2, 30), "Europe/Berlin")
    assert got[0] == expected == pd.Timestamp("2026-03-29T01:30Z")


def test_no_rows() -> None:
    assert len(clock_stamps(np.array([], dtype=float), date(2026, 1, 1), "UTC")) == 0


def test_a_clock_with_a_fraction_reads_as_to_utc_does() -> None:
    # the whole clocks are localised at once, one with a fraction goes through to_utc (its rounding)
    clocks = np.array([3600.0, 3600.25, 3600.25, 7200.0])
    got = clock_stamps(clocks, date(2026, 7, 1), "Europe/Berlin")
    midnight = datetime(2026, 7, 1)
    assert list(got) == [to_utc(midnight + timedelta(seconds=float(s)), "Europe/Berlin") for s in clocks]
    assert got[1] == pd.Timestamp("2026-06-30T23:00:00.25Z")
