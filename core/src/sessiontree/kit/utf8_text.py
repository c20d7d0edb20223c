"""Identifiers a UTF-8 text column cannot hold: the lone surrogates a Python ``str`` may carry.

JSON writes a lone surrogate as ``\\udXXX`` (pi's JSONL does), so payloads and JSONL files keep one; a
backend that stores an id, a custom type or an address part in a UTF-8 text column (SQLite) cannot. It
refuses such a commit with :func:`unencodable_identifier`'s error, and answers a read that names such an
identifier as it answers any identifier that is not stored (:func:`is_utf8_text`). A repository refuses
such a session id, cwd or parent id the same way (:func:`require_utf8_text`). Text that is only shown or
named after (a directory named from a cwd, an HTML page) takes U+FFFD for it, as Node does
(:func:`well_formed`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ..errors import StorageContentError
from ..writes import EntryWrite, ListAppend, ListDelete, UsageWrite, ValueDelete, ValueSet, Write

__all__ = [
    "is_utf8_text",
    "require_utf8_text",
    "unencodable_identifier",
    "unencodable_text_error",
    "well_formed",
]

_ADDRESS_WRITES = (ValueSet, ValueDelete, ListAppend, ListDelete)


def is_utf8_text(text: str) -> bool:
    """True unless ``text`` holds a lone surrogate (what UTF-8 cannot encode)."""
    if text.isascii():
        return True
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def well_formed(text: str) -> str:
    """JS ``String.prototype.toWellFormed``: a surrogate pair joined, a lone surrogate replaced by U+FFFD
    (what Node writes for one in a path or a file's text)."""
    if text.isascii():
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def unencodable_text_error(field: str, text: str, holder: str) -> StorageContentError:
    """The refusal of ``text`` (the value of ``field``), which ``holder`` (e.g. "SQLite's text columns")
    cannot hold."""
    surrogate = next(char for char in text if 0xD800 <= ord(char) <= 0xDFFF)
    return StorageContentError(
        field, f"is {text!r:.80}, with a lone surrogate (U+{ord(surrogate):04X}) that {holder} cannot hold"
    )


def require_utf8_text(text: object, field: str, holder: str) -> None:
    """Refuse (:func:`unencodable_text_error`) a ``str`` holding a lone surrogate, e.g. a session id
    a repository would store in a text column; anything else passes."""
    if type(text) is str and not is_utf8_text(text):
        raise unencodable_text_error(field, text, holder)


def unencodable_identifier(writes: Iterable[Write], holder: str) -> StorageContentError | None:
    """The refusal naming the first identifier of ``writes`` (an entry's ``id``, ``parentId``, ``type``
    or ``customType``, a usage row's ``id`` or ``entryId``, an address's ``namespace`` or ``key``) that
    UTF-8 cannot encode, or ``None`` when every one can."""
    for write in writes:
        for field, text in _identifiers(write):
            if type(text) is str and not is_utf8_text(text):
                return unencodable_text_error(field, text, holder)
    return None


def _identifiers(write: Write) -> Iterator[tuple[str, object]]:
    if isinstance(write, EntryWrite):
        entry = write.entry
        yield "id", entry.id
        yield "parentId", entry.parent_id
        yield "type", entry.type
        yield "customType", getattr(entry, "custom_type", None)
    elif isinstance(write, UsageWrite):
        yield "id", write.row.id
        yield "entryId", write.row.entry_id
    elif isinstance(write, _ADDRESS_WRITES):
        yield "namespace", write.namespace
        yield "key", write.key
