"""Masking secrets in streams (perfkit/redact.py) and in real captures (collectors/session.py)."""

from __future__ import annotations

import json
import re
import subprocess
import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfkit.collectors import captures, session
from perfkit.errors import ConfigError
from perfkit.redact import MASK, MIN_SECRET_CHARS, Redactor, redact
from perfkit.transport import LOCAL


def stream(chunks: list[bytes], secrets: tuple[str, ...]) -> tuple[bytes, int]:
    r = Redactor(secrets)
    out = b"".join(r.feed(c) for c in chunks) + r.flush()
    return out, r.hits


def chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    bounds = sorted({0, len(data), *(c for c in cuts if c <= len(data))})
    return [data[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


def test_a_secret_split_across_chunks_is_masked() -> None:
    out, hits = stream([b'"mysql.password"="hun', b'ter2"\nnext line hunter', b"2 and hunt"], ("hunter2",))
    assert out == b'"mysql.password"="***"\nnext line *** and hunt'
    assert hits == 2


def test_the_longer_of_two_overlapping_secrets_is_masked_whole() -> None:
    assert redact("pw=pass1234; short=pass", ("pass", "pass1234")) == "pw=***; short=***"


def test_no_secrets_passes_bytes_through_untouched() -> None:
    assert stream([b"a", b"b\x00c"], ()) == (b"ab\x00c", 0)


# issue 14 bug 11: the lab password `mariadb` turned `mariadbd` into `***d` in ps/top/iotop captures
PS = (
    "USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND\n"
    "mysql        812 41.0 12.3 2412345 998812 ?      Ssl  08:01  12:34 /usr/sbin/mariadbd "
    "--basedir=/usr --datadir=/var/lib/mysql --plugin-dir=/usr/lib/mysql/plugin\n"
)
TOP = "    812 mysql     20   0 2412345 998812  23112 S  41.0  12.3  12:34.56 mariadbd\n"
IOTOP = (
    "08:10:19   812 be/4 mysql       0.00 K/s  812.00 K/s  0.00 %  3.12 % mariadbd --datadir=/var/lib/mysql\n"
)


def test_a_capture_naming_mariadbd_is_unchanged_when_the_password_is_mariadb() -> None:
    capture = PS + TOP + IOTOP
    assert redact(capture, ("mariadb",)) == capture
    data = capture.encode()
    assert stream([data[i : i + 1] for i in range(len(data))], ("mariadb",)) == (data, 0)


def test_the_password_mariadb_is_still_masked_where_it_is_the_password() -> None:
    line = "root  901  0.0  0.1  12345  6789 pts/0 S+ 08:02 0:00 mysql -uroot -pmariadb -e select 1\n"
    assert redact(PS + line, ("mariadb",)) == PS + line.replace("-pmariadb", "-p***")
    assert (
        redact("sysbench --mysql-password=mariadb run", ("mariadb",)) == "sysbench --mysql-password=*** run"
    )


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("mysql -pmariadb", "mysql -p***"),
        ("mysql -uroot -pmariadb -h db1", "mysql -uroot -p*** -h db1"),
        ("mysql -Bpmariadb", "mysql -Bp***"),  # an option cluster ending in p
        ("mysql --pmariadb", "mysql --p***"),
        ("'-pmariadb'", "'-p***'"),
        ("--password=mariadb", "--password=***"),
        ("--mysql-password=mariadb --mysql-host=db1", "--mysql-password=*** --mysql-host=db1"),
        ("password: mariadb", "password: ***"),
        ("mysql://u:mariadb@h:3306/db", "mysql://u:***@h:3306/db"),
        ("root:mariadb@tcp(127.0.0.1:4000)/test", "root:***@tcp(127.0.0.1:4000)/test"),
        ('"mysql.password"="mariadb"', '"mysql.password"="***"'),
        ("mysql.password = mariadb", "mysql.password = ***"),
        ("go-tpc tpcc -p mariadb --warehouses 1", "go-tpc tpcc -p *** --warehouses 1"),
        ("IDENTIFIED BY 'mariadb';", "IDENTIFIED BY '***';"),
        ("mariadb\nmariadb", "***\n***"),  # the start and the end of the text, of a line
        ("pw=mariadb.\n", "pw=***.\n"),  # a joiner with no name after it ends the name
        ("pw=mariadb-", "pw=***-"),
        ("MYSQL_PWD=mariadb\x00next", "MYSQL_PWD=***\x00next"),  # /proc/*/environ, cmdline
        ("pw=mariadb\u00e9", "pw=***\u00e9"),  # non-ASCII separates: a doubt masks
        ("mariadb client: mariadb -uroot", "*** client: *** -uroot"),  # the token is the secret
        ("/var/lib/mariadb/ibdata1", "/var/lib/***/ibdata1"),
    ],
)
def test_a_standalone_or_option_glued_secret_is_masked(text: str, masked: str) -> None:
    assert redact(text, ("mariadb",)) == masked
    data = text.encode()
    for cut in range(len(data) + 1):  # every split into two chunks, and byte by byte
        assert stream([data[:cut], data[cut:]], ("mariadb",))[0] == masked.encode()
    assert stream([data[i : i + 1] for i in range(len(data))], ("mariadb",))[0] == masked.encode()


