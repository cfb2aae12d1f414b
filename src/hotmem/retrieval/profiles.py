"""Retrieval profiles: a retrieval configuration as a named, frozen value.

A profile says which channels a search uses and how it fuses them:

- ``vector``: the cosine channel, or ``None``: the vector space (``hotmem-hash-v1``), its
  weight, and its relevance floor (a memory without a lexical match is a candidate only with
  ``cosine >= floor``);
- ``lexical``: the BM25 channel over the word and CJK indexes, or ``None``: its weight, and an
  optional ``gate`` (a lexical match is a candidate only with ``cosine >= gate``);
- ``importance``: the weight of the memory's static importance;
- ``fusion``: ``"weighted"`` (``score = w_vector * cosine + w_lexical * normalised_bm25 +
  w_importance * importance``, docs/ranking.md) or ``"rrf"`` (reciprocal-rank fusion:
  ``score = w_vector / (rrf_k + vector rank) + w_lexical / (rrf_k + lexical rank)``, each rank
  counted among that channel's candidates in scope, the first ``depth`` of them; importance
  plays no part);
- ``reranker``: a deterministic reranker applied after fusion and the floor, or ``None``:
  ``hotmem.MMR`` (maximal marginal relevance over the fused top ``pool``, ``rerank.py``);
- ``depth``: how many candidates each channel ranks for reciprocal-rank fusion.

``PROFILES`` holds the built-ins; ``default`` is the production stack, and ``default+mmr`` is
``default`` with the MMR reranker. ``semantic`` replaces its cosine channel with the
``all-minilm-l6-v2`` space (the ``semantic`` extra; the store must have the space,
``hotmem reindex --space all-minilm-l6-v2``) and gates lexical matches on it;
``semantic-only`` ranks by that cosine alone, and ``semantic+mmr`` is ``semantic`` with the MMR
reranker measuring similarity in the semantic space. A profile is part of every result's provenance:
``to_dict`` gives the JSON configuration the evaluator records, and ``Profile.from_mapping``
reads one back (or from a TOML table).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from hotmem.embedding import SEMANTIC_MODEL
from hotmem.errors import ValidationError
from hotmem.records import record, replace
from hotmem.retrieval.channels import (
    MAX_WEIGHT,
    LexicalChannel,
    VectorChannel,
    checked_integer,
    checked_number,
)
from hotmem.retrieval.fusion import WEIGHTS, Weights
from hotmem.retrieval.rerank import MMR, Reranker, reranker_from_mapping

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (hotmem.records)
if TYPE_CHECKING:
    from typing import Literal


__all__ = [
    "DEFAULT_PROFILE",
    "PROFILES",
    "SEMANTIC_FLOOR",
    "SEMANTIC_GATE",
    "Channel",
    "Fusion",
    "LexicalChannel",
    "Profile",
    "VectorChannel",
    "customised",
    "resolve_profile",
]

if TYPE_CHECKING:
    Fusion = Literal["weighted", "rrf"]
    #: The channels a profile may drop (``Profile.without``, the evaluator's ablation).
    Channel = Literal["vector", "lexical", "importance"]
else:  # at run time, what the values are
    Fusion = Channel = str
_FUSIONS: tuple[Fusion, ...] = ("weighted", "rrf")
DEFAULT_PROFILE = "default"
_MAX_NAME = 64
_MAX_DEPTH = 10_000
_MAX_RRF_K = 1_000_000
#: The floors of the all-minilm-l6-v2 space, as ``benchmarks/floor_calibration.py --space
#: all-minilm-l6-v2`` computes them on both committed fixtures (docs/semantic.md records the
#: run): the floor is the smallest multiple of 0.05 above the larger 99th percentile of
#: unrelated cosines, the gate the largest multiple of 0.05 at most the smaller 95th.
SEMANTIC_FLOOR = 0.45
SEMANTIC_GATE = 0.25
_FIELDS = ("vector", "lexical", "importance", "fusion", "rrf_k", "depth", "reranker")


@record
class Profile:
    """A named retrieval configuration (the module docstring describes each field).

    Raises:
        ValidationError: a field is out of range, both channels are off, or the lexical gate
            is set without a vector channel to measure cosine in.
    """

    name: str
    vector: VectorChannel | None = VectorChannel()
    lexical: LexicalChannel | None = LexicalChannel()
    importance: float = WEIGHTS.importance
    fusion: Fusion = "weighted"
    rrf_k: int = 60
    depth: int = 100
    reranker: Reranker | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not 0 < len(self.name) <= _MAX_NAME:
            raise ValidationError(
                f"a profile name must be text of 1..{_MAX_NAME} characters; found {self.name!r}"
            )
        if self.vector is None and self.lexical is None:
            raise ValidationError(
                f"profile {self.name!r} has neither a vector nor a lexical channel"
            )
        if self.lexical is not None and self.lexical.gate is not None and self.vector is None:
            raise ValidationError(
                f"profile {self.name!r}: lexical.gate needs a vector channel to measure cosine in"
            )
        object.__setattr__(
            self, "importance", checked_number("importance", self.importance, 0, 1e6)
        )
        if self.fusion not in _FUSIONS:
            raise ValidationError(
                f"fusion must be one of {', '.join(_FUSIONS)}; found {self.fusion!r}"
            )
        checked_integer("rrf_k", self.rrf_k, _MAX_RRF_K)
        checked_integer("depth", self.depth, _MAX_DEPTH)
        if self.reranker is not None and not isinstance(self.reranker, MMR):
            raise ValidationError(
                f"profile {self.name!r}: reranker must be a hotmem.MMR or None; "
                f"found {self.reranker!r}"
            )

    @property
    def spaces(self) -> tuple[str, ...]:
        """The vector spaces this profile reads (none without a vector channel)."""
        return () if self.vector is None else (self.vector.space,)

    def without(self, channel: Channel) -> Profile:
        """This profile with one channel removed, named ``"<name>-no-<channel>"`` (ablation).

        Raises:
            ValidationError: removing it would leave neither retrieval channel.
        """
        name = f"{self.name}-no-{channel}"
        if channel == "vector":
            return replace(self, name=name, vector=None, lexical=_ungated(self.lexical))
        if channel == "lexical":
            return replace(self, name=name, lexical=None)
        return replace(self, name=name, importance=0.0)

    def to_dict(self) -> dict[str, object]:
        """The profile as JSON-ready data (what results record as their provenance)."""
        return {
            "name": self.name,
            "vector": None if self.vector is None else self.vector.to_dict(),
            "lexical": None if self.lexical is None else self.lexical.to_dict(),
            "importance": self.importance,
            "fusion": self.fusion,
            "rrf_k": self.rrf_k,
            "depth": self.depth,
            "reranker": None if self.reranker is None else self.reranker.to_dict(),
        }

    @classmethod
    def from_mapping(cls, name: str, fields: Mapping[str, object]) -> Profile:
        """A profile from JSON/TOML-like data with ``to_dict``'s keys, each optional (missing
        ones take the ``default`` profile's values; a ``name`` key is ignored); ``vector`` and
        ``lexical`` may be ``false`` to turn a channel off, or a table of the channel's fields;
        ``reranker`` is ``false`` (none, the default) or a table such as
        ``{kind = "mmr", lambda = 0.7, pool = 20, space = "hotmem-hash-v1"}``.

        Raises:
            ValidationError: an unknown key, or a value of the wrong type or out of range.
        """
        if not isinstance(fields, Mapping):
            raise ValidationError(f"profile {name!r} must be a table of fields; found {fields!r}")
        unknown = sorted(set(fields) - set(_FIELDS) - {"name"})
        if unknown:
            raise ValidationError(
                f"profile {name!r}: unknown field(s) {', '.join(map(repr, unknown))}; "
                f"expected some of {', '.join(_FIELDS)}"
            )
        base = PROFILES[DEFAULT_PROFILE]
        fusion = _fusion(name, fields.get("fusion", base.fusion))
        try:
            reranker = reranker_from_mapping(fields.get("reranker"))
        except ValidationError as exc:
            raise ValidationError(f"profile {name!r}: {exc}") from None
        return cls(
            name=name,
            vector=_vector(name, fields.get("vector", True)),
            lexical=_lexical(name, fields.get("lexical", True)),
            importance=checked_number(
                "importance", fields.get("importance", base.importance), 0, 1e6
            ),
            fusion=fusion,
            rrf_k=checked_integer("rrf_k", fields.get("rrf_k", base.rrf_k), _MAX_RRF_K),
            depth=checked_integer("depth", fields.get("depth", base.depth), _MAX_DEPTH),
            reranker=reranker,
        )


def _fusion(profile: str, value: object) -> Fusion:
    for method in _FUSIONS:
        if value == method:
            return method
    raise ValidationError(
        f"profile {profile!r}: fusion must be one of {', '.join(_FUSIONS)}; found {value!r}"
    )


def _ungated(channel: LexicalChannel | None) -> LexicalChannel | None:
    """The lexical channel without its gate (a gate needs the vector channel)."""
    return None if channel is None else replace(channel, gate=None)


def _table(profile: str, key: str, value: object, allowed: tuple[str, ...]) -> Mapping[str, object]:
    if not isinstance(value, Mapping):
        raise ValidationError(
            f"profile {profile!r}: {key} must be a table of fields or false; found {value!r}"
        )
    extra = sorted(set(value) - set(allowed))
    if extra:
        raise ValidationError(
            f"profile {profile!r}: {key} takes the fields {', '.join(allowed)}; "
            f"found {', '.join(map(repr, extra))}"
        )
    return value


def _vector(profile: str, value: object) -> VectorChannel | None:
    if value is False or value is None:
        return None
    base = PROFILES[DEFAULT_PROFILE].vector or VectorChannel()
    if value is True:
        return base
    fields = _table(profile, "vector", value, ("space", "weight", "floor"))
    space = fields.get("space", base.space)
    if not isinstance(space, str):
        raise ValidationError(
            f"profile {profile!r}: vector.space must be a model id; found {space!r}"
        )
    return VectorChannel(
        space=space,
        weight=checked_number("vector.weight", fields.get("weight", base.weight), 0, MAX_WEIGHT),
        floor=checked_number("vector.floor", fields.get("floor", base.floor), -1.0, 1.0),
    )


def _lexical(profile: str, value: object) -> LexicalChannel | None:
    if value is False or value is None:
        return None
    base = PROFILES[DEFAULT_PROFILE].lexical or LexicalChannel()
    if value is True:
        return base
    fields = _table(profile, "lexical", value, ("weight", "gate"))
    gate = fields.get("gate", base.gate)
    return LexicalChannel(
        weight=checked_number("lexical.weight", fields.get("weight", base.weight), 0, MAX_WEIGHT),
        gate=None if gate is None else checked_number("lexical.gate", gate, -1.0, 1.0),
    )


PROFILES: Mapping[str, Profile] = MappingProxyType(
    {
        profile.name: profile
        for profile in (
            Profile(DEFAULT_PROFILE),
            Profile("cosine-only", vector=VectorChannel(weight=1.0), lexical=None, importance=0.0),
            Profile("bm25-only", vector=None, lexical=LexicalChannel(weight=1.0), importance=0.0),
            Profile(
                "rrf",
                vector=VectorChannel(weight=1.0),
                lexical=LexicalChannel(weight=1.0),
                importance=0.0,
                fusion="rrf",
            ),
            Profile(f"{DEFAULT_PROFILE}+mmr", reranker=MMR()),
            Profile(
                "semantic",
                vector=VectorChannel(space=SEMANTIC_MODEL, weight=0.6, floor=SEMANTIC_FLOOR),
                lexical=LexicalChannel(weight=0.2, gate=SEMANTIC_GATE),
                importance=0.2,
            ),
            Profile(
                "semantic-only",
                vector=VectorChannel(space=SEMANTIC_MODEL, weight=1.0, floor=SEMANTIC_FLOOR),
                lexical=None,
                importance=0.0,
            ),
            Profile(
                "semantic+mmr",
                vector=VectorChannel(space=SEMANTIC_MODEL, weight=0.6, floor=SEMANTIC_FLOOR),
                lexical=LexicalChannel(weight=0.2, gate=SEMANTIC_GATE),
                importance=0.2,
                reranker=MMR(space=SEMANTIC_MODEL),
            ),
        )
    }
)


def customised(
    profile: Profile, *, min_similarity: float | None = None, weights: Weights | None = None
) -> Profile:
    """``profile`` with another relevance floor and/or other fusion weights, named
    ``"custom"``; ``profile`` itself when neither is given.

    Raises:
        ValidationError: ``weights`` is not a ``Weights`` of non-negative numbers,
            ``min_similarity`` is not in [-1, 1], or the profile has no vector channel to put
            a floor on.
    """
    if min_similarity is None and weights is None:
        return profile
    vector, words, importance = profile.vector, profile.lexical, profile.importance
    if weights is not None:
        if not isinstance(weights, Weights):
            raise ValidationError(f"weights must be a hotmem.Weights; found {weights!r}")
        if vector is not None:
            vector = replace(vector, weight=weights.cosine)
        if words is not None:
            words = replace(words, weight=weights.bm25)
        importance = checked_number("weights.importance", weights.importance, 0, MAX_WEIGHT)
    if min_similarity is not None:
        floor = checked_number("min_similarity", min_similarity, -1.0, 1.0)
        if vector is None:
            raise ValidationError(
                f"min_similarity needs a vector channel; profile {profile.name!r} has none"
            )
        vector = replace(vector, floor=floor)
    return replace(profile, name="custom", vector=vector, lexical=words, importance=importance)


def resolve_profile(profile: str | Profile | None, *, default: str = DEFAULT_PROFILE) -> Profile:
    """The built-in profile named ``profile`` (``default`` for ``None``), or ``profile`` itself.

    Raises:
        ValidationError: no built-in profile has this name.
    """
    if profile is None:
        profile = default
    if isinstance(profile, Profile):
        return profile
    if not isinstance(profile, str) or profile not in PROFILES:
        raise ValidationError(
            f"unknown profile {profile!r}; expected one of {', '.join(PROFILES)} "
            "or a hotmem.Profile"
        )
    return PROFILES[profile]
