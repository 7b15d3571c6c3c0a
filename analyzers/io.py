"""Who does the IO: per-thread iotop rates (or pidstat -d per process) grouped by program.

iostat says how busy a device is; it cannot say on whose behalf. iotop and pidstat -d read each
task's `write_bytes` (the page-cache bytes it dirtied, charged when they are written back) and
`read_bytes`, so they name the writer. In seed 000 the top writer during the load was not TiKV but
the engineer's own `perf record --call-graph=dwarf` (2 MB/s of stack dumps into perf.data), and
ext4's journal thread `jbd2/sda2-8` spent 42 % of its time waiting on the disk.

`program_name` is shared with analyzers/overhead.py, which looks for perfkit's own tools.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from perfkit.config import Thresholds
from perfkit.dataset import Capture, Dataset
from perfkit.findings import Finding, Skipped

# Interpreters whose first argument names the program (`python3 /usr/sbin/iotop -botqk`).
_INTERPRETERS = re.compile(r"^(?:python[0-9.]*|perl[0-9.]*|sh|bash|dash|ruby|node)$")
_KWORKER = re.compile(r"^kworker/")

# What a program is, for judging whether the top writer is the database itself. Kernel threads
# are matched on their name before the first `/` or `-` (`jbd2/sda2-8`, `xfsaild/dm-0`).
DATABASES = frozenset(
    {
        "mysqld",
        "mariadbd",
        "tikv-server",
        "tidb-server",
        "pd-server",
        "tiflash",
        "postgres",
        "postmaster",
        "mongod",
        "redis-server",
        "etcd",
        "clickhouse-server",
        "clickhouse",
        "cockroach",
        "oceanbase",
        "observer",
    }
)
_CATEGORIES: dict[str, frozenset[str]] = {
    "journaling": frozenset({"jbd2", "xfsaild", "xfs-log", "btrfs-transacti", "txg_sync", "z_wr_iss"}),
    "logging": frozenset(
        {"rsyslogd", "systemd-journal", "systemd-journald", "syslog-ng", "auditd", "filebeat", "fluent-bit"}
        | {"td-agent", "vector", "promtail", "journald"}
    ),
    "backup": frozenset(
        {"mysqldump", "mariadb-dump", "mydumper", "xtrabackup", "mariabackup", "br", "dumpling", "tar"}
        | {"rsync", "gzip", "pigz", "zstd", "restic", "borg", "pg_dump", "pg_basebackup", "cp"}
    ),
    # perfkit's own captures (collectors/captures.py) and their helpers; the load generator is not one.
    "capture": frozenset(
        {"perf", "perf-exec", "iotop", "sadc", "sar", "sadf", "pidstat", "top", "ss", "vmstat", "iostat"}
        | {"mpstat", "awk", "mawk", "gawk", "numastat", "iftop", "ps", "perfkit"}
    ),
    "load generator": frozenset({"sysbench", "go-ycsb", "go-tpc", "ycsb", "tpcc", "benchbase"}),
}
# Writers that are not the database: when one of these does most of the writing it competes with
# the database for the device (or is the database's own journal doing more than its data).
NOT_DATABASE = ("journaling", "logging", "backup", "capture")


def program_name(command: Any, thread: Any = None) -> str:
    """The program behind a task line: `[jbd2/sda2-8]` -> `jbd2/sda2-8`, a command line -> the
    basename of its executable (or of the script an interpreter runs), kworkers -> `kworker`."""
    if command is None or pd.isna(command):
        return "?"
    text = str(command).strip()
    if text.startswith("[") and text.endswith("]") and " " not in text:
        name = text[1:-1]
        return "kworker" if _KWORKER.match(name) else name
    if text.startswith("|__"):  # a pidstat -t thread row
        text = text[3:]
    words = text.split()
    if not words:
        return "?"
    name = words[0].rsplit("/", 1)[-1]
    if _INTERPRETERS.match(name) and len(words) > 1 and not words[1].startswith("-"):
        name = words[1].rsplit("/", 1)[-1]
    elif name.startswith("python"):  # `python3 [-u ...] -m perfkit run ...`: the module it runs
        for k, word in enumerate(words[1:-1], start=1):
            if word == "-m":
                name = words[k + 1]
                break
            if word == "-c" or not word.startswith("-"):
                break
    if _KWORKER.match(words[0]):
        return "kworker"
    return name or "?"


def category(program: str) -> str:
    """`database`, one of NOT_DATABASE, `load generator`, `kernel writeback` or `other`."""
    if program in DATABASES:
        return "database"
    if program == "kworker" or program.startswith("flush-"):
        return "kernel writeback"  # flushes every process's dirty pages, the database's included
    stem = re.split(r"[/:]", program, maxsplit=1)[0]
    for cat, names in _CATEGORIES.items():
        if program in names or stem in names:
            return cat
    return "other"


def _window(ts: pd.Series) -> tuple[str, str] | None:
    ts = ts.dropna()
    return (ts.min().isoformat(), ts.max().isoformat()) if len(ts) else None


def per_value(fn: Any, *columns: pd.Series) -> pd.Categorical:
    """`fn(*values)` for each row, called once per distinct combination of values (commands and
    tasks repeat every interval). Categories sorted, as groupby and pivot_table order by them."""
    combined = np.zeros(len(columns[0]), dtype=np.int64)
    distinct = []
    for col in columns:
        codes, uniques = pd.factorize(col, use_na_sentinel=False)
        combined = combined * max(len(uniques), 1) + codes
        distinct.append(uniques)
    codes, combos = pd.factorize(combined)
    values = []
    for combo in combos:
        args = []
        for uniques in reversed(distinct):
            combo, i = divmod(int(combo), len(uniques))
            args.append(uniques[i])
        values.append(fn(*reversed(args)))
    categories = sorted(set(values))
    at = {v: i for i, v in enumerate(categories)}
    return pd.Categorical.from_codes(np.array([at[v] for v in values], dtype=np.int64)[codes], categories)


FIRST_ITERATION = 1  # iotop's: parsers/iotop.py numbers iterations from 1, rows before any Total line 0


def _intervals(path: str, values: pd.Series) -> tuple[np.ndarray, list[str]]:
    """For each row the position of its interval in the names `path#value` (`path#?` when missing),
    in order of first appearance, and those names; each distinct value formatted once."""
    codes, uniques = pd.factorize(values, use_na_sentinel=False)
    text = pd.Series(uniques).astype("string").fillna("?")
    return codes, [f"{path}#{v}" for v in text]


def _iotop_task(tid: Any, thread: Any, command: Any) -> str:
    return f"{tid} {thread if pd.notna(thread) else program_name(command)}"


def _pidstat_task(pid: Any, command: Any) -> str:
    return f"{'?' if pd.isna(pid) else pid} {'?' if pd.isna(command) else command}"


@dataclass
class Tasks:
    """One host's task rows (see `tasks`), its intervals and iotop's Total lines."""

    rows: pd.DataFrame
    samples: list[str]  # every interval, those with no task rows included
    totals: dict[str, dict]  # iotop: interval -> Total/Actual KiB/s


@dataclass(frozen=True)
class TaskKeys:
    """One iotop or pidstat capture's task rows keyed (`task_keys`): which rows are tasks, and each
    one's program, task and interval."""

    rows: np.ndarray | None  # positions of the task rows in the frame (pidstat -t: its processes); None: all
    program: pd.Categorical
    task: pd.Categorical  # `tid thread` (iotop) or `pid command` (pidstat)
    interval: np.ndarray  # each row's interval, as a position in `names`
    names: list[str]  # `path#iteration` (iotop) or `path#timestamp` (pidstat), in order of appearance


