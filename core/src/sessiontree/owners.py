"""Tenant-bound repositories: :class:`Owner` and the owner view ``repo.for_owner(owner)`` returns.

An owner is stored with its session's metadata, under :data:`OWNER_KEY` of ``SessionMetadata.extra``
(for JSONL an extra header key, which pi keeps and ignores). The view is written once here over three
hooks a repository fills in (:class:`SupportsOwners`); every refusal it gives for a session that is
missing or belongs to someone else is the same :class:`SessionNotFoundError` text, so ids cannot be
probed through it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

import attrs

from .contracts import ForkOptions, Session
from .errors import InvalidArgumentError, SessionNotFoundError, SessionOpenError, UnsupportedOperationError
from .model import JsonValue, SessionMetadata

__all__ = [
    "OWNER_KEY",
    "OwnedRepo",
    "Owner",
    "SupportsOwners",
    "SupportsOwnerBinding",
    "bind_owner",
    "not_found",
    "owner_extra",
    "owner_of",
]

OWNER_KEY = "sessiontreeOwner"
"""The metadata (JSONL header) key holding a session's owner: ``{"tenant": ..., "user": ...}``."""


def _non_empty(instance: Any, attribute: attrs.Attribute[Any], value: object) -> None:
    if type(value) is not str or not value:
        raise InvalidArgumentError(f"Owner.{attribute.name} must be a non-empty string, got {value!r}")


@attrs.frozen
class Owner:
    """The trusted tenant and user a repository view is bound to."""

    tenant: str = attrs.field(validator=_non_empty)
    user: str = attrs.field(validator=_non_empty)

    def to_json(self) -> dict[str, JsonValue]:
        """The stored form: ``{"tenant": ..., "user": ...}``."""
        return {"tenant": self.tenant, "user": self.user}


def owner_of(metadata: SessionMetadata) -> Owner | None:
    """The owner stored in ``metadata`` (``None`` for an unowned session or a malformed owner value)."""
    stored = metadata.extra.get(OWNER_KEY)
    if not isinstance(stored, Mapping) or set(stored) != {"tenant", "user"}:
        return None
    tenant, user = stored["tenant"], stored["user"]
    if type(tenant) is not str or type(user) is not str or not tenant or not user:
        return None
    return Owner(tenant, user)


