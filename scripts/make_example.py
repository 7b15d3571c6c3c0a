#!/usr/bin/env python3
"""Build examples/seed000-tidb-write-only.tar.gz from the seed 000 field note, deterministically.

The seed's author ran oltp_write_only against TiDB v4.0.0 at 8, 24, 72, 216, 648, 800 and 1200
threads with the collection script shown in the note (`export LANG=en_US`, `iostat 1 30 -x -d -t >
iostatx_1`, `iotop -botq ... > iotop_1`, sysbench output to `sysbench.log`). The note keeps the
sysbench interval lines of every run, the iostat rows (one `Device:` header, then one group of
rows per run) and an iotop excerpt; this script copies those lines byte for byte into that
script's tarball layout — one sysbench log per thread count — and adds nothing.

    python scripts/make_example.py ../shared/seeds/000_ef5ac54ba0a3c495.txt
"""

from __future__ import annotations

import io
import re
import sys
import tarfile
from pathlib import Path

TOP = "wei_ceshi_seed000"
OS_DIR = f"{TOP}/os_seed000"
OUT = Path(__file__).resolve().parent.parent / "examples" / "seed000-tidb-write-only.tar.gz"


def code_blocks(text: str) -> list[str]:
    return re.findall(r"```shell\n(.*?)```", text, flags=re.S)


def main(seed: Path) -> int:
    blocks = code_blocks(seed.read_text(encoding="utf-8"))
    sysbench = next(b for b in blocks if "thds: 1200" in b)
    iostat = next(b for b in blocks if b.lstrip().startswith("Device:") and "\n\nsda" in b)
    iotop = next(b for b in blocks if "Total DISK READ" in b)
    members: dict[str, str] = {}
    for run in sysbench.strip("\n").split("\n\n"):
        threads = int(re.search(r"thds: (\d+)", run)[1])
        members[f"{TOP}/sysbench_{threads}.log"] = run.strip("\n") + "\n"
    members[f"{OS_DIR}/iostatx_1"] = iostat.rstrip("\n") + "\n"
    members[f"{OS_DIR}/iotop_1"] = iotop.strip("\n") + "\n"
    OUT.parent.mkdir(exist_ok=True)
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for d in (TOP, OS_DIR):
            info = tarfile.TarInfo(d)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, 0
            tar.addfile(info)
        for name, text in sorted(members.items()):
            data = text.encode("utf-8")
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    import gzip

    OUT.write_bytes(gzip.compress(raw.getvalue(), mtime=0))
    print(f"wrote {OUT} ({len(members)} files)")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(Path(sys.argv[1])))
