"""Configuration files: rule thresholds (package defaults, overridden by the user's YAML) and host
inventories (perfkit's own format, or a TiUP topology.yaml)."""

from __future__ import annotations

import difflib
import math
import re
import zoneinfo
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from perfkit.errors import ConfigError

if TYPE_CHECKING:  # perfkit.transport imports paramiko: keep it out of `perfkit analyze`'s imports
    from perfkit.transport import HostSpec

Thresholds = dict[str, dict[str, Any]]


def default_thresholds() -> Thresholds:
    """The thresholds shipped with the package (analyzers/thresholds.yaml)."""
    text = resources.files("perfkit.analyzers").joinpath("thresholds.yaml").read_text(encoding="utf-8")
    return yaml.safe_load(text)


def load_thresholds(path: Path | None = None) -> Thresholds:
    """Package defaults, with any value in the YAML file at `path` replacing the default.

    Raises:
        ConfigError: unreadable YAML, or a rule or key the defaults do not have (a typo would
            otherwise be ignored silently), or a value of a different type.
    """
    th = default_thresholds()
    if path is None:
        return th
    try:
        user = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read thresholds: {exc}") from None
    if not isinstance(user, dict):
        raise ConfigError(f"{path}: thresholds must be a mapping of rule id to settings")
    for rule, values in user.items():
        if rule not in th:
            raise ConfigError(f"{path}: unknown rule {rule!r} (known: {', '.join(sorted(th))})")
        if not isinstance(values, dict):
            raise ConfigError(f"{path}: {rule}: expected a mapping of settings")
        for key, value in values.items():
            if key not in th[rule]:
                raise ConfigError(f"{path}: {rule}: unknown setting {key!r} (known: {', '.join(th[rule])})")
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise ConfigError(f"{path}: {rule}.{key}: expected a number, got {value!r}")
            problem = threshold_problem(key, value)
            if problem:
                raise ConfigError(f"{path}: {rule}.{key}: {value!r} {problem}")
            th[rule][key] = value
    return th


# What a threshold may be, told by its name (the names in thresholds.yaml follow one convention).
# A value outside its range would not tighten or loosen a rule but switch it off silently (a
# warm-up fraction of 1.5 drops every interval; a NaN compares false with everything), so it is
# refused. Checked in order; anything else (rates, sizes, ratios, growth) must not be negative.
_COUNTS = re.compile(r"(^|_)(samples|intervals|iterations|hot_threads|n)$")  # whole, at least 1
_SHARE_OF_ONE = re.compile(r"(^|_)(share|fraction)$")  # 0-1
_PERCENT_OF_WHOLE = re.compile(r"(util|idle|capacity|share|steal|wait|tolerance|drop|flat|pressure)_pct$")


def threshold_problem(key: str, value: float) -> str | None:
    """Why `value` cannot be the threshold `key`, or None when it can."""
    if not math.isfinite(value):
        return "is not a finite number"
    if _COUNTS.search(key):
        return None if float(value).is_integer() and value >= 1 else "must be a whole number, at least 1"
    if key == "warmup_fraction":
        return None if 0 <= value < 1 else "must be at least 0 and below 1 (1 would drop every interval)"
    if _SHARE_OF_ONE.search(key):
        return None if 0 <= value <= 1 else "must be a share between 0 and 1"
    if key.endswith("elasticity"):
        return None if 0 <= value <= 1 else "must be an elasticity between 0 and 1 (1.0 = linear scaling)"
    if _PERCENT_OF_WHOLE.search(key):
        return None if 0 <= value <= 100 else "must be a percentage between 0 and 100"
    return None if value >= 0 else "must not be negative"


