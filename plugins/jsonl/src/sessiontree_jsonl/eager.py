"""Opening a small format-4 file in one pass: every line parsed once, every entry built at open.

A lazy open (:mod:`sessiontree_jsonl.replay`) decodes only the structure of each line and leaves
payloads in the file; the first read of the branch then reads the file again and parses it whole
(:mod:`sessiontree_jsonl.bulk_read`). A runtime resuming a session does both at once, so for a body up
to :data:`EAGER_MAX_BYTES` (which the entry cache holds whole anyway) the open parses each line once
with orjson and builds the same state a lazy open plus a full read builds: the same lazy nodes with
the same spans, each holding its entry in the cache.

When every line from the first entry on is a message branch append written exactly as sessiontree's
encoder writes it (what a runtime's session holds), those lines are decoded by msgspec straight into
typed records instead of dicts, proven canonical by re-encoding each (:func:`_typed_appends`; a
resume of a 5k-message file went from 345 M to 289 M instructions, callgrind).

Runs of branch appends (``[entry, value set]`` lines, each entry the child of the one before) are
checked and applied a column at a time with the fast path's checks
(:func:`~sessiontree.kit.validation.proves_entry_chain`); their entries are built a layout at a time
as :func:`~sessiontree.wire.committed_write_from_wire` builds each. Any other line without an entry
takes the exact path (:meth:`Replayer._exact_line`). Anything else — a line orjson refuses (pi's
parser may still read it), an integer beyond 2**53, another line shape, a failed check — and
:func:`replay_whole` returns ``None``: the lazy replay then reads the file and raises pi's errors.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from itertools import accumulate, islice, repeat, starmap
from typing import Any, cast

import msgspec
import orjson

from sessiontree import jsjson
from sessiontree.engine import OnDemandEntry, SessionState
from sessiontree.errors import StorageError
from sessiontree.kit.validation import proves_entry_chain
from sessiontree.model import Entry, MessageEntry
from sessiontree.values import is_address
from sessiontree.wire.entries import build_entries
from sessiontree.wire.plain import are_plain_messages
from sessiontree.writes import ValueSet

from .bulk_read import entries_of_layout, record_layout
from .message_lines import MessageRecord, ValueSetRecord, encode_record
from .replay import EntrySource, LazyEntryNode, Replayer

__all__ = ["EAGER_MAX_BYTES", "may_replay_whole", "replay_whole"]

EAGER_MAX_BYTES = 4 << 20
"""Bodies up to this size are opened in one pass (larger ones lazily: their payloads stay in the file)."""

_VALUE_KEYS = ("kind", "op", "seq", "namespace", "key", "value")
_get_seq = operator.itemgetter("seq")
_get_id = operator.itemgetter("id")
_get_namespace = operator.itemgetter("namespace")
_get_key = operator.itemgetter("key")
_get_type_or_none = operator.methodcaller("get", "type")
_first = operator.itemgetter(0)
_second = operator.itemgetter(1)


def replay_whole(
    state: SessionState, source: EntrySource, data: bytes, body_offset: int
) -> tuple[int, int, int] | None:
    """Replay the complete lines of ``data`` (the body, read from ``body_offset``) into the empty
    ``state``; returns ``(bytes replayed, lines replayed, exact_from)``, or ``None`` when the lazy
    replay must decide (``state`` is then unusable: start again with a fresh one).

    ``exact_from`` is the offset from which every entry's text is proven to be what ``JSON.stringify``
    writes (:attr:`~sessiontree_jsonl.loading.Generation.exact_from`): the typed lines, when their
    messages are plain (:func:`_exact_from`); the end of the body otherwise."""
    cut = data.rfind(b"\n")
    if cut < 0:
        return None
    body = data[:cut]
    try:
        if not _opens_with_an_append(body):
            return None  # e.g. pi's own files (many entries a line): the lazy replay's chained lines
        if jsjson.may_hold_unsafe_integers(body):
            return None
        lines = body.split(b"\n")
        first_entry = _first_entry_line(lines)
        typed = _typed_appends(lines[first_entry:])
        parsed = list(map(orjson.loads, lines if typed is None else lines[:first_entry]))
    except orjson.JSONDecodeError:
        return None
    starts = list(accumulate((len(line) + 1 for line in lines), initial=body_offset))
    replayer = Replayer(state, source, path=source.path, first_line=2)
    try:
        index = 0
        count = len(parsed)
        while index < count:
            stop = _run_end(parsed, index)
            if stop > index:
                if not _apply_run(replayer, parsed[index:stop], starts, lines, index):
                    return None
                index = stop
                continue
            if _has_entry(parsed[index]):
                return None
            replayer.line = index + 1
            replayer._exact_line(lines[index])
            index += 1
        if typed is not None and not _apply_typed(replayer, typed, starts, count):
            return None
        replayer.finish()
    except (StorageError, ValueError, TypeError):
        return None
    return cut + 1, len(lines), _exact_from(typed, starts[first_entry], body_offset + cut + 1)


def _exact_from(
    typed: tuple[list[tuple[MessageRecord, ValueSetRecord]], list[int]] | None, start: int, end: int
) -> int:
    """Where the entry texts a fork may copy unchecked begin: ``start`` (the first typed line) when
    every typed message is plain, else ``end``.

    A typed line is its records' msgspec encoding byte for byte (:func:`_typed_appends`), and for a
    plain message (:mod:`sessiontree.wire.plain`: no float, no array-index key, safe integers) that is
    what ``JSON.stringify`` writes of what ``JSON.parse`` reads from it. One C pass over the messages
    spares a fork of the session parsing and re-encoding what it copies."""
    if typed is None or not are_plain_messages(list(map(_get_record_message, map(_first, typed[0])))):
        return end
    return start


def may_replay_whole(head: bytes) -> bool:
    """Whether a body starting with ``head`` may open in one pass: ``False`` when its first line
    holding an entry is not a branch append (or, cut by the end of ``head``, names several entries), so
    such a body (pi's own files) is read once, by the lazy replay."""
    start = 0
    while start < len(head):
        end = head.find(b"\n", start)
        if end < 0:
            return head.count(_ENTRY_KIND, start) <= 1
        if head.count(_ENTRY_KIND, start, end) > 1:
            return False
        try:
            line = orjson.loads(head[start:end])
        except orjson.JSONDecodeError:
            return False
        if _has_entry(line):
            return _is_append(line)
        start = end + 1
    return True


_ENTRY_KIND = b'"kind":"entry"'


def _opens_with_an_append(body: bytes) -> bool:
    """Whether the first line holding an entry is a branch append (checked before parsing the rest)."""
    start = 0
    while start <= len(body):
        end = body.find(b"\n", start)
        end = len(body) if end < 0 else end
        if body.count(_ENTRY_KIND, start, end) > 1:
            return False  # most likely many entries a line (pi's own files): not worth parsing to be sure
        line = orjson.loads(body[start:end])
        if _has_entry(line):
            return _is_append(line)
        start = end + 1
    return False


def _is_append(line: object) -> bool:
    return (
        type(line) is list
        and len(line) == 2
        and type(line[0]) is dict
        and type(line[1]) is dict
        and line[0].get("kind") == "entry"
        and tuple(line[1]) == _VALUE_KEYS
        and line[1]["kind"] == "value"
    )


def _has_entry(line: object) -> bool:
    records = line if type(line) is list else [line]
    return any(type(record) is not dict or record.get("kind") == "entry" for record in records)


def _run_end(parsed: list[Any], start: int) -> int:
    """The end of the run of chained branch appends starting at ``start`` (``start``: none)."""
    if not _is_append(parsed[start]):
        return start
    if _all_chained_appends(parsed, start):
        return len(parsed)
    previous = parsed[start][0].get("id")
    stop = start + 1
    count = len(parsed)
    while stop < count and _is_append(following := parsed[stop]) and following[0].get("parentId") == previous:
        previous = following[0].get("id")
        stop += 1
    return stop


def _all_chained_appends(parsed: list[Any], start: int) -> bool:
    """Whether every line from ``start`` on is a branch append extending the one before: what a
    runtime's session is, checked a column at a time."""
    lines = parsed[start:]
    if set(map(type, lines)) != {list} or set(map(len, lines)) != {2}:
        return False
    records = list(map(_first, lines))
    writes = list(map(_second, lines))
    if set(map(type, records)) != {dict} or set(map(type, writes)) != {dict}:
        return False
    if set(map(_get_kind, records)) != {"entry"} or set(map(tuple, writes)) != {_VALUE_KEYS}:
        return False
    if set(map(_get_kind, writes)) != {"value"}:
        return False
    ids = list(map(_get_id_or_none, records))
    return list(map(_get_parent_or_none, islice(records, 1, None))) == ids[:-1]


_get_kind = operator.methodcaller("get", "kind")
_get_id_or_none = operator.methodcaller("get", "id")
_get_parent_or_none = operator.methodcaller("get", "parentId")


def _apply_run(replayer: Replayer, run: list[Any], starts: list[int], lines: list[bytes], first: int) -> bool:
    """Check and apply chained branch appends (``run``, lines ``first`` on) as the fast path's
    ``_append_chain`` does, entries built and held; ``False`` when not proven."""
    records = list(map(_first, run))
    writes = list(map(_second, run))
    seqs = list(map(operator.methodcaller("get", "seq"), records))
    write_seqs = list(map(_get_seq, writes))
    addresses = list(zip(map(_get_namespace, writes), map(_get_key, writes), strict=True))
    if not _writes_in_order(seqs, write_seqs, map(operator.itemgetter("op"), writes), addresses):
        return False
    entries = _entries(records)
    if entries is None:
        return False
    values = list(map(operator.itemgetter("value"), writes))
    count = len(run)
    lengths = [len(line) for line in islice(lines, first, first + count)]
    offsets = starts[first : first + count]
    # Each entry is element 0 of its line; a bulk read of these lines keeps it at half the line's bytes.
    return _apply_checked(
        replayer, entries, (seqs, write_seqs, addresses, values), (offsets, lengths, 0), first
    )


def _writes_in_order(
    seqs: list[Any], write_seqs: list[Any], ops: Iterable[Any], addresses: list[tuple[Any, Any]]
) -> bool:
    """Whether each line's entry seq, then its value set's, rise strictly across the run (integers
    all), every value write is a set and every address is valid."""
    order = [seq for pair in zip(seqs, write_seqs, strict=True) for seq in pair]
    return (
        set(map(type, order)) == {int}
        and all(map(operator.lt, order, islice(order, 1, None)))
        and set(ops) == {"set"}
        and all(starmap(is_address, set(addresses)))
    )


def _apply_checked(
    replayer: Replayer,
    entries: list[Entry],
    columns: tuple[list[int], list[int], list[tuple[str, str]], list[Any]],
    spans: tuple[list[int], list[int], int | None],
    first: int,
) -> bool:
    """Apply a run of branch appends (lines ``first`` on) whose seqs, addresses and entries are
    checked, once the entries are proven a chain of valid inserts; ``False`` when not proven.

    ``columns`` are the entries' seqs, then each line's value set: seq, address and value; ``spans``
    where each entry is: its node's offsets and lengths, and its element of the line (``None``: the
    span is the entry's own object, which is also what the cache counts; else half the line)."""
    seqs, write_seqs, addresses, values = columns
    offsets, lengths, element = spans
    state = replayer.state
    ids = list(map(operator.attrgetter("id"), entries))
    parents = list(map(operator.attrgetter("parent_id"), entries))
    if not proves_entry_chain(state, ids, parents, seqs):
        return False
    count = len(entries)
    source = replayer.source
    nodes = list(
        map(
            LazyEntryNode,
            seqs,
            map(operator.attrgetter("timestamp"), entries),
            ids,
            parents,
            map(operator.attrgetter("type"), entries),
            map(operator.attrgetter("custom_type"), entries),
            offsets,
            lengths,
            repeat(element, count),
            repeat(source.loader, count),
        )
    )
    types = list(map(operator.attrgetter("type"), nodes))
    state.add_entry_chain(cast("list[OnDemandEntry]", nodes), ids, seqs, types)
    # Each line is one commit; only the last write of each address can matter.
    state.commits.mark_many(seqs, [seq + 1 for seq in write_seqs], [1] * count)
    last = dict(zip(addresses, range(count)))
    for (namespace, key), position in last.items():
        replayer._values[(namespace, key)] = ValueSet(
            namespace=namespace, key=key, value=values[position], seq=write_seqs[position]
        )
    replayer._last_node = nodes[-1]
    replayer.last_seq = write_seqs[-1]
    replayer.line = first + count
    state.set_replayed_next_seq(replayer.last_seq + 1)
    source.remember_new(nodes, entries, lengths if element is None else [length // 2 for length in lengths])
    return True


_decode_append = msgspec.json.Decoder(tuple[MessageRecord, ValueSetRecord]).decode
_MESSAGE_WIRE_KEYS = ("kind", *(field.encode_name for field in msgspec.structs.fields(MessageRecord)))
_ENTRY_LINE = b'[{"kind":"entry",'


def _first_entry_line(lines: list[bytes]) -> int:
    """The index of the first line that opens with an entry (``len(lines)`` when none does)."""
    return next((index for index, line in enumerate(lines) if line.startswith(_ENTRY_LINE)), len(lines))


def _typed_appends(lines: list[bytes]) -> tuple[list[tuple[MessageRecord, ValueSetRecord]], list[int]] | None:
    """The lines decoded straight into records, with the length of each line's entry object, when
    every one is a message branch append written as the encoder writes it (``None`` otherwise: the
    general path parses them).

    A runtime's session is such lines only; msgspec builds the records and the message payloads in
    one C pass per line (about half of ``orjson.loads`` to dicts). Re-encoding each record gives back
    its line byte for byte only when the line has no other member, no other key order, no duplicate
    key and no other spelling of a string or number: exactly the lines whose entries the general path
    would build with the canonical key order (integers beyond 2**53 were ruled out for the whole body).
    """
    if not lines:
        return None
    try:
        decoded = list(map(_decode_append, lines))
        entries = [encode_record(entry) for entry, _ in decoded]
        rebuilt = [
            b"".join((b"[", entry, b",", encode_record(value), b"]"))
            for entry, (_, value) in zip(entries, decoded, strict=True)
        ]
    except _NOT_TYPED:
        return None
    if rebuilt != lines:
        return None
    return decoded, list(map(len, entries))


# Another shape (a ValidationError is a DecodeError), or nesting too deep for msgspec, which recurses
# on the caller's stack.
_NOT_TYPED = (msgspec.DecodeError, msgspec.EncodeError, RecursionError, UnicodeDecodeError)


def _apply_typed(
    replayer: Replayer,
    typed: tuple[list[tuple[MessageRecord, ValueSetRecord]], list[int]],
    starts: list[int],
    first: int,
) -> bool:
    """:func:`_apply_run` for lines ``first`` on, decoded by :func:`_typed_appends`; each node's span
    is its entry's object (after the line's ``[``)."""
    decoded, lengths = typed
    records = list(map(_first, decoded))
    writes = list(map(_second, decoded))
    if set(map(_get_record_type, records)) != {"message"}:
        return False
    ids = list(map(_get_record_id, records))
    parents = list(map(_get_record_parent, records))
    if parents[1:] != ids[:-1]:
        return False
    seqs = list(map(_get_record_seq, records))
    write_seqs = list(map(_get_record_seq, writes))
    addresses = list(zip(map(_get_record_namespace, writes), map(_get_record_key, writes), strict=True))
    if not _writes_in_order(seqs, write_seqs, map(_get_op, writes), addresses) or seqs[0] < 0:
        return False
    timestamps = list(map(_get_record_timestamp, records))
    if min(timestamps) < 0 or max((*timestamps, write_seqs[-1])) > jsjson.MAX_SAFE_INTEGER:
        return False
    columns = {
        "id": ids,
        "parent_id": parents,
        "message": list(map(_get_record_message, records)),
        "seq": seqs,
        "timestamp": timestamps,
    }
    entries = build_entries(MessageEntry, columns, _MESSAGE_WIRE_KEYS, len(records))
    values = list(map(_get_record_value, writes))
    offsets = [start + 1 for start in islice(starts, first, first + len(records))]
    return _apply_checked(replayer, entries, (seqs, write_seqs, addresses, values), (offsets, lengths, None), first)


_get_record_type = operator.attrgetter("type")
_get_record_id = operator.attrgetter("id")
_get_record_parent = operator.attrgetter("parent_id")
_get_record_seq = operator.attrgetter("seq")
_get_record_timestamp = operator.attrgetter("timestamp")
_get_record_message = operator.attrgetter("message")
_get_record_namespace = operator.attrgetter("namespace")
_get_record_key = operator.attrgetter("key")
_get_record_value = operator.attrgetter("value")
_get_op = operator.attrgetter("op")


def _entries(records: list[dict[str, Any]]) -> list[Entry] | None:
    """The entries of the records, built a layout at a time; ``None`` unless every record has a known
    layout and passes :func:`~sessiontree_jsonl.bulk_read.entries_of_layout`'s checks."""
    types = list(map(_get_type_or_none, records))
    keys = list(map(tuple, records))
    if len(set(types)) == 1 and len(set(keys)) == 1:
        # One layout (a runtime's messages): built in one batch.
        layout = record_layout(types[0], records[0]) if type(types[0]) is str else None
        return None if layout is None else entries_of_layout(layout, records)
    groups: dict[tuple[Any, ...], list[int]] = {}
    for position, record in enumerate(records):
        entry_type = record.get("type")
        if type(entry_type) is not str:
            return None
        groups.setdefault((entry_type, *record), []).append(position)
    entries: list[Any] = [None] * len(records)
    for (entry_type, *_keys), positions in groups.items():
        layout = record_layout(entry_type, records[positions[0]])
        if layout is None:
            return None
        built = entries_of_layout(layout, [records[position] for position in positions])
        if built is None:
            return None
        for position, entry in zip(positions, built):
            entries[position] = entry
    return entries


