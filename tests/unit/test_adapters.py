"""Each third-party library enters through its adapter modules only (DESIGN.md §2).

import-linter checks the layer order; this test checks the finer rule it cannot express:
``grpc`` only in servicers and stubs, ``rocksdict`` only in the RocksDB adapters, and so on.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "services" / "src"

# library -> modules allowed to import it (generated code under magnetar.wire is exempt)
ADAPTERS: dict[str, set[str]] = {
    "grpc": {
        "magnetar.bookie.servicer",
        "magnetar.ledger.bookie_client",
        "magnetar.metadata.etcd",  # etcd3aio speaks grpc.aio; its errors are grpc's
    },
    "rocksdict": {"magnetar.metadata.rocksdb", "magnetar.bookie.ledger_storage"},
    "etcd3aio": {"magnetar.metadata.etcd"},
    "crc32c": {
        "magnetar.protocol.frame",
        "magnetar.ledger.digest",
        "magnetar.bookie.journal_record",
        "magnetar.bookie.journal_replay",
        "magnetar.bookie.entry_log",
    },
    "fastapi": {"magnetar.admin"},
    "uvicorn": {"magnetar.broker.web_service"},
    "pyspark": {"magnetar.audit"},
    "httpx": {"magnetar.client.admin"},
    "cramjam": {"magnetar.client.compression"},
    "kopf": set(),
    "kubernetes": set(),
}


def _imported_roots(tree: ast.AST) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def _allowed(module: str, allowed: set[str]) -> bool:
    return any(module == a or module.startswith(a + ".") for a in allowed)


def test_third_party_libraries_enter_through_their_adapters() -> None:
    offenders: list[str] = []
    for path in sorted((SRC / "magnetar").rglob("*.py")):
        module = ".".join(path.relative_to(SRC).with_suffix("").parts)
        if module.startswith("magnetar.wire"):
            continue
        for lib in _imported_roots(ast.parse(path.read_text(), str(path))):
            if lib in ADAPTERS and not _allowed(module, ADAPTERS[lib]):
                offenders.append(f"{module} imports {lib}")
    assert not offenders, "libraries outside their adapter modules:\n" + "\n".join(offenders)
