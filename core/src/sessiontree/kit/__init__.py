"""Toolkit for backend authors: the one commit validator and the read interface it needs.

A backend commits by calling :func:`prepare_commit` (preconditions, content checks, stamping and pi's
validation, reading the state only through :class:`CommitReader`), writing the prepared writes, then
applying them; a replay of stored writes calls :func:`validate_committed`. See
:mod:`sessiontree.kit.validation` for every call site.
"""

from .validation import CommitReader, PreparedCommit, prepare_commit, proves_entry_chain, validate_committed

__all__ = ["CommitReader", "PreparedCommit", "prepare_commit", "proves_entry_chain", "validate_committed"]