def task_keys(cap: Capture) -> TaskKeys:
    """The keys `tasks` groups a capture's rows by, made once per capture (`Capture.view`; in the
    worker that parsed it, with `--jobs`): a Python call per distinct command, not per row."""
    df = cap.frame
    if cap.kind == "iotop":
        # iotop's first iteration is measured over the moment since iotop started, not an interval:
        # a writer of 10 MB/s read 199 MB/s there, one 1 MiB write in a few ms. Left out where the
        # capture begins with it (`from_start`), as vmstat's since-boot line is
        later = (df["iteration"] != FIRST_ITERATION).fillna(True).to_numpy() | (not cap.extras.from_start)
        rows = None if later.all() else np.flatnonzero(later)
        df = df if rows is None else df.iloc[rows]
        codes, names = _intervals(cap.path, df["iteration"])
        task = per_value(_iotop_task, df["tid"], df["thread"], df["command"])
        return TaskKeys(rows, per_value(program_name, df["command"]), task, codes, names)
    # with -t, thread rows repeat their process's IO: the process rows are the tasks
    threads = df["tid"].notna().to_numpy()
    rows = np.flatnonzero(~threads) if threads.any() else None
    procs = df.iloc[rows] if rows is not None else df
    codes, names = _intervals(cap.path, procs["timestamp"])
    task = per_value(_pidstat_task, procs["pid"], procs["command"])
    return TaskKeys(rows, per_value(program_name, procs["command"]), task, codes, names)


