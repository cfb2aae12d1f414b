"""What verify and hydrate do with each vector space of a package, decided before any row.

A package's further spaces (``Manifest.spaces``) carry vectors made by a model with a digest.
This HotMem can use them as they are only when it knows the model and its own embedder has the
same digest, dimension and dtype. Otherwise hydration refuses the package unless told to
rebuild the space with this HotMem's embedder (``reindex``) or to leave it out (``drop``);
verification with ``recompute_vectors`` says which spaces it could not recompute.

Carrying a space compares identities only (``hotmem.embedding.registry.embedder_identity``:
the model files hashed, no session built); the embedder is loaded only when vectors are computed
(reindexed, or recomputed to check them).
"""

from __future__ import annotations

import os
from collections.abc import Collection
from typing import Literal

from hotmem.embedding.hash_v1 import MODEL_NAME
from hotmem.embedding.registry import (
    EMBEDDERS,
    Embedder,
    EmbedderIdentity,
    embedder_identity,
    get_embedder,
    identity_of,
)
from hotmem.errors import EmbedderError, HydrationError, MissingExtraError, ValidationError
from hotmem.records import record
from hotmem.snapshot.manifest import SpaceMeta

__all__ = ["Action", "SpaceChoice", "carry_refusal", "plan_spaces", "usable_embedder"]

#: ``carry``: load the package's vectors; ``reindex``: embed the facts with this HotMem's
#: embedder instead; ``drop``: leave the space out of the target.
Action = Literal["carry", "reindex", "drop"]


@record
class SpaceChoice:
    """One space of a package and what hydration does with it.

    Attributes:
        space: the space as the manifest declares it.
        action: what hydration does (``Action``).
        embedder: this HotMem's embedder of the space when hydration computes vectors with
            it (reindexed, or carried with ``recompute_vectors``), else ``None``.
    """

    space: SpaceMeta
    action: Action
    embedder: Embedder | None


def _mismatch(space: SpaceMeta, ours: EmbedderIdentity) -> str | None:
    for field, mine in (
        ("digest", ours.digest),
        ("dimension", ours.dimension),
        ("dtype", ours.dtype),
    ):
        theirs = getattr(space, field)
        if theirs != mine:
            return (
                f"this HotMem's {space.model_id} has {field} {mine!r}, the package's "
                f"{field} {theirs!r} (another model made its vectors)"
            )
    return None


def _unknown(space: SpaceMeta) -> str | None:
    if space.model_id in EMBEDDERS:
        return None
    return f"this HotMem has no embedder {space.model_id!r} (it has {', '.join(EMBEDDERS)})"


def usable_embedder(space: SpaceMeta, model_dir: str | os.PathLike[str] | None) -> Embedder | str:
    """This HotMem's embedder for ``space`` when it makes the package's vectors, else why not.

    The reason is one sentence: the model is unknown, its extra is missing, its files cannot
    be loaded, or it is another model (digest, dimension or dtype) than the package's.
    """
    unknown = _unknown(space)
    if unknown is not None:
        return unknown
    embedder = _target_embedder(space, model_dir)
    if isinstance(embedder, str):
        return embedder
    mismatch = _mismatch(space, identity_of(embedder))
    return embedder if mismatch is None else mismatch


def carry_refusal(space: SpaceMeta, model_dir: str | os.PathLike[str] | None) -> str | None:
    """Why this HotMem cannot carry the package's vectors of ``space`` as they are, or
    ``None`` when it can: the reasons of ``usable_embedder``, decided from the embedder's
    identity (its files hashed), without loading it."""
    unknown = _unknown(space)
    if unknown is not None:
        return unknown
    try:
        identity = embedder_identity(space.model_id, model_dir=model_dir)
    except (MissingExtraError, EmbedderError, ValidationError) as error:
        return str(error)
    return _mismatch(space, identity)


def _target_embedder(space: SpaceMeta, model_dir: str | os.PathLike[str] | None) -> Embedder | str:
    try:
        return get_embedder(space.model_id, model_dir=model_dir)
    except (MissingExtraError, EmbedderError, ValidationError) as error:
        return str(error)


def _option(flag: str, name: str) -> str:
    return f"{flag} {name}"


def _check_names(names: Collection[str], option: str, spaces: tuple[SpaceMeta, ...]) -> None:
    known = [space.name for space in spaces]
    for name in names:
        if name == MODEL_NAME:
            raise HydrationError(
                f"{option} {name}: {MODEL_NAME!r} is not a further space; its vectors are "
                "always carried (recompute them with --recompute-vectors)"
            )
        if name not in known:
            held = ", ".join(map(repr, known)) or "none beyond hotmem-hash-v1"
            raise HydrationError(
                f"{option} {name}: the package holds no space {name!r} (its spaces: {held})"
            )


def plan_spaces(
    spaces: tuple[SpaceMeta, ...],
    *,
    reindex: Collection[str] = (),
    drop: Collection[str] = (),
    model_dir: str | os.PathLike[str] | None = None,
    recompute_vectors: bool = False,
    sample: bool = False,
) -> list[SpaceChoice]:
    """Decide, for every space of a package, what hydration does with it.

    The identity of the embedder decides whether a space can be carried (``carry_refusal``:
    the model's extra installed, the same model files). A carried space's embedder is then
    loaded, with ``recompute_vectors`` to check every vector, with ``sample`` to check a sample
    (``vector_checks.SAMPLE_STRIDE``; should it fail to load, the space is carried unchecked).

    Raises:
        HydrationError: a space cannot be carried and is neither reindexed nor dropped; a
            space to reindex has no usable embedder here; ``reindex`` or ``drop`` names a space
            the package lacks, ``hotmem-hash-v1``, or one space in both. The message names the
            space, the reason and the options.
    """
    _check_names(reindex, "--reindex", spaces)
    _check_names(drop, "--drop-space", spaces)
    both = sorted(set(reindex) & set(drop))
    if both:
        raise HydrationError(
            f"space {both[0]!r} is given to both --reindex and --drop-space; choose one"
        )
    choices = []
    for space in spaces:
        if space.name in drop:
            choices.append(SpaceChoice(space, "drop", None))
            continue
        if space.name in reindex:
            embedder = _target_embedder(space, model_dir)
            if isinstance(embedder, str):
                raise HydrationError(
                    f"cannot reindex the package's space {space.name!r}: {embedder}; pass "
                    f"{_option('--drop-space', space.name)} to hydrate without it; "
                    "nothing was written"
                )
            choices.append(SpaceChoice(space, "reindex", embedder))
            continue
        carried: Embedder | None = None
        if recompute_vectors:  # its vectors are checked: the embedder itself is needed
            usable = usable_embedder(space, model_dir)
            refusal, carried = (usable, None) if isinstance(usable, str) else (None, usable)
        else:
            refusal = carry_refusal(space, model_dir)
            if refusal is None and sample:
                loaded = _target_embedder(space, model_dir)
                carried = None if isinstance(loaded, str) else loaded
        if refusal is not None:
            raise HydrationError(
                f"the package's vector space {space.name!r} (digest {space.digest[:12]}...) "
                f"cannot be used as it is: {refusal}; pass {_option('--reindex', space.name)} "
                f"to rebuild it with this HotMem's embedder, or "
                f"{_option('--drop-space', space.name)} to hydrate without it "
                "(hydrate(..., reindex=[...], drop_spaces=[...])); nothing was written"
            )
        choices.append(SpaceChoice(space, "carry", carried))
    return choices
