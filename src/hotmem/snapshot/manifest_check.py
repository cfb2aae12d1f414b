"""Checking a manifest read from a package, field by field, without trusting it.

Every field is checked against the format (``docs/snapshot-v2.md``, "Manifest"), and every
problem is reported with what was expected and what was found. What can still be used to read
the members comes back as a :class:`~hotmem.snapshot.manifest.Manifest`.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from hotmem.embedding.hash_v1 import DIMENSION, MODEL_NAME, VECTOR_BYTES
from hotmem.snapshot import format as fmt
from hotmem.snapshot.format import SnapshotProblem
from hotmem.snapshot.manifest import Manifest, MemberMeta, SpaceMeta
from hotmem.snapshot.profiles import check_profiles
from hotmem.snapshot.records import reject_constant

__all__ = ["MANIFEST_VALUES", "check_manifest", "parse_manifest"]

#: A manifest lists at most 65,534 data members, each with 3 commas and one brace of its own.
MANIFEST_VALUES = 5 * fmt.MAX_MEMBERS + 64

_KEYS = frozenset(
    {"content_digest", "embedding", "format", "format_version", "fts", "members", "record_count"}
)
#: Fields a manifest may hold besides ``_KEYS``: only when the package has further spaces, or
#: profile settings.
_OPTIONAL_KEYS = frozenset({"spaces", "profiles"})
_MEMBER_KEYS = frozenset({"name", "records", "sha256", "size"})
_SPACE_KEYS = frozenset({"digest", "dimension", "dtype", "members", "model_id", "name"})
_HEX = frozenset("0123456789abcdef")
_Add = Callable[..., None]
_MAX_TOKENIZER = 200


def _is_count(value: object) -> bool:
    return type(value) is int and value >= 0


def _is_sha256(value: object) -> bool:
    return isinstance(value, str) and len(value) == 64 and set(value) <= _HEX


def _fields_found(missing: list[str], unknown: list[str]) -> str:
    labelled = (("missing", missing), ("unknown", unknown))
    return "; ".join(f"{label} {', '.join(keys)}" for label, keys in labelled if keys)


def parse_manifest(data: bytes) -> tuple[Manifest | None, list[SnapshotProblem]]:
    """Parse and check the manifest's bytes, within a bound on what parsing builds."""
    values = data.count(b",") + data.count(b"[") + data.count(b"{")
    if values > MANIFEST_VALUES:  # parsing would build up to that many objects
        expected = f"at most {MANIFEST_VALUES} commas, brackets and braces"
        return None, [SnapshotProblem(fmt.MANIFEST_NAME, "limit", expected, f"{values}")]
    try:
        value = json.loads(data.decode("utf-8"), parse_constant=reject_constant)
    except RecursionError:
        found = "arrays or objects nested too deeply to parse"
        return None, [
            SnapshotProblem(fmt.MANIFEST_NAME, "manifest", "a JSON object in UTF-8", found)
        ]
    except ValueError as exc:  # UnicodeDecodeError is a ValueError too
        problem = SnapshotProblem(fmt.MANIFEST_NAME, "manifest", "a JSON object in UTF-8", str(exc))
        return None, [problem]
    try:
        return check_manifest(value)
    except RecursionError:  # nesting json.loads could parse but repr() cannot show
        found = "values nested too deeply to show"
        return None, [
            SnapshotProblem(fmt.MANIFEST_NAME, "manifest", "the manifest's fields", found)
        ]


def check_manifest(value: object) -> tuple[Manifest | None, list[SnapshotProblem]]:
    """Check a parsed manifest; the manifest is ``None`` when the members cannot be read by it.

    An unknown format or version stops the check: nothing else can be interpreted.
    """
    problems: list[SnapshotProblem] = []

    def add(check: str, expected: str, found: str, location: str = fmt.MANIFEST_NAME) -> None:
        problems.append(SnapshotProblem(location, check, expected, found))

    if not _check_envelope(value, add):
        return None, problems
    assert isinstance(value, dict)  # checked by _check_envelope
    width = _check_embedding(value["embedding"], add)
    _check_fts(value["fts"], add)
    record_count = value["record_count"]
    if not _is_count(record_count):
        add("manifest", "record_count as a non-negative integer", repr(record_count))
        record_count = None
    digest = value["content_digest"]
    if not _is_sha256(digest):
        add("manifest", "content_digest as 64 lowercase hex digits", repr(digest))
        digest = None
    members = _check_members(value["members"], width, add)
    if members is None:
        return None, problems
    total = sum(meta.records for meta in members[0::2])
    if record_count is not None and total != record_count:
        add("record-count", f"{record_count} records (record_count)", f"{total} in the members")
    spaces: tuple[SpaceMeta, ...] = ()
    if "spaces" in value:
        checked = _check_spaces(value["spaces"], [meta.records for meta in members[0::2]], add)
        if checked is None:
            return None, problems
        spaces = checked
    profiles = None
    if "profiles" in value:
        profiles = check_profiles(value["profiles"], [space.name for space in spaces], add)
    return Manifest(record_count, digest, members, width, spaces, profiles), problems


