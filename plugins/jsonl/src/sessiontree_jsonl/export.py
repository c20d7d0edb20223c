"""What a session file tells beyond the Storage reads: the addresses it names and its committed
transactions as written (the JSONL storage's ``SupportsInventory`` and ``SupportsExport``)."""

from __future__ import annotations

from sessiontree.dump import DumpInventory, jsonl_inventory
from sessiontree.errors import SessionTreeError, StorageFormatError
from sessiontree.fs import FileSystem
from sessiontree.wire import decode_transaction
from sessiontree.writes import Write

__all__ = ["file_inventory", "file_transactions"]


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