def time_zone(text: str) -> str:
    """The IANA zone name for `text`: a zone name (any case), UTC, or a whole-hour offset such as
    `+08:00`, `+0800`, `UTC+8` (as `Etc/GMT-8`: the tz database's signs are inverted).

    Raises:
        ConfigError: an abbreviation (CST is China, US Central and Cuba), a typo, or an offset that
            is not a whole number of hours (name the zone: Asia/Kolkata), with suggestions.
    """
    name = text.strip()
    if name.upper() in ("UTC", "Z", "GMT"):
        return "UTC"
    offset = re.fullmatch(r"(?:UTC|GMT)?\s*([+-])(\d{1,2})(?::?(\d{2}))?", name, re.IGNORECASE)
    if offset:
        sign, hours, minutes = offset[1], int(offset[2]), int(offset[3] or 0)
        if minutes or hours > 14:
            raise ConfigError(
                f"time zone {text!r}: only whole-hour offsets up to 14 h can be given as an offset; "
                "name the zone instead (e.g. Asia/Kolkata, Asia/Kathmandu)"
            )
        return "UTC" if hours == 0 else f"Etc/GMT{'-' if sign == '+' else '+'}{hours}"
    zones = zoneinfo.available_timezones()
    if name in zones:
        return name
    by_case = {z.lower(): z for z in zones}
    if name.lower() in by_case:
        return by_case[name.lower()]
    if re.fullmatch(r"[A-Za-z]{2,5}", name):
        raise ConfigError(
            f"time zone {text!r}: abbreviations are ambiguous (CST is China, US Central and Cuba); "
            "name the zone (e.g. Asia/Shanghai, America/Chicago) or give an offset (+08:00)"
        )
    close = difflib.get_close_matches(name, sorted(zones), n=3)
    hint = (
        f"; did you mean {' or '.join(close)}?"
        if close
        else " (an IANA name such as Asia/Shanghai, or +08:00)"
    )
    raise ConfigError(f"unknown time zone {text!r}{hint}")


# --------------------------------------------------------------------------- inventory
#
# Two formats, told apart by their top-level keys (configs/hosts.yaml documents ours):
#
# - perfkit's own: ``defaults:`` and ``hosts:``. Strict: an unknown key is an error, because a
#   typo (``indentity_file``) would otherwise silently change which key or user is used.
# - a TiUP ``topology.yaml``: any ``*_servers`` section (and ``tispark_masters``/``tispark_workers``).
#   Lenient: keys perfkit does not use are ignored, since TiUP has dozens and adds more.
#
# Precedence for every SSH setting: the host's own value > the file's ``defaults:`` (TiUP: ``global:``)
# > the keyword arguments of `load_inventory` (what the command line gave). ``accept_new_host_key``
# comes only from the command line: trusting unknown keys is the user's explicit choice per run.

_PASSWORD_HINT = "perfkit logs in with SSH keys or ssh-agent only; remove it (it is never used)"
_SECRET_KEYS = frozenset({"password", "passwd", "pwd", "pass", "passphrase", "ssh_pass", "ssh_password"})
_USER_RE = re.compile(r"[A-Za-z0-9._][A-Za-z0-9._-]*")  # the same allow-list as perfkit.transport
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@\[\]-]*")  # a host's name becomes a directory name
_ROLE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_LABEL_KEY_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_MAX_TIMEOUT_S = 3600.0

_TIMEOUT_KEYS = ("connect_timeout", "banner_timeout", "auth_timeout", "channel_timeout")
_SSH_KEYS = ("user", "port", "identity_file", "key_filename", "known_hosts", "ssh_config", *_TIMEOUT_KEYS)
_DEFAULTS_KEYS = frozenset(_SSH_KEYS + ("labels",))
_HOST_KEYS = frozenset(_SSH_KEYS + ("name", "host", "roles", "labels"))
_TOP_KEYS = frozenset({"defaults", "hosts"})
_PATH_KEYS = ("key_filename", "known_hosts", "ssh_config")
_MUST_EXIST = ("key_filename", "ssh_config")  # known_hosts may be created by --accept-new-host-key

