"""One search request: the query, its scope, how many results, and the profile it runs.

``search_memories``, ``explain`` and ``diagnose`` take the same arguments; each makes one
:class:`SearchRequest`, which checks them once, and resolves its profile against the store
(:meth:`SearchRequest.profile_for`), in the read transaction of the search.
"""

from __future__ import annotations

from hotmem.errors import ValidationError
from hotmem.fields import lookup_text, unicode_breach
from hotmem.records import record
from hotmem.retrieval.fusion import Weights
from hotmem.retrieval.kept_profiles import resolve_in
from hotmem.retrieval.profiles import Profile, customised
from hotmem.store.memory_store import MemoryStore

__all__ = ["MAX_LIMIT", "SearchRequest"]

MAX_LIMIT = 10_000


@record
class SearchRequest:
    """What to rank and how (the arguments of ``hotmem.search_memories``).

    Attributes:
        query: any text; it is never interpreted as FTS5 syntax.
        identifier: restrict the search to this identifier's memories (``None``: every one).
        limit: the number of results wanted, 1..``MAX_LIMIT``.
        profile: a built-in profile's name or a :class:`hotmem.Profile`; ``None`` is the
            store's default profile.
        min_similarity: overrides the profile's relevance floor.
        weights: overrides the profile's fusion weights.

    Raises:
        ValidationError: an argument has the wrong type or is out of range (checked when the
            request is made).
    """

    query: str
    identifier: str | None = None
    limit: int = 5
    profile: str | Profile | None = None
    min_similarity: float | None = None
    weights: Weights | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.query, str):
            raise ValidationError(f"query must be a string; found {type(self.query).__name__}")
        breach = unicode_breach("query", self.query)
        if breach is not None:
            raise ValidationError(str(breach))
        if self.identifier is not None:
            if not isinstance(self.identifier, str):
                raise ValidationError(
                    f"identifier must be a string or None; found {type(self.identifier).__name__}"
                )
            lookup_text("identifier", self.identifier)
        limit = self.limit
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
            raise ValidationError(
                f"limit must be an integer in 1..{MAX_LIMIT}; found limit={limit!r}"
            )

    def profile_for(self, store: MemoryStore) -> Profile:
        """The profile this request runs on ``store``: its own (or the store's default), with
        the overrides (then named ``"custom"``).

        Raises:
            ValidationError: an unknown profile name, an override out of range, or a vector
                space the store does not have (the message says how to build it).
        """
        chosen = customised(
            resolve_in(store, self.profile, default=store.default_profile),
            min_similarity=self.min_similarity,
            weights=self.weights,
        )
        have = [s.name for s in store.spaces]
        if chosen.vector is not None and chosen.vector.space not in have:
            name = chosen.vector.space
            raise ValidationError(
                f"profile {chosen.name!r} needs the vector space {name!r}, which store "
                f"{store.path!r} does not have (it has {', '.join(have)}); "
                f"build it with `hotmem reindex --space {name}` or store.add_space({name!r})"
            )
        if chosen.reranker is not None and chosen.reranker.space not in have:
            name = chosen.reranker.space
            raise ValidationError(
                f"profile {chosen.name!r}: its mmr reranker needs the vector space {name!r}, "
                f"which store {store.path!r} does not have; build it with "
                f"`hotmem reindex --space {name}`"
            )
        return chosen