def _check_envelope(value: object, add: _Add) -> bool:
    """Whether ``value`` is a manifest object of this format and version with every field it
    needs; says what is wrong otherwise (an unknown field is said, but does not stop)."""
    if not isinstance(value, dict):
        add("manifest", "a JSON object", type(value).__name__)
        return False
    if value.get("format") != fmt.FORMAT_NAME:
        add("format", repr(fmt.FORMAT_NAME), repr(value.get("format")))
        return False
    version = value.get("format_version")
    if type(version) is not int or version != fmt.FORMAT_VERSION:
        expected = f"{fmt.FORMAT_VERSION} (the version this HotMem reads)"
        add("format-version", expected, repr(version))
        return False
    missing = sorted(_KEYS - value.keys())
    unknown = sorted(value.keys() - _KEYS - _OPTIONAL_KEYS)
    if missing or unknown:
        expected = "the fields " + ", ".join(sorted(_KEYS)) + " (and spaces, profiles, if any)"
        add("manifest", expected, _fields_found(missing, unknown))
    return not missing


def _check_embedding(value: object, add: _Add) -> int:
    """Check the embedding contract; return the bytes per vector the manifest implies."""
    if not isinstance(value, dict) or value.keys() != {"dimension", "dtype", "model"}:
        add("manifest", "embedding as {dimension, dtype, model}", repr(value)[:200])
        return VECTOR_BYTES
    if value["model"] != MODEL_NAME:
        add("embedding-model", f"{MODEL_NAME!r} (this HotMem's embedder)", repr(value["model"]))
    dimension = value["dimension"]
    if type(dimension) is not int or dimension != DIMENSION:
        add("embedding-dimension", f"{DIMENSION} (this HotMem's embedder)", repr(dimension))
    if value["dtype"] != fmt.VECTOR_DTYPE:
        add("embedding-dtype", repr(fmt.VECTOR_DTYPE), repr(value["dtype"]))
    return 4 * dimension if type(dimension) is int and 0 < dimension <= 2**16 else VECTOR_BYTES


def _check_fts(value: object, add: _Add) -> None:
    if not isinstance(value, dict) or value.keys() != {"columns", "tokenizer"}:
        add("manifest", "fts as {columns, tokenizer}", repr(value)[:200])
        return
    # Any name is accepted: the index is derived data, rebuilt by the target's own code
    # (docs/snapshot-v2.md, "Derived indexes"); the name only says what the source built.
    tokenizer = value["tokenizer"]
    if not isinstance(tokenizer, str) or not 0 < len(tokenizer) <= _MAX_TOKENIZER:
        expected = f"the name of the source's lexical index (text of 1..{_MAX_TOKENIZER} chars)"
        add("fts-tokenizer", expected, repr(tokenizer)[:200])
    if value["columns"] != list(fmt.FTS_COLUMNS):
        add("fts-columns", repr(list(fmt.FTS_COLUMNS)), repr(value["columns"]))


def _member(item: object) -> MemberMeta | None:
    if not isinstance(item, dict) or item.keys() != _MEMBER_KEYS:
        return None
    name, size, digest, records = item["name"], item["size"], item["sha256"], item["records"]
    valid = isinstance(name, str) and _is_count(size) and _is_count(records)
    return MemberMeta(name, size, digest, records) if valid and _is_sha256(digest) else None


def _check_size(meta: MemberMeta, records: int, width: int, add: _Add) -> None:
    """A vectors member's declared size against its chunk's records."""
    if meta.size != records * width:
        expected = f"{records * width} bytes ({records} vectors of {width})"
        add("size", expected, f"{meta.size} bytes", meta.name)


def _check_limit(meta: MemberMeta, add: _Add) -> None:
    if meta.size > fmt.MAX_MEMBER_BYTES:
        expected = f"at most {fmt.MAX_MEMBER_BYTES} bytes"
        add("limit", expected, f"{meta.size} bytes declared", meta.name)