def owner_extra(extra: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
    """The owner entry of a metadata/header ``extra`` (what a fork copies), or an empty dict."""
    return {OWNER_KEY: extra[OWNER_KEY]} if OWNER_KEY in extra else {}


def not_found(session_id: str) -> SessionNotFoundError:
    """The one refusal an owner view gives for a session it may not see, missing or not."""
    return SessionNotFoundError(f"Unknown session: {session_id}")


@runtime_checkable
class SupportsOwners(Protocol):
    """What a repository fills in so :class:`OwnedRepo` can scope it. Its ``fork`` must keep the
    source's owner."""

    def stored_sessions(self, ref: SessionMetadata | str) -> list[SessionMetadata]:
        """The stored metadata of the sessions ``ref`` names, read from the store (never trusted from
        ``ref``): every session with that id, or the one session ``ref`` describes; empty when none."""
        ...

    def create_owned(
        self, owner: Owner, *, id: str | None = None, cwd: str | None = None, parent_session_id: str | None = None
    ) -> Session:
        """``create``, storing ``owner`` with the new session."""
        ...


class OwnedRepo:
    """A repository view that sees only ``owner``'s sessions (what ``repo.for_owner(owner)`` returns).

    ``create`` and ``fork`` store the owner with the new session; ``open``, ``fork`` and ``delete`` of a
    session that is missing or not ``owner``'s raise :func:`not_found`'s error; ``list`` keeps only
    ``owner``'s sessions. A view cannot be re-bound to another owner. Closing it closes the scoped
    repository only when ``close_repo`` (the view is all its caller holds, as from ``open_repo``).
    """

    def __init__(self, repo: SupportsOwners, owner: Owner, *, close_repo: bool = False) -> None:
        if not isinstance(owner, Owner):
            raise InvalidArgumentError(f"for_owner needs an Owner, got {type(owner).__name__}")
        self.repo = repo
        self.owner = owner
        self._close_repo = close_repo

    def __repr__(self) -> str:
        return f"OwnedRepo({self.repo!r}, {self.owner!r})"

    def _resolve(self, ref: SessionMetadata | str) -> SessionMetadata:
        """The stored metadata of ``ref`` if it is this owner's; else the not-found refusal."""
        session_id = ref if isinstance(ref, str) else ref.id
        mine = [m for m in self.repo.stored_sessions(ref) if owner_of(m) == self.owner]
        if not mine:
            raise not_found(session_id)
        if len(mine) > 1:
            raise SessionOpenError(
                f"Session id {session_id} exists in several working directories; open the metadata list() returns"
            )
        return mine[0]

    def _mine(self, session: Session) -> Session:
        """``session`` if the store still says it is this owner's (a delete and re-create by another
        owner may have raced the lookup); else closed and refused."""
        if owner_of(session.metadata) != self.owner:
            session.close()
            raise not_found(session.metadata.id)
        return session

    def create(
        self, *, id: str | None = None, cwd: str | None = None, parent_session_id: str | None = None
    ) -> Session:
        """Create a session owned by :attr:`owner`."""
        return self.repo.create_owned(self.owner, id=id, cwd=cwd, parent_session_id=parent_session_id)

    def open(self, metadata: SessionMetadata | str) -> Session:
        """Open one of :attr:`owner`'s sessions (by id or metadata)."""
        resolved = self._resolve(metadata)
        try:
            return self._mine(self.repo.open(resolved))  # type: ignore[attr-defined]
        except SessionNotFoundError:
            raise not_found(resolved.id) from None

    def list(self, **options: Any) -> list[SessionMetadata]:
        """The repository's ``list(**options)``, keeping only :attr:`owner`'s sessions."""
        return [m for m in self.repo.list(**options) if owner_of(m) == self.owner]  # type: ignore[attr-defined]

    def fork(self, source: SessionMetadata | str, options: ForkOptions) -> Session:
        """Fork one of :attr:`owner`'s sessions; the fork is :attr:`owner`'s too."""
        resolved = self._resolve(source)
        try:
            return self.repo.fork(resolved, options)  # type: ignore[attr-defined,no-any-return]
        except SessionNotFoundError:
            raise not_found(resolved.id) from None

    def delete(self, metadata: SessionMetadata | str) -> None:
        """Delete one of :attr:`owner`'s (closed) sessions."""
        resolved = self._resolve(metadata)
        try:
            self.repo.delete(resolved)  # type: ignore[attr-defined]
        except SessionNotFoundError:
            raise not_found(resolved.id) from None

    def close(self) -> None:
        """Close the scoped repository if this view owns it (``close_repo``); else nothing."""
        if self._close_repo:
            self.repo.close()  # type: ignore[attr-defined]

    def __enter__(self) -> OwnedRepo:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@runtime_checkable
class SupportsOwnerBinding(Protocol):
    """A repository with its own owner views (e.g. each statement filtered by the owner in SQL):
    :func:`bind_owner` uses them instead of :class:`OwnedRepo`."""

    def bind_owner(self, owner: Owner) -> Any:
        """A view for ``owner`` that owns this repository (closing the view closes it)."""
        ...


def bind_owner(repo: Any, owner: Owner) -> Any:
    """A view of ``repo`` for ``owner`` that owns ``repo`` (closing the view closes it): what
    ``open_repo(url, owner=...)`` returns. The repository's own binding when it has one
    (:class:`SupportsOwnerBinding`), else :class:`OwnedRepo`. ``repo`` is closed when it cannot be bound."""
    if not isinstance(owner, Owner):
        repo.close()
        raise InvalidArgumentError(f"owner must be a sessiontree.owners.Owner, got {type(owner).__name__}")
    if isinstance(repo, SupportsOwnerBinding):
        try:
            return repo.bind_owner(owner)
        except BaseException:
            repo.close()
            raise
    if not isinstance(repo, SupportsOwners):
        repo.close()
        raise UnsupportedOperationError(
            f"{type(repo).__name__} cannot bind an owner (it does not implement sessiontree.owners.SupportsOwners)"
        )
    return OwnedRepo(repo, owner, close_repo=True)
