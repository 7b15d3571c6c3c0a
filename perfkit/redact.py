"""Masking the exact values of secrets perfkit knows, in streams and in text (reliability.md K2).

An archive stores captures byte for byte with one exception (design.md): a password perfkit was
given is replaced by `MASK` before the bytes are written. go-ycsb echoes its `mysql.password`
property; go-tpc takes the password in argv, so `ps auxww` and `iotop` captures on the load host show
it. Output arrives in chunks, so a secret split across two chunks must still be caught: the tail that
could start a secret is held back until the next chunk (or `flush`).
"""

from __future__ import annotations

from collections.abc import Iterable

MASK = "***"


class Redactor:
    """Replaces every occurrence of the secrets in a byte stream fed chunk by chunk."""

    def __init__(self, secrets: Iterable[str]):
        # longest first: a secret that contains another is masked whole
        self.secrets = sorted({s.encode() for s in secrets if s}, key=len, reverse=True)
        self.keep = max((len(s) for s in self.secrets), default=1) - 1
        self.held = b""
        self.hits = 0

    def feed(self, chunk: bytes) -> bytes:
        """The bytes that are safe to write now (masked); a possible secret prefix stays held."""
        if not self.secrets:
            return chunk
        data = self.mask(self.held + chunk)
        cut = len(data) - self._risky_tail(data)
        self.held = data[cut:]
        return data[:cut]

    def flush(self) -> bytes:
        """What is still held (the stream ended: a partial secret is no secret)."""
        out, self.held = self.held, b""
        return out

    def mask(self, data: bytes) -> bytes:
        """`data` with every whole secret masked (one-shot; `hits` counts them)."""
        for s in self.secrets:
            n = data.count(s)
            if n:
                self.hits += n
                data = data.replace(s, MASK.encode())
        return data

    def _risky_tail(self, data: bytes) -> int:
        """Length of the longest suffix of `data` that is a proper prefix of some secret."""
        for n in range(min(self.keep, len(data)), 0, -1):
            tail = data[-n:]
            if any(s.startswith(tail) for s in self.secrets):
                return n
        return 0


def redact(text: str, secrets: Iterable[str]) -> str:
    """`text` with every secret's exact value masked."""
    for s in sorted({s for s in secrets if s}, key=len, reverse=True):
        text = text.replace(s, MASK)
    return text
