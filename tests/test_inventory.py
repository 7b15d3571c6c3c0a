"""perfkit.config.load_inventory: perfkit's inventory format and TiUP topology files.

Covers the two example files in configs/, TiUP role merging, the precedence rule (host > file
defaults > command line), and refusal of hostile, secret, unknown, duplicate and broken input.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from perfkit.config import InventoryHost, load_inventory
from perfkit.errors import ConfigError

CONFIGS = Path(__file__).resolve().parent.parent / "configs"


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A HOME holding the two keys configs/hosts.yaml names, so the example loads anywhere."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    for name in ("id_ed25519_perf", "id_ed25519_tidb"):
        (home / ".ssh" / name).write_text("not a real key\n")
    monkeypatch.setenv("HOME", str(home))
    return home


def write(tmp_path: Path, text: str, name: str = "inv.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def by_name(hosts: list[InventoryHost]) -> dict[str, InventoryHost]:
    return {h.name: h for h in hosts}


# --------------------------------------------------------------------------- example files


def test_example_inventory_loads(home):
    hosts = load_inventory(CONFIGS / "hosts.yaml")
    assert [h.name for h in hosts] == ["10.0.1.20", "10.0.1.21:2222", "tikv-1", "tikv-2", "tidb-1", "loadgen"]
    h = by_name(hosts)
    # string entries: defaults apply, the string's own user/port win
    assert (h["10.0.1.20"].spec.user, h["10.0.1.20"].spec.port) == ("perf", None)
    assert (h["10.0.1.21:2222"].spec.user, h["10.0.1.21:2222"].spec.port) == ("admin", 2222)
    assert h["10.0.1.20"].roles == ()
    # mappings
    assert h["tikv-1"].spec.hostname == "10.0.1.11"
    assert h["tikv-1"].roles == ("tikv",)
    assert h["tikv-1"].labels == {"cluster": "bench-a", "dc": "a", "rack": "r1"}
    assert h["tikv-2"].roles == ("tikv", "pd")
    assert h["tikv-2"].labels == {"cluster": "bench-a", "dc": "b"}
    tidb = h["tidb-1"].spec
    assert (tidb.hostname, tidb.user, tidb.port) == ("10.0.1.13", "tidb", 2222)
    assert tidb.key_filename == "~/.ssh/id_ed25519_tidb"
    assert tidb.connect_timeout == 5.0
    assert h["loadgen"].spec.hostname == "bench-client"
    assert h["loadgen"].spec.key_filename == "~/.ssh/id_ed25519_perf"
    assert h["loadgen"].spec.connect_timeout == 10.0
    assert all(not x.spec.accept_new_host_key for x in hosts)


def test_example_tiup_topology_loads():
    hosts = load_inventory(CONFIGS / "tiup-topology.yaml", key_filename="/keys/tiup_id_rsa")
    h = by_name(hosts)
    assert list(h) == [
        "10.0.1.11",
        "10.0.1.12",
        "10.0.1.13",
        "10.0.1.14",
        "10.0.1.15",
        "10.0.1.16",
        "10.0.1.10",
    ]
    assert all(x.spec.user == "tidb" for x in hosts)
    assert all(x.spec.key_filename == "/keys/tiup_id_rsa" for x in hosts)
    assert h["10.0.1.11"].roles == ("pd", "tikv")
    assert h["10.0.1.11"].spec.port == 22
    assert h["10.0.1.11"].labels == {
        "pd_client_port": "2379",
        "pd_peer_port": "2380",
        "tikv_port": "20160",
        "tikv_status_port": "20180",
    }
    assert h["10.0.1.13"].labels == {"pd_client_port": "2381", "pd_peer_port": "2382"}
    # two TiDB instances on one machine: one host, ports comma-joined in file order
    assert h["10.0.1.14"].roles == ("tidb",)
    assert h["10.0.1.14"].labels == {"tidb_port": "4000,4001", "tidb_status_port": "10080,10081"}
    assert (h["10.0.1.15"].spec.port, h["10.0.1.15"].roles) == (2222, ("tikv",))
    assert h["10.0.1.16"].roles == ("tiflash", "cdc")
    assert h["10.0.1.16"].labels["cdc_port"] == "8300"
    assert h["10.0.1.10"].roles == ("monitoring", "grafana", "alertmanager")
    assert h["10.0.1.10"].labels == {
        "monitoring_port": "9090",
        "grafana_port": "3000",
        "alertmanager_web_port": "9093",
    }


def test_record_has_no_key_paths(home):
    rec = by_name(load_inventory(CONFIGS / "hosts.yaml"))["tidb-1"].record()
    assert rec == {
        "name": "tidb-1",
        "hostname": "10.0.1.13",
        "port": 2222,
        "user": "tidb",
        "roles": ["tidb"],
        "labels": {"cluster": "bench-a"},
    }


def test_inventory_host_is_hashable(home):
    hosts = load_inventory(CONFIGS / "hosts.yaml")
    assert len(set(hosts)) == len(hosts)


# --------------------------------------------------------------------------- TiUP merging


def test_tiup_merges_roles_and_splits_ssh_ports(tmp_path):
    path = write(
        tmp_path,
        """\
        global:
          user: deploy
          ssh_port: 2200
        pd_servers:
          - host: 127.0.0.1
        tikv_servers:
          - host: 127.0.0.1
            status_port: 20181
          - host: 127.0.0.1
            ssh_port: 2201
          - host: 127.0.0.2
        tidb_servers:
          - host: 127.0.0.2
        cdc_servers:
        """,
    )
    hosts = load_inventory(path)
    assert [(h.name, h.spec.hostname, h.spec.port, h.spec.user, h.roles) for h in hosts] == [
        ("127.0.0.1:2200", "127.0.0.1", 2200, "deploy", ("pd", "tikv")),
        ("127.0.0.1:2201", "127.0.0.1", 2201, "deploy", ("tikv",)),
        ("127.0.0.2", "127.0.0.2", 2200, "deploy", ("tikv", "tidb")),
    ]
    assert hosts[0].labels["tikv_status_port"] == "20181"
    assert hosts[0].labels["pd_client_port"] == "2379"
    assert hosts[2].labels["tidb_status_port"] == "10080"


def test_tiup_defaults_and_ignored_keys(tmp_path):
    path = write(
        tmp_path,
        """\
        some_future_section: {whatever: 1}
        tikv_servers:
          - host: 10.0.0.5
            a_key_tiup_adds_next_year: true
        """,
    )
    (h,) = load_inventory(path, ssh_config="/cli/ssh_config", accept_new_host_key=True)
    assert (h.name, h.spec.user, h.spec.port, h.roles) == ("10.0.0.5", "tidb", 22, ("tikv",))
    assert h.spec.ssh_config == "/cli/ssh_config"
    assert h.spec.accept_new_host_key is True


def test_tiup_ipv6_host_with_two_ssh_ports(tmp_path):
    path = write(
        tmp_path,
        """\
        tikv_servers:
          - host: "fd00::1"
          - host: "fd00::1"
            ssh_port: 2222
        """,
    )
    assert [h.name for h in load_inventory(path)] == ["[fd00::1]:22", "[fd00::1]:2222"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("tikv_servers:\n  - host: '10.0.0.1;reboot'\n", "tikv_servers[0]"),
        ("tikv_servers:\n  - port: 20160\n", "'host' is missing"),
        ("tikv_servers:\n  - host: 10.0.0.1\n    ssh_port: 70000\n", "1-65535"),
        ("tikv_servers:\n  - host: 10.0.0.1\n    status_port: abc\n", "status_port"),
        ("global:\n  user: 'tidb;id'\ntikv_servers:\n  - host: 10.0.0.1\n", "invalid user name"),
        ("tikv_servers: 10.0.0.1\n", "expected a list"),
        ("tikv_servers: []\npd_servers:\n", "no hosts"),
        ("hosts: [10.0.0.1]\ntikv_servers:\n  - host: 10.0.0.2\n", "one format per file"),
    ],
)
def test_tiup_refuses(tmp_path, body, message):
    path = write(tmp_path, body, "topology.yaml")
    with pytest.raises(ConfigError, match="topology.yaml") as exc:
        load_inventory(path)
    assert message in str(exc.value)


# --------------------------------------------------------------------------- precedence


def test_precedence_host_over_defaults_over_cli(tmp_path):
    (tmp_path / "file_key").write_text("x")
    (tmp_path / "host_key").write_text("x")
    path = write(
        tmp_path,
        """\
        defaults:
          user: fileuser
          port: 2022
          identity_file: file_key
          known_hosts: file_known_hosts
        hosts:
          - plain.example
          - cliuser@withuser.example:2200
          - host: override.example
            user: hostuser
            port: 2023
            key_filename: host_key
        """,
    )
    hosts = by_name(
        load_inventory(path, key_filename="/cli/key", known_hosts="/cli/kh", ssh_config="/cli/cfg")
    )
    plain = hosts["plain.example"].spec
    assert (plain.user, plain.port) == ("fileuser", 2022)
    assert plain.key_filename == str(tmp_path / "file_key")  # relative to the inventory file
    assert plain.known_hosts == str(tmp_path / "file_known_hosts")
    assert plain.ssh_config == "/cli/cfg"  # the file says nothing: the command line applies
    written = hosts["withuser.example:2200"].spec
    assert (written.user, written.port) == ("cliuser", 2200)
    over = hosts["override.example"].spec
    assert (over.user, over.port, over.key_filename) == ("hostuser", 2023, str(tmp_path / "host_key"))


def test_cli_values_apply_when_file_has_no_defaults(tmp_path):
    path = write(tmp_path, "hosts:\n  - db1\n")
    (h,) = load_inventory(path, key_filename="/cli/key", known_hosts="/cli/kh", accept_new_host_key=True)
    assert (h.spec.key_filename, h.spec.known_hosts, h.spec.accept_new_host_key) == (
        "/cli/key",
        "/cli/kh",
        True,
    )
    assert (h.spec.user, h.spec.port) == (None, None)  # left to the ssh config


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    "entry",
    [
        "'10.0.0.1;reboot'",
        "'$(id)'",
        "'a b'",
        "'`id`'",
        "'-oProxyCommand=id'",
        "'root@10.0.0.1:0'",
        "{host: '10.0.0.1;reboot'}",
        "{host: '$(id)'}",
        "{host: 'a b'}",
        "{host: 10.0.0.1, user: 'root;id'}",
        "{host: 10.0.0.1, name: '../../etc'}",
        "{host: 10.0.0.1, name: 'a/b'}",
        "{host: 10.0.0.1, port: 65536}",
        "{host: 10.0.0.1, port: '22'}",
        "{host: 10.0.0.1, roles: ['tikv;id']}",
        "{host: 'root@10.0.0.1'}",
    ],
)
def test_hostile_or_malformed_entries_refused(tmp_path, entry):
    path = write(tmp_path, f"hosts:\n  - {entry}\n", "hostile.yaml")
    with pytest.raises(ConfigError, match=r"hostile\.yaml: hosts\[0\]"):
        load_inventory(path)


@pytest.mark.parametrize(
    "body",
    [
        "hosts:\n  - {host: db1, password: hunter2}\n",
        "hosts:\n  - {host: db1, ssh_password: hunter2}\n",
        "defaults:\n  passwd: hunter2\nhosts: [db1]\n",
        "password: hunter2\nhosts: [db1]\n",
        "hosts:\n  - 'root:hunter2@db1'\n",
        "hosts:\n  - {host: 'root:hunter2@db1'}\n",
        "global:\n  password: hunter2\ntikv_servers:\n  - host: db1\n",
    ],
)
def test_passwords_refused_without_echoing_them(tmp_path, body):
    path = write(tmp_path, body)
    with pytest.raises(ConfigError, match="keys or ssh-agent only") as exc:
        load_inventory(path)
    assert "hunter2" not in str(exc.value)
    assert str(path) in str(exc.value)


def test_unknown_key_refused_with_a_hint(tmp_path):
    path = write(tmp_path, "hosts:\n  - {host: db1, indentity_file: ~/.ssh/id}\n")
    with pytest.raises(ConfigError, match=r"hosts\[0\].*'indentity_file' \(did you mean 'identity_file'\?\)"):
        load_inventory(path)
    path = write(tmp_path, "defaults:\n  usr: me\nhosts: [db1]\n")
    with pytest.raises(ConfigError, match=r"defaults: unknown key\(s\) 'usr'"):
        load_inventory(path)
    path = write(tmp_path, "hostz: [db1]\n")
    with pytest.raises(ConfigError, match="hostz"):
        load_inventory(path)


def test_accept_new_host_key_is_command_line_only(tmp_path):
    path = write(tmp_path, "defaults:\n  accept_new_host_key: true\nhosts: [db1]\n")
    with pytest.raises(ConfigError, match="--accept-new-host-key"):
        load_inventory(path)


@pytest.mark.parametrize(
    "hosts",
    [
        "[db1, db1]",
        "[db1, root@db1]",  # same name: the user is not part of it
        "[{host: db1, name: x}, {host: db2, name: x}]",
        "[{host: db2, name: db1}, db1]",
    ],
)
def test_duplicate_names_refused(tmp_path, hosts):
    path = write(tmp_path, f"hosts: {hosts}\n")
    with pytest.raises(ConfigError, match=r"inv\.yaml: host name '(db1|x)' appears twice"):
        load_inventory(path)


def test_same_machine_twice_with_distinct_names_is_allowed(tmp_path):
    path = write(tmp_path, "hosts: [db1:22, db1:2222]\n")
    assert [(h.name, h.spec.port) for h in load_inventory(path)] == [("db1:22", 22), ("db1:2222", 2222)]


def test_bad_yaml_reports_the_line(tmp_path):
    path = write(tmp_path, "hosts:\n  - db1\n  - host: db2\n     user: x\n")
    with pytest.raises(ConfigError, match=r"inv\.yaml: line 4, column 10: invalid YAML: mapping values"):
        load_inventory(path)


def test_duplicate_yaml_key_reports_the_line(tmp_path):
    path = write(tmp_path, "hosts:\n  - host: db1\n    user: a\n    user: b\n")
    with pytest.raises(ConfigError, match=r"inv\.yaml: line 4, .*'user' given twice"):
        load_inventory(path)


def test_yaml_merge_keys_still_work(tmp_path):
    path = write(
        tmp_path,
        """\
        hosts:
          - &base {host: db1, user: a, roles: [tikv]}
          - {<<: *base, host: db2, name: db2}
        """,
    )
    assert [(h.name, h.spec.user, h.roles) for h in load_inventory(path)] == [
        ("db1", "a", ("tikv",)),
        ("db2", "a", ("tikv",)),
    ]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("hosts: []\n", "no hosts"),
        ("hosts:\n", "no hosts"),
        ("", "must be a mapping"),
        ("- db1\n", "must be a mapping"),
        ("defaults: {user: me}\n", "no 'hosts:'"),
        ("hosts: db1\n", "expected a list"),
        ("hosts:\n  - {user: me}\n", "'host' is missing"),
        ("hosts:\n  - {host: 1.5}\n", "expected a string"),
        ("hosts:\n  - {host: db1, identity_file: missing_key}\n", "no such file"),
        ("hosts:\n  - {host: db1, connect_timeout: 0}\n", "connect_timeout"),
        ("hosts:\n  - {host: db1, labels: {dc: [a, b]}}\n", "labels.dc"),
        ("hosts:\n  - {host: db1, identity_file: a, key_filename: b}\n", "not both"),
    ],
)
def test_other_invalid_inventories(tmp_path, body, message):
    path = write(tmp_path, body)
    with pytest.raises(ConfigError, match=r"inv\.yaml") as exc:
        load_inventory(path)
    assert message in str(exc.value)


def test_unreadable_file(tmp_path):
    with pytest.raises(ConfigError, match="nope.yaml: cannot read inventory"):
        load_inventory(tmp_path / "nope.yaml")
