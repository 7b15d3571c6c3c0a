"""mysql_waits: performance_schema's wait summaries, one row per wait event per snapshot.

Reads perfkit's per-step snapshot (parsers/_snapshots.py, `db/<host>/<step>/waits-<phase>.jsonl`) of

    SELECT EVENT_NAME, COUNT_STAR, SUM_TIMER_WAIT, MAX_TIMER_WAIT
    FROM performance_schema.events_waits_summary_global_by_event_name
    WHERE COUNT_STAR > 0 ORDER BY SUM_TIMER_WAIT DESC LIMIT 500

as `"source":"performance_schema","events":[{"event_name":..,"count_star":..,"sum_timer_wait":..,
"max_timer_wait":..}, ...]` (timers in picoseconds, as performance_schema keeps them). Every event
that counted is kept, not only the top few: a rule takes each event's delta end - start, so it must be
in both snapshots. The figures are cumulative since the server started (or the summary was
truncated). A server whose performance_schema is OFF (MariaDB's default) has no such file: the
capture's manifest record says `unavailable` and why.

Columns (SCHEMA), one row per event per snapshot, heaviest first:
- timestamp (UTC, when the snapshot was taken), host (the `host` argument)
- event_name (string): the instrument, e.g. `wait/io/file/innodb/innodb_log_file`,
  `wait/synch/mutex/innodb/trx_sys_mutex`, `wait/lock/table/sql/handler`, `idle`
- count_star (float64): waits counted; sum_wait_s (float64, s): their total time (SUM_TIMER_WAIT /
  1e12); max_wait_s (float64, s): the longest one (NaN where the instrument is not timed)

An event without a name or with a figure that is not a number is a ParseError naming its line.
Tested on: tests/fixtures/mysql_waits/ (README.md there: MariaDB 10.11 with --performance-schema=ON, real).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import _snapshots
from ._common import Source

KIND = "mysql_waits"
SCHEMA: dict[str, str] = {
    "timestamp": "datetime64[ns, UTC]",
    "host": "string",
    "event_name": "string",
    "count_star": "float64",
    "sum_wait_s": "float64",
    "max_wait_s": "float64",
}
_PS_PER_S = 1e12  # performance_schema's timers count picoseconds


def sniff(text: str) -> bool:
    return _snapshots.sniff_kind(text, KIND)


def parse(source: Source, *, host: str | None = None, tz: str = "UTC") -> pd.DataFrame:
    """Parse wait-summary snapshots. `tz` is unused: snapshots are in UTC.

    Raises:
        ParseError: a line that is not a mysql_waits snapshot, or an event that does not read.
    """
    return _snapshots.frame(source, KIND, "events", SCHEMA, _event, "a wait event", host)


def _event(event: object) -> dict:
    if not isinstance(event, dict) or not isinstance(event.get("event_name"), str):
        raise ValueError(event)
    return {
        "event_name": event["event_name"],
        "count_star": _figure(event.get("count_star")),
        "sum_wait_s": _figure(event.get("sum_timer_wait")) / _PS_PER_S,
        "max_wait_s": _figure(event.get("max_timer_wait")) / _PS_PER_S,
    }


def _figure(value: object) -> float:
    if value is None:
        return np.nan
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(value)
    return float(value)