# TiUP instance ports worth keeping (label name, TiUP key, TiUP default): status ports are where
# pprof and metrics live (tidb :10080/debug/pprof, tikv :20180/debug/pprof/profile, pd :2379).
_TIUP_PORTS: dict[str, tuple[tuple[str, str, int], ...]] = {
    "pd": (("pd_client_port", "client_port", 2379), ("pd_peer_port", "peer_port", 2380)),
    "tidb": (("tidb_port", "port", 4000), ("tidb_status_port", "status_port", 10080)),
    "tikv": (("tikv_port", "port", 20160), ("tikv_status_port", "status_port", 20180)),
    "tiflash": (
        ("tiflash_tcp_port", "tcp_port", 9000),
        ("tiflash_metrics_port", "metrics_port", 8234),
        ("tiflash_proxy_status_port", "flash_proxy_status_port", 20292),
    ),
    "tiproxy": (("tiproxy_port", "port", 6000),),
    "pump": (("pump_port", "port", 8250),),
    "drainer": (("drainer_port", "port", 8249),),
    "cdc": (("cdc_port", "port", 8300),),
    "monitoring": (("monitoring_port", "port", 9090),),
    "grafana": (("grafana_port", "port", 3000),),
    "alertmanager": (("alertmanager_web_port", "web_port", 9093),),
}
_TIUP_EXTRA_SECTIONS = {"tispark_masters": "tispark_master", "tispark_workers": "tispark_worker"}


LOAD_ROLE = "client"  # an inventory host's role that makes it a load host of `perfkit run`


@dataclass(frozen=True)
class InventoryHost:
    """One machine to collect from: how to reach it, what runs there, and free-form labels.

    ``spec.name`` is unique within an inventory (it names the host's directory in the archive).
    ``roles`` keep the file's order (TiUP: section order, e.g. ``("pd", "tikv")``). ``labels`` are
    strings; from a TiUP topology they carry instance ports, comma-joined when several instances
    share the machine (``tikv_status_port: "20180,20181"``).
    """

    spec: HostSpec
    roles: tuple[str, ...] = ()
    labels: dict[str, str] = field(default_factory=dict, hash=False)

    @property
    def name(self) -> str:
        return self.spec.name

    def record(self) -> dict[str, Any]:
        """What the manifest keeps of this host: where and what, no key paths, no secrets."""
        return {
            "name": self.spec.name,
            "hostname": self.spec.hostname,
            "port": self.spec.port,
            "user": self.spec.user,
            "roles": list(self.roles),
            "labels": dict(self.labels),
        }


