"""What a session file tells beyond the Storage reads: the addresses it names, its committed
transactions as written (the JSONL storage's ``SupportsInventory`` and ``SupportsExport``) and the ids
the v3 importer minted (the backend's ``SupportsMintedIds``)."""

from __future__ import annotations

from sessiontree.contracts import Storage
from sessiontree.dump import DumpInventory, jsonl_inventory
from sessiontree.errors import SessionTreeError, StorageFormatError
from sessiontree.fs import FileSystem
from sessiontree.wire import decode_transaction
from sessiontree.writes import Write

__all__ = ["file_inventory", "file_transactions", "minted_ids"]


def file_inventory(fs: FileSystem, path: str) -> DumpInventory:
    """Every value namespace and list address with a write in the file (as pi's oracle dump reads it);
    empty when the file is gone."""
    try:
        data = fs.read_bytes(path)
    except FileNotFoundError:
        return DumpInventory()
    return jsonl_inventory(data.decode("utf-8", "replace"))


def file_transactions(fs: FileSystem, path: str) -> list[tuple[Write, ...]]:
    """The committed transactions of a format-4 file: every complete line after the header (a torn
    tail is left out, as the storage ignores it). A line that does not decode raises
    :class:`StorageFormatError` naming the file and line."""
    lines = fs.read_bytes(path).split(b"\n")
    lines.pop()  # the bytes after the last LF: empty, or a torn tail
    transactions: list[tuple[Write, ...]] = []
    for number, line in enumerate(lines[1:], start=2):
        try:
            writes = decode_transaction(line)
        except SessionTreeError as error:
            raise StorageFormatError(f"{path}: line {number}: {error}", path=path, line=number) from error
        if writes:
            transactions.append(tuple(writes))
    return transactions


def minted_ids(fs: FileSystem, path: str, storage: Storage) -> frozenset[str]:
    """The entry and usage-row ids ``storage`` (opened from the file at ``path``) holds that the file's
    text does not: the ones an importer minted (a format-4 file holds every id it shows)."""
    text = fs.read_bytes(path).decode("utf-8", "replace")
    ids = [entry.id for entry in storage.scan_entries()] + [row.id for row in storage.scan_usage()]
    return frozenset(i for i in ids if i not in text)
