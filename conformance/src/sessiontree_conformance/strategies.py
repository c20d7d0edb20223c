"""Hypothesis strategies for message payloads a backend's encoder should write exactly.

:data:`plain_messages` draws messages of the plain shape (:mod:`sessiontree.wire.plain`: text, safe
integers and booleans under the names pi's user, assistant and tool-result messages use), whose JSON
text every JSON encoder in use writes as ``JSON.stringify`` does.
"""

from __future__ import annotations

from hypothesis import strategies as st

__all__ = ["plain_messages", "safe_integers", "short_text"]

short_text = st.text(st.characters(exclude_categories=()), max_size=40)
"""Any text, lone surrogates included (Hypothesis leaves them out unless asked)."""

safe_integers = st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
"""Integers ``JSON.parse`` reads back exactly."""

_PART = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": short_text}),
    st.fixed_dictionaries({"type": st.just("image"), "data": short_text, "mimeType": short_text}),
)

plain_messages = st.fixed_dictionaries(
    {"role": short_text, "content": st.one_of(short_text, st.lists(_PART, max_size=3)), "timestamp": safe_integers},
    optional={"toolCallId": short_text, "toolName": short_text, "isError": st.booleans(), "stopReason": short_text},
)
"""Messages of the plain shape."""