def load_inventory(
    path: Path,
    *,
    ssh_config: str | None = None,
    known_hosts: str | None = None,
    key_filename: str | None = None,
    accept_new_host_key: bool = False,
) -> list[InventoryHost]:
    """Read a perfkit inventory (``defaults:``/``hosts:``) or a TiUP ``topology.yaml``.

    Args:
        path: the YAML file. Relative key, known_hosts and ssh_config paths inside it are taken
            relative to the file's directory (``~`` is expanded when connecting).
        ssh_config, known_hosts, key_filename: the command line's values; the lowest precedence
            (a host's own value > the file's ``defaults:``/``global:`` > these).
        accept_new_host_key: the command line's opt-in, applied to every host; a file cannot set it.

    Returns:
        The hosts in file order (TiUP: order of first appearance), one per machine.

    Raises:
        ConfigError: naming the file and the entry: unreadable YAML (with its line), a duplicate
            YAML key, an unknown key (perfkit format), a password, a host/user/name outside the
            allow-list, a port outside 1-65535, a duplicate host name, or no host at all.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read inventory: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: {_yaml_error(exc)}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: an inventory must be a mapping with a 'hosts:' list (or a TiUP topology)")
    cli = {
        "ssh_config": ssh_config,
        "known_hosts": known_hosts,
        "key_filename": key_filename,
        "accept_new_host_key": accept_new_host_key,
    }
    cli = {k: v for k, v in cli.items() if v}
    tiup_sections = [k for k in data if _tiup_role(k)]
    if tiup_sections:
        stray = sorted(set(data) & _TOP_KEYS)
        if stray:
            raise ConfigError(
                f"{path}: mixes TiUP sections ({', '.join(tiup_sections)}) with perfkit keys "
                f"({', '.join(stray)}); use one format per file"
            )
        hosts = _load_tiup(path, data, cli)
    else:
        hosts = _load_perfkit(path, data, cli)
    if not hosts:
        raise ConfigError(f"{path}: the inventory lists no hosts")
    seen: dict[str, int] = {}
    for i, h in enumerate(hosts):
        if h.name in seen:
            raise ConfigError(
                f"{path}: host name {h.name!r} appears twice (entries {seen[h.name] + 1} and {i + 1}); "
                "give one of them a distinct 'name:'"
            )
        seen[h.name] = i
    return hosts


def _parse_host(text: str, **opts: Any) -> HostSpec:
    from perfkit.transport import parse_host

    return parse_host(text, **opts)


# ---- YAML


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping (PyYAML keeps the last silently)."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: set = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            duplicate = key in seen
        except TypeError:
            continue  # unhashable key: construct_mapping reports it
        if duplicate:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping",
                node.start_mark,
                f"key {key!r} given twice",
                key_node.start_mark,
            )
        seen.add(key)
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _yaml_error(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    what = f"{context}: {problem}" if context and problem else problem
    if mark is not None:
        return f"line {mark.line + 1}, column {mark.column + 1}: invalid YAML: {what}"
    return f"invalid YAML: {what}"


# ---- perfkit format


def _load_perfkit(path: Path, data: dict, cli: dict[str, Any]) -> list[InventoryHost]:
    _check_keys(path, "top level", data, _TOP_KEYS)
    if "hosts" not in data:
        raise ConfigError(
            f"{path}: no 'hosts:' list (a perfkit inventory) and no '*_servers:' section (a TiUP topology)"
        )
    raw_defaults = data.get("defaults") or {}
    if not isinstance(raw_defaults, dict):
        raise ConfigError(f"{path}: defaults: expected a mapping")
    _check_keys(path, "defaults", raw_defaults, _DEFAULTS_KEYS)
    file_defaults = _ssh_options(path, "defaults", raw_defaults)
    default_labels = _labels(path, "defaults", raw_defaults.get("labels"))
    entries = data["hosts"]
    if entries is None:
        entries = []
    if not isinstance(entries, list):
        raise ConfigError(f"{path}: hosts: expected a list of hosts")
    hosts = []
    for i, entry in enumerate(entries):
        where = f"hosts[{i}]"
        if isinstance(entry, str):
            _refuse_userinfo_password(path, where, entry)
            opts = {**cli, **file_defaults}
            hosts.append(InventoryHost(_spec(path, where, entry, opts), (), dict(default_labels)))
            continue
        if not isinstance(entry, dict):
            raise ConfigError(f"{path}: {where}: expected 'user@host:port' or a mapping, got {entry!r}")
        _check_keys(path, where, entry, _HOST_KEYS)
        if "host" not in entry:
            raise ConfigError(f"{path}: {where}: 'host' is missing")
        host = entry["host"]
        if not isinstance(host, str):
            raise ConfigError(f"{path}: {where}: host: expected a string, got {host!r} (quote it)")
        _refuse_userinfo_password(path, where, host)
        try:
            bare = _parse_host(host)
        except ConfigError as exc:
            raise ConfigError(f"{path}: {where}: {exc}") from None
        where = f"hosts[{i}] ({host!r})"
        if bare.user is not None or bare.port is not None:
            raise ConfigError(
                f"{path}: {where}: write the user and port as 'user:' and 'port:', not in 'host:'"
            )
        opts = {**cli, **file_defaults, **_ssh_options(path, where, entry)}
        if "name" in entry:
            opts["name"] = _name(path, where, entry["name"])
        roles = _roles(path, where, entry.get("roles"))
        labels = {**default_labels, **_labels(path, where, entry.get("labels"))}
        hosts.append(InventoryHost(_spec(path, where, host, opts), roles, labels))
    return hosts


def _check_keys(path: Path, where: str, mapping: dict, known: frozenset[str]) -> None:
    for key in mapping:
        if not isinstance(key, str):
            raise ConfigError(f"{path}: {where}: keys must be strings, got {key!r}")
        low = key.lower()
        if low in _SECRET_KEYS or "password" in low or "passwd" in low:
            raise ConfigError(f"{path}: {where}: {key!r} is not accepted: {_PASSWORD_HINT}")
    unknown = sorted(set(mapping) - known)
    if unknown:
        hints = []
        for key in unknown:
            close = difflib.get_close_matches(key, sorted(known), n=1)
            hints.append(f"{key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        if "accept_new_host_key" in unknown:
            hints.append("accept_new_host_key is a command-line choice only (--accept-new-host-key)")
        raise ConfigError(
            f"{path}: {where}: unknown key(s) {', '.join(hints)}; known: {', '.join(sorted(known))}"
        )


def _refuse_userinfo_password(path: Path, where: str, text: str) -> None:
    userinfo, at, _ = text.rpartition("@")
    if at and ":" in userinfo:  # user:password@host - say so without echoing the text
        raise ConfigError(f"{path}: {where}: looks like 'user:password@host': {_PASSWORD_HINT}")


def _ssh_options(path: Path, where: str, mapping: dict) -> dict[str, Any]:
    """HostSpec keyword arguments from the SSH keys present in ``mapping`` (validated)."""
    if "identity_file" in mapping and "key_filename" in mapping:
        raise ConfigError(f"{path}: {where}: give 'identity_file' or 'key_filename', not both")
    opts: dict[str, Any] = {}
    for key, value in mapping.items():
        if key not in _SSH_KEYS or value is None:
            continue
        field_name = "key_filename" if key == "identity_file" else key
        if key == "user":
            opts["user"] = _user(path, where, value)
        elif key == "port":
            opts["port"] = _port(path, f"{where}: port", value)
        elif field_name in _PATH_KEYS:
            opts[field_name] = _file(path, f"{where}: {key}", value, must_exist=field_name in _MUST_EXIST)
        else:
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not 0 < value <= _MAX_TIMEOUT_S
            ):
                raise ConfigError(f"{path}: {where}: {key}: expected seconds in (0, 3600], got {value!r}")
            opts[key] = float(value)
    return opts


def _spec(path: Path, where: str, text: str, opts: dict[str, Any]) -> HostSpec:
    try:
        return _parse_host(text, **opts)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {where}: {exc}") from None


def _user(path: Path, where: str, value: Any) -> str:
    if not isinstance(value, str) or not _USER_RE.fullmatch(value):
        raise ConfigError(
            f"{path}: {where}: user: invalid user name {value!r} (letters, digits and . _ - only)"
        )
    return value


def _port(path: Path, where: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 65536:
        raise ConfigError(f"{path}: {where}: expected a port 1-65535, got {value!r}")
    return value


def _file(path: Path, where: str, value: Any, *, must_exist: bool) -> str:
    if not isinstance(value, str) or not value or "\0" in value or "\n" in value:
        raise ConfigError(f"{path}: {where}: expected a file path, got {value!r}")
    if not value.startswith("~") and not Path(value).is_absolute():
        value = str(path.parent / value)
    if must_exist and not Path(value).expanduser().is_file():
        raise ConfigError(f"{path}: {where}: no such file {value!r}")
    return value


def _name(path: Path, where: str, value: Any) -> str:
    if not isinstance(value, str) or len(value) > 253 or not _NAME_RE.fullmatch(value):
        raise ConfigError(
            f"{path}: {where}: name: invalid name {value!r} "
            "(starts with a letter or digit; letters, digits and . _ - : @ [ ] only)"
        )
    return value


def _roles(path: Path, where: str, value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise ConfigError(f"{path}: {where}: roles: expected a list of names, got {value!r}")
    for role in value:
        if not isinstance(role, str) or not _ROLE_RE.fullmatch(role):
            raise ConfigError(
                f"{path}: {where}: roles: invalid role {role!r} (letters, digits and . _ - only)"
            )
    return tuple(dict.fromkeys(value))


def _labels(path: Path, where: str, value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: {where}: labels: expected a mapping of name to value")
    out = {}
    for key, v in value.items():
        if not isinstance(key, str) or not _LABEL_KEY_RE.fullmatch(key):
            raise ConfigError(f"{path}: {where}: labels: invalid label name {key!r}")
        if isinstance(v, bool):
            v = "true" if v else "false"
        elif isinstance(v, int | float | str):
            v = str(v)
        else:
            raise ConfigError(f"{path}: {where}: labels.{key}: expected a single value, got {v!r}")
        if any(ord(c) < 32 or ord(c) == 127 for c in v):
            raise ConfigError(f"{path}: {where}: labels.{key}: control characters are not allowed")
        out[key] = v
    return out


# ---- TiUP topology


def _tiup_role(key: Any) -> str | None:
    if not isinstance(key, str):
        return None
    if key in _TIUP_EXTRA_SECTIONS:
        return _TIUP_EXTRA_SECTIONS[key]
    if key.endswith("_servers") and len(key) > len("_servers"):
        return key[: -len("_servers")]
    return None


def _load_tiup(path: Path, data: dict, cli: dict[str, Any]) -> list[InventoryHost]:
    """Machines of a TiUP topology: one per (host, ssh_port), roles merged, instance ports as labels.

    SSH user = ``global.user`` (TiUP's deploy user, default ``tidb``); port = the instance's
    ``ssh_port``, else ``global.ssh_port``, else 22. The name is the host, or ``host:ssh_port``
    when the same host appears with several SSH ports.
    """
    glob = data.get("global") or {}
    if not isinstance(glob, dict):
        raise ConfigError(f"{path}: global: expected a mapping")
    for key in glob:
        if isinstance(key, str) and key.lower() in _SECRET_KEYS:
            raise ConfigError(f"{path}: global: {key!r} is not accepted: {_PASSWORD_HINT}")
    user = _user(path, "global", glob.get("user", "tidb"))
    global_port = _port(path, "global: ssh_port", glob.get("ssh_port", 22))
    machines: dict[tuple[str, int], dict[str, Any]] = {}
    for section, servers in data.items():
        role = _tiup_role(section)
        if role is None or servers is None:
            continue
        if not isinstance(servers, list):
            raise ConfigError(f"{path}: {section}: expected a list of instances")
        for i, inst in enumerate(servers):
            where = f"{section}[{i}]"
            if not isinstance(inst, dict):
                raise ConfigError(f"{path}: {where}: expected a mapping with 'host:'")
            host = inst.get("host")
            if not isinstance(host, str) or not host:
                raise ConfigError(f"{path}: {where}: 'host' is missing or not a string")
            try:
                bare = _parse_host(host)
            except ConfigError as exc:
                raise ConfigError(f"{path}: {where}: {exc}") from None
            where = f"{section}[{i}] ({host!r})"
            if bare.user is not None or bare.port is not None:
                raise ConfigError(f"{path}: {where}: 'host' must be an address (use ssh_port for the port)")
            ssh_port = (
                global_port
                if inst.get("ssh_port") is None
                else _port(path, f"{where}: ssh_port", inst["ssh_port"])
            )
            m = machines.setdefault((bare.hostname, ssh_port), {"roles": [], "ports": {}})
            if role not in m["roles"]:
                m["roles"].append(role)
            for label, key, default in _TIUP_PORTS.get(role, ()):
                port = default if inst.get(key) is None else _port(path, f"{where}: {key}", inst[key])
                m["ports"].setdefault(label, []).append(str(port))
    ports_per_host: dict[str, int] = {}
    for host, _ in machines:
        ports_per_host[host] = ports_per_host.get(host, 0) + 1
    hosts = []
    for (host, ssh_port), m in machines.items():
        shown = f"[{host}]" if ":" in host else host
        name = f"{shown}:{ssh_port}" if ports_per_host[host] > 1 else host
        opts = {**cli, "user": user, "port": ssh_port, "name": name}
        spec = _spec(path, f"host {host!r}", host, opts)
        labels = {label: ",".join(values) for label, values in m["ports"].items()}
        hosts.append(InventoryHost(spec, tuple(m["roles"]), labels))
    return hosts