@pytest.mark.parametrize(
    "text",
    [
        "mariadbd",
        "/usr/sbin/mariadbd --datadir=/var/lib/mysql",
        "mariadb_1",
        "libmariadb.so.3",
        "/usr/lib/x86_64-linux-gnu/libmariadb.so.3",
        "mariadb-admin ping",
        "mariadb-dump --all-databases",
        "systemctl status mariadb.service",
        "/etc/mysql/mariadb.conf.d/50-server.cnf",
        "x-pmariadb",  # no option: the `-` joins x and p into one name
        "-abcdefghimariadb",  # nine letters: no option cluster
        "MariaDB 10.11",  # not the exact bytes
        "-pmariadbd",  # the password given there is `mariadbd`, not ours
    ],
)
def test_a_word_that_contains_the_secret_is_unchanged(text: str) -> None:
    assert redact(text, ("mariadb",)) == text
    data = text.encode()
    for cut in range(len(data) + 1):
        assert stream([data[:cut], data[cut:]], ("mariadb",)) == (data, 0)


def test_a_secret_with_separators_at_its_ends_is_masked_on_that_side() -> None:
    # its first and last bytes are no name characters: nothing glued to them makes a longer word
    assert redact("a!x9#b and !x9#", ("!x9#",)) == "a***b and ***"
    # starting with a joiner: glued to an option it is the option's value, in a name it is not
    assert redact("mysql -p-pass! x-p-pass!", ("-pass!",)) == "mysql -p*** x-p-pass!"
    assert redact("pw=pass. db=pass.x", ("pass.",)) == "pw=*** db=pass.x"


def test_the_next_chunk_decides_whether_a_name_goes_on() -> None:
    s = ("mariadb",)
    assert stream([b"ps: mariadb", b"d --datadir"], s) == (b"ps: mariadbd --datadir", 0)
    assert stream([b"ps: mariadb", b"-", b"dump"], s) == (b"ps: mariadb-dump", 0)
    assert stream([b"pw=mariadb", b"-", b" x"], s) == (b"pw=***- x", 1)
    assert stream([b"pw=mariadb", b" x"], s) == (b"pw=*** x", 1)
    assert stream([b"pw=mariadb"], s) == (b"pw=***", 1)  # the stream's end separates
    # and the left side from bytes already written
    assert stream([b"mysql -", b"p", b"mariadb "], s) == (b"mysql -p*** ", 1)
    assert stream([b"/usr/lib/lib", b"mariadb.so"], s) == (b"/usr/lib/libmariadb.so", 0)
    assert stream([b"x -abcdefgh", b"mariadb "], s) == (b"x -abcdefgh*** ", 1)
    assert stream([b"x -abcdefghi", b"mariadb "], s) == (b"x -abcdefghimariadb ", 0)


def test_only_the_undecided_tail_is_held() -> None:
    r = Redactor(("mariadb",))
    assert r.feed(b"line one\nline two\n") == b"line one\nline two\n"
    assert r.feed(b"pw=mari") == b"pw="  # could start the secret
    assert r.feed(b"adb") == b""  # whole, but a name may go on
    assert r.feed(b"\nmore") == b"***\nmore"
    assert r.flush() == b"" and r.hits == 1


def test_mask_is_one_shot_and_leaves_the_stream_alone() -> None:
    r = Redactor(("mariadb",))
    assert r.feed(b"pw=mari") == b"pw="
    assert r.mask(b"err: mariadb\n") == b"err: ***\n"
    assert r.feed(b"adb\n") + r.flush() == b"***\n" and r.hits == 2