# Each task row's figures, from its capture's column (None: the kind prints none).
_TASK_COLUMNS: dict[str, dict[str, str | None]] = {
    "iotop": {"write_kb_s": "write_kb_s", "read_kb_s": "read_kb_s", "cpu_pct": None, "io_pct": "io_pct"},
    "pidstat": {"write_kb_s": "kb_wr_s", "read_kb_s": "kb_rd_s", "cpu_pct": "cpu_pct", "io_pct": None},
}


def tasks(ds: Dataset, kind: str) -> dict[str | None, Tasks]:
    """host -> one row per task and interval, from all captures of `kind` (iotop or pidstat).

    Columns: `sample` (the row's interval as its position in `samples`; -1: an iotop interval
    without a Total line), `timestamp`, `program`, `task` (thread label), `command`, `write_kb_s`,
    `read_kb_s`, `cpu_pct`, `io_pct`, `source` (the capture's path, categorical). Intervals are named
    `capture path#iteration` (iotop) or `#timestamp` (pidstat): distinct across sweep steps.
    """
    parts: dict[str | None, list[tuple[pd.DataFrame, np.ndarray, list[str]]]] = {}
    samples: dict[str | None, list[str]] = {}
    totals: dict[str | None, dict[str, dict]] = {}
    named = _TASK_COLUMNS[kind]
    cols = ["timestamp", "command", *(c for c in named.values() if c)]
    paths = list(dict.fromkeys(c.path for c in ds.of(kind)))
    for cap in ds.of(kind):
        keys = cap.view(task_keys)
        df = cap.frame[cols] if keys.rows is None else cap.frame[cols].iloc[keys.rows]
        rows = pd.DataFrame(
            {
                "timestamp": df["timestamp"],
                "program": keys.program,
                "task": keys.task,
                **{col: df[c] if c else np.nan for col, c in named.items()},
                "command": df["command"],
                # one code per row, the paths of every capture of the kind its categories: a path
                # repeated as a string per row took an Arrow take per frame (0.16 s on 4 hosts x 3 h)
                "source": pd.Categorical.from_codes(np.full(len(df), paths.index(cap.path)), paths),
            },
            copy=False,  # a block per column, as they come: stacking the numbers was a copy of them
        )
        seen = keys.names
        if kind == "iotop":
            tot = [
                t for t in cap.extras.totals if t["iteration"] != FIRST_ITERATION or not cap.extras.from_start
            ]
            seen = [f"{cap.path}#{t['iteration']}" for t in tot] or keys.names
            totals.setdefault(cap.host, {}).update({f"{cap.path}#{t['iteration']}": t for t in tot})
        parts.setdefault(cap.host, []).append((rows, keys.interval, keys.names))
        samples.setdefault(cap.host, []).extend(seen)
    out = {}
    for host, caps in parts.items():
        listed = list(dict.fromkeys(samples[host]))
        at = {name: i for i, name in enumerate(listed)}
        frames = []
        for rows, codes, names in caps:
            position = np.array([at.get(name, -1) for name in names], dtype=np.int64)
            frames.append(rows.assign(sample=position[codes]))
        out[host] = Tasks(pd.concat(frames, ignore_index=True), listed, totals.get(host, {}))
    return out


def per_sample(rows: pd.DataFrame, by: str, col: str, samples: list[str]) -> pd.DataFrame:
    """`col` summed per `by` and interval, an interval where a task printed no row counted as 0:
    iotop -o and pidstat list only tasks that did something, so absence means idle, not unknown.
    One column per value of `by`: for a few values (programs, tools), not for tasks."""
    listed = rows[rows["sample"] >= 0]
    table = listed.pivot_table(index="sample", columns=by, values=col, aggfunc="sum", fill_value=0.0)
    return table.reindex(range(len(samples)), fill_value=0.0).fillna(0.0)


