"""The context effect of the pi CLI's ``context_edit`` records, as an entry projector.

The v3 importer keeps each ``context_edit`` record as a custom entry (``legacy_v3.context_edit``) whose
``data.targetId`` is the imported id of the edited entry and ``data.replacement`` the CLI's
``null | {content}``. This projector turns it into a :class:`~sessiontree.context.ContextEdit`, which the
core applies when it builds a context: the latest edit of a target among the context entries omits it
(``null``) or replaces its content, on that branch only (the CLI's ``buildSessionProjection``).
"""

from __future__ import annotations

from collections.abc import Mapping

from sessiontree.context import ContextEdit
from sessiontree.model import CustomEntry

__all__ = ["project_context_edit"]


def project_context_edit(entry: CustomEntry) -> ContextEdit | None:
    """The edit an imported ``context_edit`` entry makes, or ``None`` when its data names no imported
    target or holds no replacement the CLI could apply (``null`` or ``{content: string | array}``)."""
    data = entry.data
    if not isinstance(data, Mapping):
        return None
    target = data.get("targetId")
    replacement = data.get("replacement")
    if not isinstance(target, str):
        return None
    if replacement is None:
        return ContextEdit(target, None)
    content = replacement.get("content") if isinstance(replacement, Mapping) else None
    if not isinstance(content, (str, list)):
        return None
    return ContextEdit(target, content)