@pytest.mark.parametrize("secret", ["Q", "Zq", "Qz7", "@!#"])  # none is in the message by chance
def test_a_password_too_short_to_mask_is_refused_without_naming_it(secret: str) -> None:
    for make in (lambda: Redactor((secret, "long-enough")), lambda: redact("x", (secret,))):
        with pytest.raises(ConfigError) as err:
            make()
        assert f"has {len(secret)} character(s), fewer than {MIN_SECRET_CHARS}" in str(err.value)
        assert secret not in str(err.value)
    assert MIN_SECRET_CHARS == 4 and Redactor(("abcd",)).mask(b"abcd") == b"***"


# ---------------------------------------------------------------- properties

NAME = rb"[A-Za-z0-9_]"
SECRET_CHARS = "abz09_-.!#%"  # lowercase, digits, `_`, joiners, separators
SEPARATORS = [" ", "\n", "\t", ",", ";", '"', "'", ":", "@", "/", "=", "\x00"]  # none in a secret
FILLER = st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ", min_size=1, max_size=6)  # none in a secret


def inside_name(t: bytes, k: int) -> bool:
    """The docstring's boundary rule, restated with regexes."""
    if not 0 < k < len(t):
        return False
    pair = re.fullmatch(NAME + NAME, t[k - 1 : k + 1])
    after = k + 1 < len(t) and re.fullmatch(NAME + rb"[-.]" + NAME, t[k - 1 : k + 2])
    before = k >= 2 and re.fullmatch(NAME + rb"[-.]" + NAME, t[k - 2 : k + 1])
    return bool(pair or after or before)


def standalone(t: bytes, i: int, j: int) -> bool:
    option = re.search(rb"(?:\A|[^A-Za-z0-9_])-[A-Za-z]{1,8}\Z", t[:i])
    return not (inside_name(t, i) and not option) and not inside_name(t, j)


@st.composite
def capture(draw: st.DrawFn) -> tuple[str, str, str]:
    """(secret, text, the text as masked): tokens whose masking is known by construction."""
    secret = draw(st.text(alphabet=SECRET_CHARS, min_size=4, max_size=10))
    tokens = [
        (secret, MASK),
        (f"-P{secret}", f"-P{MASK}"),
        (f"-uroot -Bp{secret}", f"-uroot -Bp{MASK}"),
        (f"--password={secret}", f"--password={MASK}"),
        (f"mysql://u:{secret}@h", f"mysql://u:{MASK}@h"),
        (f'"mysql.password"="{secret}"', f'"mysql.password"="{MASK}"'),
    ]
    if secret[-1] in SECRET_CHARS[:6]:  # ends with a name character: a word can go on after it
        tokens += [
            (f"{secret}D", f"{secret}D"),
            (f"{secret}-D", f"{secret}-D"),
            (f"{secret}.SO", f"{secret}.SO"),
        ]
    if secret[0] in SECRET_CHARS[:6]:  # starts with one: a word can come before it
        tokens += [
            (f"LIB{secret}", f"LIB{secret}"),
            (f"X-{secret}", f"X-{secret}"),
            (f"X.{secret}", f"X.{secret}"),
        ]
    picks = draw(st.lists(st.one_of(st.sampled_from(tokens), FILLER.map(lambda w: (w, w))), max_size=12))
    seps = draw(st.lists(st.sampled_from(SEPARATORS), min_size=len(picks) + 1, max_size=len(picks) + 1))
    text = seps[0] + "".join(tok + sep for (tok, _), sep in zip(picks, seps[1:], strict=True))
    masked = seps[0] + "".join(out + sep for (_, out), sep in zip(picks, seps[1:], strict=True))
    return secret, text, masked


@settings(max_examples=300, deadline=None)
@given(case=capture(), cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=12))
def test_standalone_occurrences_are_masked_and_containing_words_kept(
    case: tuple[str, str, str], cuts: list[int]
) -> None:
    secret, text, masked = case
    assert redact(text, (secret,)) == masked
    assert stream(chunked(text.encode(), cuts), (secret,))[0] == masked.encode()


@st.composite
def dense(draw: st.DrawFn, alphabet: str, secret_alphabet: str, n: int = 1) -> tuple[list[str], bytes]:
    """(secrets, text): the text made of the secrets and short runs of `alphabet`, so occurrences
    overlap, abut, and meet option prefixes, joiners and name characters on either side."""
    secrets = draw(
        st.lists(st.text(alphabet=secret_alphabet, min_size=4, max_size=6), min_size=1, max_size=n)
    )
    pieces = draw(
        st.lists(st.one_of(st.sampled_from(secrets), st.text(alphabet=alphabet, max_size=4)), max_size=25)
    )
    return secrets, "".join(pieces).encode()