def task_means(rows: pd.DataFrame, by: str, col: str, samples: list[str]) -> pd.Series:
    """`per_sample(...).mean()` without its intervals x tasks table, which a day of short-lived
    tasks would not fit in memory: the sum over the listed intervals divided by their number."""
    values = rows[col].where(rows["sample"] >= 0, 0.0)
    return values.groupby(rows[by], observed=True).sum() / len(samples)


def top_writer(ds: Dataset, sweep: Any, th: Thresholds) -> list[Finding] | Skipped:
    """The programs (and threads) doing most of the write and read bandwidth, from iotop or pidstat -d.

    Info: who writes is context for every disk finding. A warning when the top writer is not the
    database (journal thread, logger, backup, a capture tool): it competes with the database for
    the device, or says the database's writes cost more than their own bytes.
    """
    iotop = tasks(ds, "iotop")
    # pidstat -d is the fallback for hosts without iotop intervals: on a day of captures its task
    # rows are millions, so they are built only when some host needs them
    fallback = {c.host for c in ds.of("pidstat")} - {h for h, t in iotop.items() if t.samples}
    pidstat = tasks(ds, "pidstat") if fallback else {}
    if not iotop and not pidstat:
        return Skipped("io.top-writer", "no iotop or pidstat capture")
    lim = th["io.top-writer"]
    out = []
    for host in sorted(set(iotop) | set(pidstat), key=str):
        t = iotop.get(host)
        if (t is None or not t.samples) and host in pidstat:
            t = pidstat[host]
        if t is None:
            continue
        if t.rows["write_kb_s"].notna().sum() == 0 and t.rows["read_kb_s"].notna().sum() == 0:
            continue  # pidstat without -d
        f = _host_writers(t, host, lim)
        if f is not None:
            out.append(f)
    return out


