"""The in-memory session state that memory and JSONL share (pi's ``InMemoryStorageState``).

One job per module: :mod:`.records` (what the index holds per entry), :mod:`.index` (entries by id
and seq, paths to the root), :mod:`.store` (values, lists, usage), :mod:`.reads` (the read queries),
:mod:`.forking` (pi's in-memory fork) and :mod:`.state` (:class:`SessionState`: commits over all of
them, validated by :mod:`sessiontree.kit.validation`).
"""

from ..jsjson import MAX_SAFE_INTEGER
from ..jsjson import template_string as js_string
from ..kit.validation import PreparedCommit
from .records import EntryNode, OnDemandEntry, Record, entry_of, structure_of
from .state import SessionState

__all__ = [
    "EntryNode",
    "MAX_SAFE_INTEGER",
    "OnDemandEntry",
    "PreparedCommit",
    "Record",
    "SessionState",
    "entry_of",
    "js_string",
    "structure_of",
]
