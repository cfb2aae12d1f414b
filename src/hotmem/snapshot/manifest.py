"""The manifest of a snapshot package: what it says, and writing it.

The manifest is ``manifest.json``, the first member: the format and version, the record count,
the embedding and FTS configuration the records were indexed with, every data member's size,
SHA-256 and record count, the vector spaces beyond ``hotmem-hash-v1`` with their members (only
when the store has any: ``spaces``), the store's default and kept profiles (only when it has
any but the built-in default: ``profiles``), and the content digest over the members in
package order.
Checking a manifest read from a package is ``manifest_check``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence

from hotmem.embedding.hash_v1 import DIMENSION, MODEL_NAME
from hotmem.records import record
from hotmem.snapshot import format as fmt
from hotmem.snapshot.profiles import ProfileSettings
from hotmem.store.fts import LEXICAL_INDEX
from hotmem.store.spaces import VectorSpace

__all__ = [
    "Manifest",
    "MemberMeta",
    "SpaceMeta",
    "content_digest",
    "manifest_bytes",
    "package_order",
]


@record
class MemberMeta:
    """What the manifest says about one data member."""

    name: str
    size: int
    sha256: str
    records: int

    def to_dict(self) -> dict[str, object]:
        """The member's entry in the manifest."""
        return {
            "name": self.name,
            "records": self.records,
            "sha256": self.sha256,
            "size": self.size,
        }


@record
class SpaceMeta:
    """What the manifest says about one vector space other than ``hotmem-hash-v1``.

    Attributes:
        name, model_id, digest, dimension, dtype: the space as the source store records it
            (``hotmem.VectorSpace``).
        members: its vectors, one member per chunk (``spaces/<name>/NNNNNN.f32``), in order.
    """

    name: str
    model_id: str
    digest: str
    dimension: int
    dtype: str
    members: tuple[MemberMeta, ...]

    @property
    def vector_bytes(self) -> int:
        """Bytes a vector."""
        return 4 * self.dimension

    @property
    def space(self) -> VectorSpace:
        """The space as a store records it."""
        return VectorSpace(self.name, self.model_id, self.digest, self.dimension, self.dtype)

    def to_dict(self) -> dict[str, object]:
        """The space's entry in the manifest."""
        return {
            "digest": self.digest,
            "dimension": self.dimension,
            "dtype": self.dtype,
            "members": [member.to_dict() for member in self.members],
            "model_id": self.model_id,
            "name": self.name,
        }


@record
class Manifest:
    """A checked manifest, as much of it as can be used to read the members.

    Attributes:
        record_count: the declared total, ``None`` when malformed.
        content_digest: the declared digest, ``None`` when malformed.
        members: the data members in order, records and vectors alternating.
        vector_bytes: bytes per vector the declared embedding implies.
        spaces: the further vector spaces, by name (empty for a package without any).
        profiles: the source store's default and kept profiles (``None``: the built-in
            ``default`` alone, or a package older than the field).
    """

    record_count: int | None
    content_digest: str | None
    members: list[MemberMeta]
    vector_bytes: int
    spaces: tuple[SpaceMeta, ...] = ()
    profiles: ProfileSettings | None = None

    def in_package_order(self) -> list[MemberMeta]:
        """Every data member, in the order the package holds them (``package_order``)."""
        return package_order(self.members, self.spaces)


def package_order(members: Sequence[MemberMeta], spaces: Sequence[SpaceMeta]) -> list[MemberMeta]:
    """The data members in package order: chunk by chunk, its records, its ``hotmem-hash-v1``
    vectors, then its vectors of each further space in the order of ``spaces``.

    Without spaces this is ``members`` itself, so such a package is what it was before spaces.
    """
    if not spaces:
        return list(members)
    ordered: list[MemberMeta] = []
    for chunk in range(len(members) // 2):
        ordered += members[2 * chunk : 2 * chunk + 2]
        ordered += [space.members[chunk] for space in spaces if chunk < len(space.members)]
    return ordered


def content_digest(members: Iterable[tuple[str, str]]) -> str:
    """SHA-256 of ``"<sha256>  <name>\\n"`` per data member, in manifest order.

    ``members`` yields ``(name, sha256 hex)``. The listing is exactly what ``sha256sum`` prints
    for the extracted members, so the digest can be recomputed with standard tools.
    """
    listing = "".join(f"{digest}  {name}\n" for name, digest in members)
    return hashlib.sha256(listing.encode("utf-8")).hexdigest()


def manifest_bytes(
    record_count: int,
    members: Sequence[MemberMeta],
    spaces: Sequence[SpaceMeta] = (),
    profiles: ProfileSettings | None = None,
) -> bytes:
    """The manifest for these data members: sorted keys, two-space indent, final newline.

    ``spaces`` adds the ``spaces`` field, ``profiles`` the ``profiles`` field; without them
    the manifest has no such field.
    """
    ordered = package_order(members, spaces)
    manifest: dict[str, object] = {
        "content_digest": content_digest((m.name, m.sha256) for m in ordered),
        "embedding": {"dimension": DIMENSION, "dtype": fmt.VECTOR_DTYPE, "model": MODEL_NAME},
        "format": fmt.FORMAT_NAME,
        "format_version": fmt.FORMAT_VERSION,
        "fts": {"columns": list(fmt.FTS_COLUMNS), "tokenizer": LEXICAL_INDEX},
        "members": [m.to_dict() for m in members],
        "record_count": record_count,
    }
    if spaces:
        manifest["spaces"] = [space.to_dict() for space in spaces]
    if profiles is not None:
        manifest["profiles"] = profiles.to_dict()
    return (json.dumps(manifest, ensure_ascii=False, indent=2, sort_keys=True) + "\n").encode()
