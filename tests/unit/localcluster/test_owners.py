"""Bundle owners as ``magnetar cluster status`` shows them: parsed from owner keys, sorted, and
said plainly when there are none or the metadata store does not answer."""

from __future__ import annotations

import json

from magnetar.localcluster.owners import BundleOwner, parse_owners
from magnetar.localcluster.status import owners_table
from magnetar.metadata import keys


def _record(url: str) -> bytes:
    return json.dumps({"nativeUrl": url, "httpUrl": "http://x", "disabled": False}).encode()


def test_owner_keys_become_sorted_rows() -> None:
    entries = [
        (keys.bundle_owner("public", "default", "0x40000000_0x80000000"), _record("pulsar://b:2")),
        (keys.bundle_owner("acme", "orders", "0x00000000_0x40000000"), _record("pulsar://a:1")),
        (keys.bundle_owner("public", "default", "0x00000000_0x40000000"), b"not json"),
        ("/namespace/odd", b"{}"),  # not an owner key: left out
    ]
    owners = parse_owners(entries)
    assert owners == [
        BundleOwner("acme/orders", "0x00000000_0x40000000", "pulsar://a:1"),
        BundleOwner("public/default", "0x00000000_0x40000000", "?"),
        BundleOwner("public/default", "0x40000000_0x80000000", "pulsar://b:2"),
    ]
    table = owners_table(owners)
    assert table[0].split() == ["NAMESPACE", "BUNDLE", "OWNER"]
    assert table[1].split() == ["acme/orders", "0x00000000_0x40000000", "pulsar://a:1"]
    assert len(table) == 4


def test_no_owners_and_no_answer_are_said_plainly() -> None:
    assert owners_table([]) == ["bundle owners: none (a bundle gets an owner at its first lookup)"]
    assert owners_table(None) == ["bundle owners: the metadata store did not answer"]