@settings(max_examples=500, deadline=None)
@given(case=dense("abp-.! x", "abp-.!"), cuts=st.lists(st.integers(min_value=0, max_value=150), max_size=12))
def test_on_any_text_exactly_the_standalone_occurrences_go(
    case: tuple[list[str], bytes], cuts: list[int]
) -> None:
    """Dense texts against the rule as the docstring states it (`standalone` above)."""
    (secret,), text = case
    s = secret.encode()
    whole = Redactor((secret,)).mask(text)
    assert stream(chunked(text, cuts), (secret,))[0] == whole
    pieces = whole.split(MASK.encode())
    assert s.join(pieces) == text  # only whole occurrences were replaced, nothing else changed
    spans, pos = [], 0
    for piece in pieces[:-1]:
        pos += len(piece)
        spans.append((pos, pos + len(s)))
        pos += len(s)
    assert all(standalone(text, i, j) for i, j in spans)  # no containing word changed
    for i in range(len(text)):  # every standalone occurrence is masked, or overlaps one that is
        if text.startswith(s, i) and standalone(text, i, i + len(s)):
            assert any(a < i + len(s) and i < b for a, b in spans)


@settings(max_examples=300, deadline=None)
@given(
    case=dense("abcxyz-. \n\x00\xe9", "abcxyz-. ", n=3),
    cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=12),
)
def test_chunking_never_changes_the_result(case: tuple[list[str], bytes], cuts: list[int]) -> None:
    secrets, text = case
    whole = Redactor(secrets)
    expected = whole.mask(text)
    got, hits = stream(chunked(text, cuts), tuple(secrets))
    assert got == expected and hits == whole.hits


def _ps_capture_of(argv: list[str], secret: str, tmp_path: Path) -> tuple[dict, str]:
    """perfkit's real `ps auxww` capture taken while `argv` runs: its record and archived text."""
    holder = subprocess.Popen(argv)
    try:
        spec = next(s for s in captures.DEFAULT if s.id == "ps-start")
        res = session.collect(
            [LOCAL],
            tmp_path / "run",
            session.Options(window=1, specs=(spec,), run_id="redact", sampler=False, secrets=(secret,)),
        )
    finally:
        holder.kill()
        holder.wait()
    rec = res.manifest["captures"][0]
    return rec, (tmp_path / "run" / rec["path"]).read_text()


@pytest.mark.lab
def test_a_password_in_another_process_argv_is_masked_in_the_ps_capture(tmp_path: Path) -> None:
    """go-tpc's password is in its argv on the load host: `ps auxww` must not carry it home."""
    secret = "canary-" + uuid.uuid4().hex
    rec, text = _ps_capture_of(["sh", "-c", "sleep 30", secret], secret, tmp_path)  # $0 = the secret
    assert rec["status"] == "ok" and rec["redacted"] is True
    assert secret not in text and f"sh -c sleep 30 {MASK}" in text  # the line stays, the value goes
    manifest = (tmp_path / "run" / "manifest.json").read_text()
    assert secret not in manifest and json.loads(manifest)["captures"][0]["redacted"] is True


@pytest.mark.lab
def test_a_word_containing_the_password_survives_a_real_ps_capture(tmp_path: Path) -> None:
    """Bug 11 through a real capture: `<secret>d` (as `mariadbd` for the password `mariadb`) stays in
    the archived `ps auxww` line, while the same process's `-p<secret>` and `--password=` go."""
    secret = "canary" + uuid.uuid4().hex
    argv0 = f"/usr/sbin/{secret}d"
    argv = ["sh", "-c", "sleep 30", argv0, f"-p{secret}", f"--password={secret}"]
    rec, text = _ps_capture_of(argv, secret, tmp_path)
    assert rec["status"] == "ok" and rec["redacted"] is True
    assert f"sh -c sleep 30 {argv0} -p{MASK} --password={MASK}\n" in text
    assert text.count(secret) == 1  # only inside the longer word


def test_the_database_targets_error_messages_follow_the_same_rule() -> None:
    # DbTarget.redact masks the server's error text: it had its own str.replace, which turned a
    # password `mariadb` inside `mariadbd` into `***d`
    from perfkit.collectors.mysql_sampler import DbTarget

    target = DbTarget(host="127.0.0.1", port=3306, user="u", db="d", password="mariadb", socket=None)
    text = "Lost connection to mariadbd (password mariadb)"
    assert target.redact(text) == "Lost connection to mariadbd (password ***)"
