"""Masking secrets in streams (perfkit/redact.py) and in real captures (collectors/session.py)."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfkit.collectors import captures, session
from perfkit.redact import MASK, Redactor, redact
from perfkit.transport import LOCAL


def stream(chunks: list[bytes], secrets: tuple[str, ...]) -> tuple[bytes, int]:
    r = Redactor(secrets)
    out = b"".join(r.feed(c) for c in chunks) + r.flush()
    return out, r.hits


def test_a_secret_split_across_chunks_is_masked() -> None:
    out, hits = stream([b'"mysql.password"="hun', b'ter2"\nnext line hunter', b"2 and hunt"], ("hunter2",))
    assert out == b'"mysql.password"="***"\nnext line *** and hunt'
    assert hits == 2


def test_the_longer_of_two_overlapping_secrets_is_masked_whole() -> None:
    assert redact("pw=abc123; short=abc", ("abc", "abc123")) == "pw=***; short=***"


def test_no_secrets_passes_bytes_through_untouched() -> None:
    assert stream([b"a", b"b\x00c"], ()) == (b"ab\x00c", 0)


@settings(max_examples=200, deadline=None)
@given(
    text=st.binary(max_size=300),
    secret=st.text(alphabet="abcxyz", min_size=1, max_size=8),
    cuts=st.lists(st.integers(min_value=0, max_value=300), max_size=10),
)
def test_chunking_never_changes_the_result(text: bytes, secret: str, cuts: list[int]) -> None:
    whole = text.replace(secret.encode(), MASK.encode())
    bounds = sorted({0, len(text), *(c for c in cuts if c <= len(text))})
    chunks = [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
    assert stream(chunks, (secret,))[0] == whole


@pytest.mark.lab
def test_a_password_in_another_process_argv_is_masked_in_the_ps_capture(tmp_path: Path) -> None:
    """go-tpc's password is in its argv on the load host: `ps auxww` must not carry it home."""
    secret = "canary-" + uuid.uuid4().hex
    holder = subprocess.Popen(["sh", "-c", "sleep 30", secret])  # $0 = the secret, as `ps` shows it
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
    text = (tmp_path / "run" / rec["path"]).read_text()
    assert rec["status"] == "ok" and rec["redacted"] is True
    assert secret not in text and f"sh -c sleep 30 {MASK}" in text  # the line stays, the value goes
    manifest = (tmp_path / "run" / "manifest.json").read_text()
    assert secret not in manifest and json.loads(manifest)["captures"][0]["redacted"] is True
