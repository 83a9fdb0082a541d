"""The committed generated code matches what proto/ generates now."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GENERATED = ROOT / "services" / "src"


def test_generated_code_is_fresh(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_proto.py"), "--out", str(tmp_path)],
        check=True,
        capture_output=True,
    )
    fresh = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert fresh, "protoc generated nothing"
    stale = [
        str(rel)
        for rel in fresh
        if not (GENERATED / rel).exists()
        or (GENERATED / rel).read_bytes() != (tmp_path / rel).read_bytes()
    ]
    assert not stale, f"generated code is stale, run `make proto`: {stale}"