def _host_writers(t: Tasks, host: str | None, lim: dict[str, Any]) -> Finding | None:
    rows, samples, totals = t.rows, t.samples, t.totals
    n = len(samples)
    write = per_sample(rows, "program", "write_kb_s", samples)
    read = per_sample(rows, "program", "read_kb_s", samples)
    tot_w = [totals.get(s, {}).get("total_write_kb_s") for s in samples]
    tot_r = [totals.get(s, {}).get("total_read_kb_s") for s in samples]
    # iotop's Total line is what all tasks did (the listed rows may omit some): the denominator
    # when every interval printed it; else the sum of the rows.
    total_w = float(np.sum(tot_w)) if totals and None not in tot_w else float(write.to_numpy().sum())
    total_r = float(np.sum(tot_r)) if totals and None not in tot_r else float(read.to_numpy().sum())
    if total_w / n < lim["min_total_write_kb_s"] and total_r / n < lim["min_total_read_kb_s"]:
        return None
    sources = "; ".join(rows["source"].unique())
    ev: dict[str, Any] = {
        "source": sources,
        "intervals": n,
        "total_write_kb_s_mean": total_w / n,
        "total_read_kb_s_mean": total_r / n,
    }
    actual = [totals.get(s, {}).get("actual_write_kb_s") for s in samples]
    if totals and None not in actual:
        ev["device_write_kb_s_mean"] = float(np.mean(actual))
        actual_r = [totals.get(s, {}).get("actual_read_kb_s") for s in samples]
        if None not in actual_r:
            ev["device_read_kb_s_mean"] = float(np.mean(actual_r))
    ranked = write.sum().sort_values(ascending=False, kind="stable")
    writers = [p for p in ranked.index if ranked[p] > 0][: int(lim["top_n"])]
    for i, prog in enumerate(writers, 1):
        col = write[prog]
        ev[f"writer{i}"] = prog
        ev[f"writer{i}_category"] = category(prog)
        ev[f"writer{i}_write_kb_s_mean"] = float(col.mean())
        ev[f"writer{i}_write_kb_s_median"] = float(col.median())
        ev[f"writer{i}_write_share_pct"] = float(col.sum() / total_w * 100) if total_w else float("nan")
    if writers:
        threads = task_means(rows[rows["program"] == writers[0]], "task", "write_kb_s", samples)
        threads = threads[threads > 0].sort_values(ascending=False, kind="stable").head(int(lim["top_n"]))
        ev["writer1_tasks"] = ", ".join(f"{t} ({v:.1f} KiB/s)" for t, v in threads.items())
    ranked_r = read.sum().sort_values(ascending=False, kind="stable")
    if len(ranked_r) and ranked_r.iloc[0] > 0 and total_r / n >= lim["min_total_read_kb_s"]:
        prog = ranked_r.index[0]
        ev["reader1"] = prog
        ev["reader1_read_kb_s_mean"] = float(read[prog].mean())
        ev["reader1_read_share_pct"] = float(read[prog].sum() / total_r * 100) if total_r else float("nan")
    waits = rows.dropna(subset=["io_pct"])
    if len(waits):
        # per task: the share of the whole capture it spent waiting (absent intervals: not waiting)
        io = task_means(waits, "task", "io_pct", samples)
        top_task = io.sort_values(ascending=False, kind="stable").index[0]
        ev["io_wait_top_task"] = top_task
        ev["io_wait_top_pct_mean"] = float(io[top_task])
    wait = ""
    if "io_wait_top_task" in ev and ev["io_wait_top_pct_mean"] >= lim["min_io_wait_pct"]:
        wait = f"; {ev['io_wait_top_task']} waited on IO {ev['io_wait_top_pct_mean']:.0f}% of the time"
    if writers and total_w / n >= lim["min_total_write_kb_s"]:
        top, share = writers[0], ev["writer1_write_share_pct"]
        cat = category(top)
        # a share of next to nothing is nothing: a writer no disk would notice never warns
        warn = (
            cat in NOT_DATABASE
            and share >= lim["min_share_pct"]
            and ev["writer1_write_kb_s_mean"] >= lim["min_warn_write_kb_s"]
        )
        title = f"Top writer: {top} ({cat}), {share:.0f}% of the write bandwidth"
        summary = (
            f"{top} ({cat}) wrote {ev['writer1_write_kb_s_mean']:.0f} KiB/s on average, {share:.0f}% of "
            f"the {total_w / n:.0f} KiB/s all tasks wrote over {n} interval(s){wait}."
        )
    elif "reader1" in ev:  # a read-mostly load: name the reader, writes are below the bar
        top, share, warn = ev["reader1"], ev["reader1_read_share_pct"], False
        title = f"Top reader: {top} ({category(top)}), {share:.0f}% of the read bandwidth"
        summary = (
            f"{top} ({category(top)}) read {ev['reader1_read_kb_s_mean']:.0f} KiB/s on average, "
            f"{share:.0f}% of the {total_r / n:.0f} KiB/s all tasks read over {n} interval(s); writes "
            f"stayed under {lim['min_total_write_kb_s']} KiB/s{wait}."
        )
    else:
        return None
    return Finding(
        rule="io.top-writer",
        severity="warning" if warn else "info",
        hosts=[host] if host else [],
        window=_window(rows["timestamp"]),
        title=title,
        summary=summary,
        evidence=ev,
        explanation=(
            "iotop and pidstat -d charge each task the bytes it dirtied or read from storage, so they "
            "name who loads the disk where iostat only shows that it is loaded. The database doing "
            "most of the writing is expected. A journal thread (jbd2, xfsaild) near the top, or with "
            "a high IO%, means many small synchronous commits: every fsync forces a journal commit "
            "and they queue behind each other (seed 000: jbd2/sda2-8 at 42% IO wait). A logger, a "
            "backup or a profiler (seed 000: perf record --call-graph=dwarf writing 2 MB/s) doing "
            "most of the writing takes the device from the database and distorts the test. Total is "
            "what tasks wrote into the page cache; the device figure (iotop's Actual/Current) is what "
            "reached the disk in the interval."
        ),
        next_steps=[
            f"Check what {top} writes: pidstat -d -t -p <pid> 1, ls -l /proc/<pid>/fd, and "
            "lsof -p <pid> for the files.",
            "A capture tool or logger: stop it or move its output to another device (perf record -o "
            "/other/disk, --call-graph=fp instead of dwarf, lower -F); a backup: reschedule it.",
            "jbd2 busy: group commits (innodb_flush_log_at_trx_commit, sync_binlog, TiKV "
            "raftstore batching), or put the log on a faster device; check the mount options "
            "(data=ordered, commit=, barrier) with findmnt.",
        ],
    )


RULES = {"io.top-writer": top_writer}
