"""Avro schema definitions and Avro's schema resolution rules, as the compatibility checks need.

:func:`parse` turns a definition (the JSON text AVRO, JSON and PROTOBUF schemas carry in
Pulsar) into a small tree of frozen nodes, with every named type (record, enum, fixed) in one
table by full name; a later use of a name is a :class:`Ref`. :func:`read_errors` says why data
written with one schema cannot be read with another (an empty list: it can), following the
Avro specification's "Schema Resolution":

* primitives match by name, or by promotion (int -> long/float/double, long -> float/double,
  float -> double, string <-> bytes);
* records match by unqualified name (or a reader alias); each reader field takes the writer
  field of its name (or an alias) and must read its type, or have a default when the writer
  has no such field; writer fields the reader lacks are skipped;
* enums match by name; a writer symbol the reader lacks needs the reader's enum default;
* arrays and maps by their items and values; fixed by name and size;
* a writer union: every branch must be readable; a reader union: some branch must read the
  writer's type.

Logical types resolve as their underlying type (Avro ignores them for resolution). Recursive
types terminate: a pair of named types already being compared counts as readable.

Pure functions; safe from any task.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from magnetar.schema.errors import InvalidSchema

PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
# (writer type, reader type) pairs Avro promotes.
PROMOTIONS = frozenset(
    {
        ("int", "long"),
        ("int", "float"),
        ("int", "double"),
        ("long", "float"),
        ("long", "double"),
        ("float", "double"),
        ("string", "bytes"),
        ("bytes", "string"),
    }
)


@dataclass(frozen=True, slots=True)
class Primitive:
    name: str


@dataclass(frozen=True, slots=True)
class Ref:
    """A use of a named type defined elsewhere in the same schema."""

    fullname: str


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    type: Node
    has_default: bool
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Record:
    fullname: str
    fields: tuple[Field, ...]
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Enum:
    fullname: str
    symbols: tuple[str, ...]
    default: str | None = None
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Fixed:
    fullname: str
    size: int
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Array:
    items: Node


@dataclass(frozen=True, slots=True)
class Map:
    values: Node


@dataclass(frozen=True, slots=True)
class Union:
    branches: tuple[Node, ...]


Node = Primitive | Ref | Record | Enum | Fixed | Array | Map | Union
Named = Record | Enum | Fixed


@dataclass(frozen=True, slots=True)
class AvroSchema:
    """A parsed definition: its root node and its named types by full name."""

    root: Node
    names: dict[str, Named]

    def resolve(self, node: Node) -> Node:
        return self.names[node.fullname] if isinstance(node, Ref) else node


def parse(text: str | bytes) -> AvroSchema:
    """Parse an Avro schema definition; :class:`InvalidSchema` says what is wrong."""
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidSchema(f"the schema definition is not JSON: {exc}") from exc
    names: dict[str, Named] = {}
    root = _Parser(names).node(doc, "")
    return AvroSchema(root, names)


class _Parser:
    def __init__(self, names: dict[str, Named]) -> None:
        self.names = names

    def node(self, doc: Any, namespace: str) -> Node:
        if isinstance(doc, str):
            return self._named_use(doc, namespace)
        if isinstance(doc, list):
            return Union(tuple(self.node(branch, namespace) for branch in doc))
        if not isinstance(doc, dict) or "type" not in doc:
            raise InvalidSchema(f"not an Avro schema: {json.dumps(doc)[:80]}")
        kind = doc["type"]
        if kind in PRIMITIVES:
            return Primitive(kind)  # {"type": "long", "logicalType": ...}
        if kind == "array":
            return Array(self.node(doc.get("items"), namespace))
        if kind == "map":
            return Map(self.node(doc.get("values"), namespace))
        if kind in ("record", "error", "enum", "fixed"):
            return self._named(doc, kind, namespace)
        if isinstance(kind, (dict, list)):
            return self.node(kind, namespace)
        return self._named_use(kind, namespace)

    def _named_use(self, name: object, namespace: str) -> Node:
        if not isinstance(name, str):
            raise InvalidSchema(f"not an Avro type name: {name!r}")
        if name in PRIMITIVES:
            return Primitive(name)
        for candidate in (_full(name, namespace), name):
            if candidate in self.names:
                return Ref(candidate)
        raise InvalidSchema(f"unknown Avro type {name!r}")

    def _named(self, doc: dict[str, Any], kind: str, namespace: str) -> Node:
        name = doc.get("name")
        if not isinstance(name, str) or not name:
            raise InvalidSchema(f"an Avro {kind} needs a name")
        own_ns = doc.get("namespace")
        fullname = _full(name, own_ns if isinstance(own_ns, str) else namespace)
        if fullname in self.names:
            raise InvalidSchema(f"Avro type {fullname!r} is defined twice")
        inner_ns = fullname.rpartition(".")[0]
        aliases = tuple(a for a in doc.get("aliases", ()) if isinstance(a, str))
        node: Named
        if kind == "enum":
            symbols = doc.get("symbols")
            if not isinstance(symbols, list) or not all(isinstance(s, str) for s in symbols):
                raise InvalidSchema(f"Avro enum {fullname!r} needs a list of symbols")
            default = doc.get("default")
            node = Enum(fullname, tuple(symbols), default if isinstance(default, str) else None,
                        aliases)  # fmt: skip
        elif kind == "fixed":
            size = doc.get("size")
            if not isinstance(size, int) or size < 0:
                raise InvalidSchema(f"Avro fixed {fullname!r} needs a size")
            node = Fixed(fullname, size, aliases)
        else:
            # Registered first (fields empty) so that the record's own fields may refer to it.
            self.names[fullname] = Record(fullname, (), aliases)
            node = Record(fullname, self._fields(doc, fullname, inner_ns), aliases)
        self.names[fullname] = node
        return node

    def _fields(self, doc: dict[str, Any], fullname: str, namespace: str) -> tuple[Field, ...]:
        fields = doc.get("fields")
        if not isinstance(fields, list):
            raise InvalidSchema(f"Avro record {fullname!r} needs a list of fields")
        out: list[Field] = []
        for f in fields:
            if not isinstance(f, dict) or not isinstance(f.get("name"), str) or "type" not in f:
                raise InvalidSchema(f"a field of Avro record {fullname!r} needs a name and type")
            aliases = tuple(a for a in f.get("aliases", ()) if isinstance(a, str))
            out.append(Field(f["name"], self.node(f["type"], namespace), "default" in f, aliases))
        names = [f.name for f in out]
        if len(set(names)) != len(names):
            raise InvalidSchema(f"Avro record {fullname!r} has a field twice")
        return tuple(out)


def _full(name: str, namespace: str | None) -> str:
    return name if "." in name or not namespace else f"{namespace}.{name}"


def _short(fullname: str) -> str:
    return fullname.rpartition(".")[2]


def read_errors(reader: AvroSchema, writer: AvroSchema) -> list[str]:
    """Why data written with ``writer`` cannot be read with ``reader``; empty if it can."""
    return _Resolver(reader, writer).check(reader.root, writer.root, "")


class _Resolver:
    def __init__(self, reader: AvroSchema, writer: AvroSchema) -> None:
        self.reader = reader
        self.writer = writer
        self.seen: set[tuple[str, str]] = set()

    def check(self, r: Node, w: Node, path: str) -> list[str]:
        r, w = self.reader.resolve(r), self.writer.resolve(w)
        if isinstance(w, Union):
            return [e for branch in w.branches for e in self.check(r, branch, path)]
        if isinstance(r, Union):
            if any(not self.check(branch, w, path) for branch in r.branches):
                return []
            return [f"{path or '/'}: no branch of the reader's union reads {_describe(w)}"]
        if isinstance(r, Primitive) and isinstance(w, Primitive):
            if r.name == w.name or (w.name, r.name) in PROMOTIONS:
                return []
            return [f"{path or '/'}: {r.name} cannot read {w.name}"]
        if isinstance(r, Array) and isinstance(w, Array):
            return self.check(r.items, w.items, f"{path}/items")
        if isinstance(r, Map) and isinstance(w, Map):
            return self.check(r.values, w.values, f"{path}/values")
        if isinstance(r, (Record, Enum, Fixed)) and type(r) is type(w):
            assert isinstance(w, (Record, Enum, Fixed))
            return self._named(r, w, path)
        return [f"{path or '/'}: {_describe(r)} cannot read {_describe(w)}"]

    def _named(self, r: Named, w: Named, path: str) -> list[str]:
        if _short(r.fullname) != _short(w.fullname) and not _aliased(r.aliases, w.fullname):
            return [f"{path or '/'}: name {r.fullname} does not match {w.fullname}"]
        if isinstance(r, Fixed) and isinstance(w, Fixed):
            if r.size != w.size:
                return [f"{path or '/'}: fixed {r.fullname} size {r.size} != {w.size}"]
            return []
        if isinstance(r, Enum) and isinstance(w, Enum):
            missing = [s for s in w.symbols if s not in r.symbols]
            if missing and r.default is None:
                return [f"{path or '/'}: enum {r.fullname} lacks symbols {missing}"]
            return []
        assert isinstance(r, Record)
        assert isinstance(w, Record)
        pair = (r.fullname, w.fullname)
        if pair in self.seen:
            return []
        self.seen.add(pair)
        by_name = {f.name: f for f in w.fields}
        errors: list[str] = []
        for field in r.fields:
            source = next((by_name[n] for n in (field.name, *field.aliases) if n in by_name), None)
            where = f"{path}/{field.name}"
            if source is not None:
                errors.extend(self.check(field.type, source.type, where))
            elif not field.has_default:
                errors.append(f"{where}: field {field.name!r} is new and has no default")
        return errors


def _aliased(aliases: tuple[str, ...], fullname: str) -> bool:
    return any(a in (fullname, _short(fullname)) for a in aliases)


def _describe(node: Node) -> str:
    match node:
        case Primitive(name):
            return name
        case Record(fullname) | Enum(fullname) | Fixed(fullname):
            return f"{type(node).__name__.lower()} {fullname}"
        case Array():
            return "array"
        case Map():
            return "map"
        case Union():
            return "union"
        case Ref(fullname):
            return fullname
