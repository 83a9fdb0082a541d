"""Generate Python code (and typed stubs) from proto/ into services/src.

Usage: python scripts/gen_proto.py [--out DIR]

The generated files are committed; tests/unit/test_proto_fresh.py regenerates them into a
temporary folder and fails when the committed copies differ.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from grpc_tools import protoc

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "proto"


def generate(out: Path) -> list[Path]:
    """Run protoc over every .proto under proto/; return the proto files it compiled."""
    protos = sorted(PROTO_ROOT.rglob("*.proto"))
    # protoc finds the mypy-protobuf plugins on PATH; they live beside this interpreter.
    bin_dir = str(Path(sys.executable).parent)
    os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")
    well_known = Path(protoc.__file__).parent / "_proto"
    for proto in protos:
        rel = proto.relative_to(PROTO_ROOT)
        args = [
            "protoc",
            f"-I{PROTO_ROOT}",
            f"-I{well_known}",
            f"--python_out={out}",
            f"--mypy_out={out}",
        ]
        if "service " in proto.read_text():
            args += [f"--grpc_python_out={out}", f"--mypy_grpc_out={out}"]
        args.append(str(rel))
        if protoc.main(args) != 0:
            raise SystemExit(f"protoc failed on {rel}")
    return protos


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "services" / "src")
    args = parser.parse_args()
    protos = generate(args.out)
    print(f"generated code for {len(protos)} proto files into {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
