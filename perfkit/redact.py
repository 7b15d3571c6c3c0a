"""Masking the exact values of secrets perfkit knows, in streams and in text (reliability.md K2).

An archive stores captures byte for byte with one exception (design.md): a password perfkit was
given is replaced by `MASK` before the bytes are written. go-ycsb echoes its `mysql.password`
property; go-tpc takes the password in argv, so `ps auxww` and `iotop` captures on the load host show
it. A password is often a common word (`mariadb`, `root`), so masking every occurrence would mangle
the captures (`mariadbd` became `***d` and a rule called the database's writes "(other)"). The rule:

- An *occurrence* is the secret's exact bytes (UTF-8) anywhere in the text; nothing else is looked
  for (an escaped or encoded rendering of a password is not caught).
- *Name characters* are ASCII letters, digits and `_`; `-` and `.` join two of them into one name
  (`mariadb-dump`, `mariadb.service`, `libmariadb.so.3`). Everything else separates names: spaces,
  quotes, `=`, `:`, `@`, `/`, `,`, the start and the end of the stream, and every non-ASCII byte
  (so a doubtful case masks more, never less).
- The boundary before byte k lies *inside a name* when the bytes around it read name-name, or
  name-joiner-name with the boundary on either side of the joiner.
- An occurrence is masked unless one of its two ends lies inside a name: it is then only part of a
  longer word (`mariadbd`, `/usr/sbin/mariadbd`, `libmariadb.so.3`, `mariadb-admin`). A secret whose
  first or last byte is no name character has no word glued on that side: `!x9#` goes in `a!x9#b`.
- Except: an option cluster glued in front is no word. When what precedes the occurrence is `-` and
  1 to 8 ASCII letters, with that `-` at the start of a token (the stream's start or after a byte
  that is no name character), the occurrence is masked: `-pmariadb`, `-uroot -pmariadb`, `--pmariadb`
  become `-p***`; `x-pmariadb` stays (the name `x-pmariadb` is not the password).
- So these are masked: `-pmariadb`, `--password=mariadb`, `password: mariadb`, `mysql://u:mariadb@h`,
  `"mysql.password"="mariadb"`, `mysql.password = mariadb`, `'mariadb'`, `-p mariadb`, and a line or
  a stream that starts or ends with it; these stay: `mariadbd`, `/usr/sbin/mariadbd`, `MariaDB` (not
  the exact bytes), `mariadb-admin`. A token that *is* the secret is masked whatever it means there:
  with the password `mariadb`, the `mariadb` client's name and a `/var/lib/mariadb/` directory too.
- Overlapping occurrences are masked from left to right, the longest secret first at one position,
  each once (as `str.replace` does); every masked occurrence counts in `hits`.

A secret shorter than `MIN_SECRET_CHARS` characters is refused (`ConfigError`, when the first
`Redactor` is made: the load generator's preflight, before any capture or load starts). Masking
`1`, `a` or `top` wherever it stands alone would corrupt PIDs, counts, states and program names in
every capture, masking it only after `-p` or `password=` would leak it wherever else a tool prints it,
and a password that short is guessed in a moment anyway.

Output arrives in chunks, so the redactor holds back the end of a chunk while it may still change:
a possible start of a secret (its first bytes), or a whole occurrence whose right end is not yet
decided (the next two bytes say whether a name goes on: `mariadb` + `d`, or + `-d`). The left side
is decided from the raw bytes already written, of which the last `_CONTEXT` are kept. `flush` ends
the stream: its end is a separator. Fed in any chunking, the output is the same as `mask` on the
whole.
"""

from __future__ import annotations

from collections.abc import Iterable

from perfkit.errors import ConfigError

MASK = "***"
MIN_SECRET_CHARS = 4

_LETTERS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_NAME = _LETTERS | frozenset(b"0123456789_")
_JOINERS = frozenset(b"-.")
_DASH = ord("-")
_OPTION_LETTERS = 8  # the longest option cluster before a glued value: `-p`, `-Bp`, ... `-vvvvvvvp`
_CONTEXT = _OPTION_LETTERS + 2  # raw bytes of left context a decision reads: the cluster, `-`, one more
_LOOKAHEAD = 2  # bytes past an occurrence that decide its right end: `d` or `-d`