def _check_members(value: object, width: int, add: _Add) -> list[MemberMeta] | None:
    if not isinstance(value, list):
        add("manifest", "members as an array", type(value).__name__)
        return None
    members: list[MemberMeta] = []
    for index, item in enumerate(value):
        meta = _member(item)
        if meta is None:
            expected = f"members[{index}] as {{name, records, sha256 (hex), size}}"
            add("manifest", expected, repr(item)[:200])
            return None
        expected_name = fmt.expected_names(index // 2)[index % 2]
        if meta.name != expected_name:
            add("member-name", f"members[{index}] named {expected_name!r}", repr(meta.name))
        members.append(meta)
    if len(members) % 2:
        expected = f"{fmt.expected_names(len(members) // 2)[1]!r} after {members[-1].name!r}"
        add("member-missing", expected, "the end of the member list")
        members.pop()
    for records, vectors in zip(members[0::2], members[1::2], strict=True):
        if not 1 <= records.records <= fmt.CHUNK_RECORDS:
            expected = f"1 to {fmt.CHUNK_RECORDS} records"
            add("record-count", expected, str(records.records), records.name)
        if vectors.records != records.records:
            expected = f"{records.records} records (as {records.name})"
            add("record-count", expected, str(vectors.records), vectors.name)
        _check_size(vectors, records.records, width, add)
        _check_limit(records, add)
        _check_limit(vectors, add)
    return members


# -- vector spaces beyond hotmem-hash-v1 ---------------------------------------------------------
def _check_spaces(
    value: object, chunk_records: list[int], add: _Add
) -> tuple[SpaceMeta, ...] | None:
    """Check ``spaces``; ``None`` when their members cannot be located or sized."""
    if not isinstance(value, list) or not value:
        expected = "spaces as a non-empty array (a package without further spaces omits it)"
        add("manifest", expected, repr(value)[:200])
        return None
    if len(value) > fmt.MAX_SPACES:
        add("limit", f"at most {fmt.MAX_SPACES} spaces", f"{len(value)} spaces")
        return None
    spaces: list[SpaceMeta] = []
    for index, item in enumerate(value):
        where = f"spaces[{index}]"
        if not isinstance(item, dict) or item.keys() != _SPACE_KEYS:
            expected = f"{where} as {{{', '.join(sorted(_SPACE_KEYS))}}}"
            add("manifest", expected, repr(item)[:200])
            return None
        space = _check_space(item, where, chunk_records, add)
        if space is None:
            return None
        spaces.append(space)
    names = [space.name for space in spaces]
    if names != sorted(set(names)):
        duplicates = sorted({name for name in names if names.count(name) > 1})
        found = f"duplicate {', '.join(map(repr, duplicates))}" if duplicates else repr(names)
        add("space-name", "spaces sorted by name, each once", found)
        return None
    return tuple(spaces)


def _check_space(
    item: dict[str, object], where: str, chunk_records: list[int], add: _Add
) -> SpaceMeta | None:
    name, model_id, digest = item["name"], item["model_id"], item["digest"]
    dimension, dtype = item["dimension"], item["dtype"]
    if not isinstance(name, str) or not fmt.SPACE_NAME.fullmatch(name) or name == MODEL_NAME:
        expected = (
            f"{where}.name as a model id ({fmt.SPACE_NAME.pattern}) other than {MODEL_NAME!r}"
        )
        add("space-name", expected, repr(name)[:200])
        return None
    if model_id != name:
        add("space-name", f"{where}.model_id equal to its name {name!r}", repr(model_id)[:200])
    if not _is_sha256(digest):
        add("space-digest", f"{where}.digest as 64 lowercase hex digits", repr(digest)[:200])
    if type(dimension) is not int or not 0 < dimension <= fmt.MAX_DIMENSION:
        expected = f"{where}.dimension as an integer from 1 to {fmt.MAX_DIMENSION}"
        add("space-dimension", expected, repr(dimension)[:200])
        return None
    if dtype != fmt.VECTOR_DTYPE:
        add("space-dtype", f"{where}.dtype {fmt.VECTOR_DTYPE!r}", repr(dtype)[:200])
    metas = _space_members(item["members"], name, 4 * dimension, where, chunk_records, add)
    if metas is None:
        return None
    return SpaceMeta(name, name, str(digest), dimension, str(dtype), tuple(metas))


def _space_members(
    members: object, name: str, width: int, where: str, chunk_records: list[int], add: _Add
) -> list[MemberMeta] | None:
    """The members of the space ``name`` (``where`` in the manifest), one per chunk of
    ``chunk_records`` records, of ``width`` bytes a vector; ``None`` when unreadable."""
    if not isinstance(members, list) or len(members) != len(chunk_records):
        found = f"{len(members)} members" if isinstance(members, list) else repr(members)[:200]
        add("member-missing", f"{where}.members: one per chunk, {len(chunk_records)}", found)
        return None
    metas: list[MemberMeta] = []
    for chunk, (entry, records) in enumerate(zip(members, chunk_records, strict=True)):
        meta = _member(entry)
        if meta is None:
            expected = f"{where}.members[{chunk}] as {{name, records, sha256 (hex), size}}"
            add("manifest", expected, repr(entry)[:200])
            return None
        expected_name = fmt.space_member_name(name, chunk)
        if meta.name != expected_name:
            add("member-name", f"{where}.members[{chunk}] named {expected_name!r}", repr(meta.name))
        if meta.records != records:
            expected = f"{records} records (as {fmt.expected_names(chunk)[0]})"
            add("record-count", expected, str(meta.records), meta.name)
        _check_size(meta, records, width, add)
        _check_limit(meta, add)
        metas.append(meta)
    return metas
