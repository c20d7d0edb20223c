"""Scalar values, lists and the usage ledger of one session, with the counters its stats come from."""

from __future__ import annotations


from ..model import ABSENT, Address, ListElement, SessionStats, StoredValue, UsageRow
from ..usage import add_usage, empty_usage, summable_usage
from ..writes import ListAppend, ListDelete, UsageWrite, ValueDelete, ValueSet, Write

__all__ = ["ABSENT_KEY_SLOT", "ValueStore", "slot"]

ABSENT_KEY_SLOT = "undefined"


def slot(key: object) -> str:
    """Where a value or list write's key stores it: pi keys its maps by ``${namespace}\\0${key}``, so
    a write without a key lands in the slot of the key "undefined"."""
    return ABSENT_KEY_SLOT if key is ABSENT else key  # type: ignore[return-value]


class ValueStore:
    """Values by namespace and slot, lists by (namespace, slot), usage rows by id and in seq order."""

    def __init__(self) -> None:
        self.values: dict[str, dict[str, StoredValue]] = {}
        self.lists: dict[tuple[str, str], list[ListElement]] = {}
        self.usage: dict[str, UsageRow] = {}
        self.usage_rows: list[UsageRow] = []
        self.usage_total = empty_usage()

    def apply(self, write: Write) -> None:
        """Apply one committed write that is not an entry insert."""
        if isinstance(write, ValueSet):
            self.set_value(write)
        elif isinstance(write, UsageWrite):
            row = write.row
            self.usage[row.id] = row
            self.usage_rows.append(row)
            self.usage_total = add_usage(self.usage_total, summable_usage(row.usage))
        elif isinstance(write, ValueDelete):
            namespace = self.values.get(write.namespace)
            if namespace is not None and namespace.pop(slot(write.key), None) is not None and not namespace:
                del self.values[write.namespace]
        elif isinstance(write, ListAppend):
            element = ListElement(seq=write.seq, value=write.value)  # type: ignore[arg-type]
            self.lists.setdefault((write.namespace, slot(write.key)), []).append(element)
        elif isinstance(write, ListDelete):
            self.lists.pop((write.namespace, slot(write.key)), None)
        else:
            raise TypeError(f"Not a value, list or usage write: {write!r}")

    def set_value(self, write: ValueSet) -> None:
        namespace, raw_key = write.namespace, write.key
        values = self.values.get(namespace)
        if values is None:
            values = self.values[namespace] = {}
        # slot(raw_key), written out: a branch append sets a value on every commit.
        if raw_key is ABSENT:
            stored_at, key = ABSENT_KEY_SLOT, ""
        else:
            stored_at = key = raw_key
        previous = values.get(stored_at)
        # The address of the value it replaces is equal (same namespace, key and kind): share it.
        if previous is None or previous.address.key != key:
            address = Address(namespace, key, "value")
        else:
            address = previous.address
        values[stored_at] = StoredValue(address=address, value=write.value, seq=write.seq)  # type: ignore[arg-type]

    def get_value(self, address: Address) -> StoredValue | None:
        namespace = self.values.get(address.namespace)
        return None if namespace is None else namespace.get(address.key)

    def stats(self, message_count: int) -> SessionStats:
        return SessionStats(message_count=message_count, usage=self.usage_total)