class Redactor:
    """Masks every standalone occurrence of the secrets in a byte stream fed chunk by chunk."""

    def __init__(self, secrets: Iterable[str]):
        unique = {s for s in secrets if s}
        short = [len(s) for s in unique if len(s) < MIN_SECRET_CHARS]
        if short:
            # the length only: the message must not carry the secret
            raise ConfigError(
                f"a password perfkit was given has {min(short)} character(s), fewer than "
                f"{MIN_SECRET_CHARS}: perfkit masks it wherever it stands alone in captures, which would "
                "mangle them (PIDs, counts, program names); use a longer password"
            )
        self._secrets = sorted({s.encode() for s in unique}, key=len, reverse=True)
        self._longest = max((len(s) for s in self._secrets), default=0)
        self._held = b""  # raw bytes not written yet
        self._context = b""  # the last raw bytes written, for left-side decisions
        self.hits = 0

    def feed(self, chunk: bytes) -> bytes:
        """The bytes that are safe to write now (masked); an undecided tail stays held."""
        if not self._secrets:
            return chunk
        buf = self._context + self._held + chunk
        out, cut = self._scan(buf, len(self._context), final=False)
        self._held = buf[cut:]
        self._context = buf[max(0, cut - _CONTEXT) : cut]
        return out

    def flush(self) -> bytes:
        """What is still held, masked with the stream's end as a separator; the stream then ends."""
        buf, start = self._context + self._held, len(self._context)
        self._held = self._context = b""
        if start == len(buf):
            return b""
        return self._scan(buf, start, final=True)[0]

    def mask(self, data: bytes) -> bytes:
        """`data` on its own (start and end are separators) with every standalone secret masked;
        `hits` counts them. The stream's state is not touched."""
        if not self._secrets:
            return data
        return self._scan(data, 0, final=True)[0]

    def _scan(self, buf: bytes, start: int, *, final: bool) -> tuple[bytes, int]:
        """`buf[start:cut]` masked, and `cut`: everything from `cut` on may still change.

        `buf[:start]` is context already written. Occurrences starting before `limit` are decided;
        they are taken from left to right, longest first, skipping any that overlap one masked.
        """
        n = len(buf)
        limit = n
        if not final:
            for i in range(max(start, n - self._longest - _LOOKAHEAD + 1), n):
                # a secret that may start at i, whose right end needs bytes not here yet
                if any(
                    i + len(s) + _LOOKAHEAD > n and s.startswith(buf[i : i + len(s)]) for s in self._secrets
                ):
                    limit = i
                    break
        found: list[tuple[int, int]] = []
        for s in self._secrets:
            i = buf.find(s, start)
            while 0 <= i < limit:
                found.append((i, i + len(s)))
                i = buf.find(s, i + 1)
        out: list[bytes] = []
        pos = start
        for i, j in sorted(found, key=lambda o: (o[0], -o[1])):
            if i >= pos and _standalone(buf, i, j):
                out += (buf[pos:i], MASK.encode())
                pos = j
                self.hits += 1
        cut = max(pos, limit)
        out.append(buf[pos:cut])
        return b"".join(out), cut


def _inside_name(buf: bytes, k: int) -> bool:
    """Whether the boundary before `buf[k]` lies inside a name (name-name, or name-joiner-name)."""
    if k <= 0 or k >= len(buf):
        return False  # the start or the end of the text separates
    a, b = buf[k - 1], buf[k]
    if a in _NAME:
        return b in _NAME or (b in _JOINERS and k + 1 < len(buf) and buf[k + 1] in _NAME)
    return a in _JOINERS and b in _NAME and k >= 2 and buf[k - 2] in _NAME


def _option_before(buf: bytes, i: int) -> bool:
    """Whether `buf[:i]` ends with a short-option cluster at a token's start (`-p`, ` -Bp`, `'-p`)."""
    m = 0
    while m < _OPTION_LETTERS and i - m - 1 >= 0 and buf[i - m - 1] in _LETTERS:
        m += 1
    d = i - m - 1  # where the `-` must be
    return m > 0 and d >= 0 and buf[d] == _DASH and (d == 0 or buf[d - 1] not in _NAME)


def _standalone(buf: bytes, i: int, j: int) -> bool:
    """Whether the occurrence `buf[i:j]` is the secret itself rather than part of a longer word."""
    glued_left = _inside_name(buf, i) and not _option_before(buf, i)
    return not glued_left and not _inside_name(buf, j)


def redact(text: str, secrets: Iterable[str]) -> str:
    """`text` with every standalone occurrence of the secrets masked (the rule: module docstring)."""
    r = Redactor(secrets)
    if not r._secrets:
        return text
    # surrogatepass: text decoded with errors="surrogateescape" round-trips; masks replace whole
    # secrets, which are whole UTF-8 sequences, so the result decodes again
    return r.mask(text.encode("utf-8", "surrogatepass")).decode("utf-8", "surrogatepass")
