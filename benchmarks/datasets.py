"""pi's benchmark datasets, ids and seed transactions (``testing/benchmark/datasets.js``, ``storage.js``,
``session-repo.js``), rebuilt with the same names and contents."""

from __future__ import annotations

from collections.abc import Iterator

import attrs

from sessiontree import values
from sessiontree.model import MessageEntry
from sessiontree.writes import EntryWrite, Write, set_value

__all__ = [
    "CATALOG_DATASETS",
    "FORK_ENTRY_COUNTS",
    "CatalogDataset",
    "LinearDataset",
    "STORAGE_DATASETS",
    "catalog_dataset",
    "entry_id",
    "fork_source_writes",
    "linear_dataset",
    "seed_transactions",
    "session_id",
]

MESSAGE_TIMESTAMP = 1_650_000_000_000
SEED_BATCH_SIZE = 250
PAYLOAD_BYTES = 256


def entry_id(index: int) -> str:
    """``storageBenchmarkEntryId``: ``benchmark-entry-`` and 8 zero-padded digits."""
    return _ENTRY_ID_PREFIX + str(index).zfill(8)


# pi pads with String(index).padStart(8, "0"); str.zfill is its Python twin, half the cost of a format
# spec ("{:08d}".format: 0.55 against 0.27 µs an id, 2.8 ms of the 10k seed's generator).
_ENTRY_ID_PREFIX = "benchmark-entry-"


def session_id(index: int) -> str:
    """``sessionRepoBenchmarkSessionId``: ``benchmark-session-`` and 8 zero-padded digits."""
    return f"benchmark-session-{index:08d}"


def _scale(count: int) -> str:
    # pi's labels: 1_000 -> "1k", 10_000 -> "10k"; anything else (small test datasets) as digits.
    return f"{count // 1000}k" if count >= 1000 and count % 1000 == 0 else str(count)


@attrs.frozen(kw_only=True)
class LinearDataset:
    """One synthetic linear branch (pi's ``StorageBenchmarkDataset``)."""

    name: str
    entry_count: int
    payload_bytes: int
    lookup_ids: tuple[str, ...]
    tip_id: str


def linear_dataset(entry_count: int) -> LinearDataset:
    """pi's ``createDataset``: ``entry_count`` entries, 256-byte payloads, 100 evenly spread lookup ids."""
    if entry_count < 1:
        raise ValueError(f"A linear dataset needs at least one entry, got {entry_count}")
    lookups = min(100, entry_count)
    return LinearDataset(
        name=f"synthetic linear branch: {_scale(entry_count)} entries, {PAYLOAD_BYTES}-byte payloads",
        entry_count=entry_count,
        payload_bytes=PAYLOAD_BYTES,
        lookup_ids=tuple(entry_id((i * (entry_count - 1)) // max(1, lookups - 1)) for i in range(lookups)),
        tip_id=entry_id(entry_count - 1),
    )


STORAGE_DATASETS: tuple[LinearDataset, ...] = tuple(linear_dataset(n) for n in (1_000, 10_000, 100_000))
"""``STORAGE_BENCHMARK_DATASETS``."""
FORK_ENTRY_COUNTS: tuple[int, ...] = (1_000, 10_000)
"""``SESSION_REPO_FORK_BENCHMARK_DATASETS``: the 1k and 10k storage datasets."""


@attrs.frozen(kw_only=True)
class CatalogDataset:
    """A catalog of closed empty sessions (pi's ``SessionRepoCatalogBenchmarkDataset``)."""

    name: str
    session_count: int


def catalog_dataset(session_count: int) -> CatalogDataset:
    """``synthetic catalog: <scale> closed sessions``."""
    return CatalogDataset(
        name=f"synthetic catalog: {_scale(session_count)} closed sessions", session_count=session_count
    )


CATALOG_DATASETS: tuple[CatalogDataset, ...] = tuple(catalog_dataset(n) for n in (100, 1_000, 10_000))
"""``SESSION_REPO_CATALOG_BENCHMARK_DATASETS``."""


def seed_transactions(dataset: LinearDataset) -> Iterator[list[Write]]:
    """``generateStorageBenchmarkSeedTransactions``: 250-entry inserts forming one linear chain, each
    entry pi's ``createEntry``: fresh message objects, a ``<id>:`` prefix padded with ``x`` to the
    payload size.

    A batch is built by two comprehensions rather than a helper call per entry: the same objects, built
    inside the timer as pi builds them, without the Python calls an entry (``createEntry``, the id's
    formatting, ``insertEntry``) that V8 inlines away (the 10k dataset: 120 -> 101 M instructions)."""
    parent_id = None
    size = dataset.payload_bytes
    for start in range(0, dataset.entry_count, SEED_BATCH_SIZE):
        ids = [
            _ENTRY_ID_PREFIX + str(index).zfill(8)
            for index in range(start, min(start + SEED_BATCH_SIZE, dataset.entry_count))
        ]
        parents = [parent_id, *ids[:-1]]
        parent_id = ids[-1]
        yield [
            EntryWrite(  # what insert_entry returns, without its Python call
                MessageEntry(
                    id=identifier,
                    parent_id=parent,
                    message={
                        "role": "user",
                        "content": [{"type": "text", "text": f"{identifier}:".ljust(size, "x")}],
                        "timestamp": MESSAGE_TIMESTAMP,
                    },
                )
            )
            for identifier, parent in zip(ids, parents)
        ]


def fork_source_writes(dataset: LinearDataset) -> list[Write]:
    """The last commit of ``seedSessionRepoForkBenchmark``: tip ``main`` plus a configured, idle lane."""
    return [
        set_value(values.branch_tip("main"), dataset.tip_id),
        set_value(
            values.lane_config("main"),
            {
                "model": {"provider": "benchmark", "modelId": "benchmark"},
                "thinkingLevel": "off",
                "activeToolNames": [],
            },
        ),
        set_value(
            values.lane_state("main"), {"currentOperationId": None, "lastOperationId": None, "inbox": []}
        ),
    ]
