"""Every statement the plugin sends, in one place (``{s}`` is the quoted schema).

Session-scoped statements filter by the session's owner and id (``%(tenant)s``, ``%(user)s``,
``%(sid)s``); the repository's owner-view statements (``OWNED_*``) filter by the view's owner, and the
unscoped repository's ones (``ANY_*``) are the administrator's, used only by a repository not bound to
an owner. ``tests/test_owner_queries.py`` reads this list and checks each filter.
"""

from __future__ import annotations

import types

__all__ = ["QUERIES", "render"]

_SESSION = "tenant = %(tenant)s AND owner_user = %(user)s AND session_id = %(sid)s"
_OWNER = "tenant = %(tenant)s AND owner_user = %(user)s"

_STRUCTURE = ("seq", "id", "parent_id", "type", "custom_type", "timestamp")


def _branch_path(columns: tuple[str, ...]) -> str:
    """The recursive walk from %(start)s towards the root, returning ``columns`` newest first."""
    listed = ", ".join(columns)
    return (
        "WITH RECURSIVE path AS ("
        f" SELECT {listed}, 0 AS depth FROM {{s}}.entries"
        f" WHERE {_SESSION} AND id = %(start)s"
        " UNION ALL"
        f" SELECT {', '.join(f'e.{column}' for column in columns)}, p.depth + 1 FROM path p"
        " JOIN {s}.entries e ON e.tenant = %(tenant)s AND e.owner_user = %(user)s"
        " AND e.session_id = %(sid)s AND e.id = p.parent_id"
        " WHERE (%(stop_type)s::bytea IS NULL OR p.type <> %(stop_type)s)"
        " AND (%(stop_id)s::bytea IS NULL OR p.id <> %(stop_id)s)"
        " AND (%(limit)s::bigint IS NULL OR p.depth + 1 < %(limit)s)"
        f") SELECT {listed} FROM path ORDER BY depth"
    )


QUERIES: dict[str, str] = {
    # --- one session (storage) ------------------------------------------------------------------
    "lock_session": (
        "SELECT next_seq, last_timestamp, message_count, usage_total FROM {s}.sessions "
        f"WHERE {_OWNER} AND id = %(sid)s AND incarnation = %(incarnation)s FOR UPDATE"
    ),
    "share_session": (
        "SELECT next_seq FROM {s}.sessions "
        f"WHERE {_OWNER} AND id = %(sid)s FOR SHARE"
    ),
    "read_session": (
        "SELECT next_seq, last_timestamp, message_count, usage_total FROM {s}.sessions "
        f"WHERE {_OWNER} AND id = %(sid)s AND incarnation = %(incarnation)s"
    ),
    # The seq after the newest stored write the commit log, the entries or the usage rows know of (the
    # primary keys' ends): a next seq below it would give a commit seqs already stored.
    "stored_end": (
        "SELECT greatest("
        f"(SELECT end_seq FROM {{s}}.commits WHERE {_SESSION} ORDER BY first_seq DESC LIMIT 1), "
        f"(SELECT max(seq) + 1 FROM {{s}}.entries WHERE {_SESSION}), "
        f"(SELECT max(seq) + 1 FROM {{s}}.usage_rows WHERE {_SESSION}))"
    ),
    "update_session": (
        "UPDATE {s}.sessions SET next_seq = %(next_seq)s, last_timestamp = %(last_timestamp)s, "
        "message_count = %(message_count)s, usage_total = %(usage_total)s "
        f"WHERE {_OWNER} AND id = %(sid)s"
    ),
    # A commit's head move, telling the watches (:mod:`.watching`) when its transaction commits.
    "advance_session": (
        "UPDATE {s}.sessions SET next_seq = %(next_seq)s, last_timestamp = %(last_timestamp)s, "
        "message_count = %(message_count)s, usage_total = %(usage_total)s "
        f"WHERE {_OWNER} AND id = %(sid)s RETURNING pg_notify(%(channel)s, %(notify)s)"
    ),
    # What a watch catches up with: the session's next seq (no row: it was deleted), the commits from the one holding
    # %(after)s on, and every stored write above %(after)s (one statement: one snapshot).
    "watch_writes": (
        "SELECT 'h', next_seq, NULL::bigint, NULL::bytea, NULL::bytea, NULL::boolean, NULL::bytea, NULL::text "
        f"FROM {{s}}.sessions WHERE {_OWNER} AND id = %(sid)s AND incarnation = %(incarnation)s "
        "UNION ALL SELECT 'c', first_seq, end_seq, NULL, NULL, NULL, NULL, NULL FROM {s}.commits "
        f"WHERE {_SESSION} AND first_seq >= coalesce((SELECT max(first_seq) FROM {{s}}.commits "
        f"WHERE {_SESSION} AND first_seq <= %(after)s), 0) "
        "UNION ALL SELECT 'e', seq, NULL, NULL, NULL, NULL, id, raw FROM {s}.entries "
        f"WHERE {_SESSION} AND seq > %(after)s "
        "UNION ALL SELECT 'u', seq, NULL, NULL, NULL, NULL, id, raw FROM {s}.usage_rows "
        f"WHERE {_SESSION} AND seq > %(after)s "
        "UNION ALL SELECT 'v', seq, NULL, namespace, slot, key_absent, NULL, value FROM {s}.session_values "
        f"WHERE {_SESSION} AND seq > %(after)s "
        "UNION ALL SELECT 'l', seq, NULL, namespace, slot, key_absent, NULL, value FROM {s}.list_elements "
        f"WHERE {_SESSION} AND seq > %(after)s "
        "ORDER BY 2"
    ),
    "known_ids": (
        "SELECT id, true FROM {s}.entries "
        f"WHERE {_SESSION} AND id = ANY(%(ids)b) "
        "UNION ALL SELECT id, false FROM {s}.usage_rows "
        f"WHERE {_SESSION} AND id = ANY(%(ids)b)"
    ),
    "entries_by_id": f"SELECT id, raw FROM {{s}}.entries WHERE {_SESSION} AND id = ANY(%(ids)b)",
    "usage_by_id": f"SELECT raw FROM {{s}}.usage_rows WHERE {_SESSION} AND id = %(id)s",
    "commit_of": (
        "SELECT first_seq, end_seq, id_count FROM {s}.commits "
        f"WHERE {_SESSION} AND first_seq <= %(seq)s ORDER BY first_seq DESC LIMIT 1"
    ),
    "values_at": (
        "SELECT namespace, slot, key_absent, seq, value FROM {s}.session_values "
        f"WHERE {_SESSION} AND (namespace, slot) IN (SELECT * FROM unnest(%(namespaces)b::bytea[], %(slots)b::bytea[]))"
    ),
    # One row while the session (this incarnation of its id) exists: NULLs where no value is stored.
    "value_at": (
        "SELECT namespace, slot, key_absent, seq, value FROM {s}.sessions h "
        "LEFT JOIN {s}.session_values v ON v.tenant = %(tenant)s AND v.owner_user = %(user)s "
        "AND v.session_id = %(sid)s AND v.namespace = %(namespace)s AND v.slot = %(slot)s "
        f"WHERE h.{_OWNER.replace(' AND ', ' AND h.')} AND h.id = %(sid)s AND h.incarnation = %(incarnation)s"
    ),
    "values_with_prefix": (
        "SELECT namespace, slot, key_absent, seq, value FROM {s}.session_values "
        f"WHERE {_SESSION} AND namespace = %(namespace)s "
        "AND substring(CASE WHEN key_absent THEN ''::bytea ELSE slot END FROM 1 FOR length(%(prefix)s)) = %(prefix)s "
        "ORDER BY CASE WHEN key_absent THEN ''::bytea ELSE slot END, slot"
    ),
    "list_asc": (
        "SELECT seq, value FROM {s}.list_elements "
        f"WHERE {_SESSION} AND namespace = %(namespace)s AND slot = %(slot)s AND seq > %(cursor)s "
        "ORDER BY seq LIMIT %(limit)s"
    ),
    "list_desc": (
        "SELECT seq, value FROM {s}.list_elements "
        f"WHERE {_SESSION} AND namespace = %(namespace)s AND slot = %(slot)s AND seq < %(cursor)s "
        "ORDER BY seq DESC LIMIT %(limit)s"
    ),
    # The path from an entry to the root, newest first, stopping after an entry of %(stop_type)s (or
    # %(stop_id)s) when given: what a context build reads, and nothing older.
    "branch_path": _branch_path(_STRUCTURE),
    # The same with each entry's text, read from the row the walk visits anyway: a first read.
    "branch_path_raw": _branch_path((*_STRUCTURE, "raw")),
    "entry_seq": f"SELECT seq FROM {{s}}.entries WHERE {_SESSION} AND id = %(id)s",
    "entries_by_seq": f"SELECT seq, raw FROM {{s}}.entries WHERE {_SESSION} AND seq = ANY(%(seqs)b)",
    "scan_entries": (
        "SELECT raw, id FROM {s}.entries "
        f"WHERE {_SESSION} AND seq BETWEEN %(from_seq)s AND %(to_seq)s "
        "AND (%(type)s::bytea IS NULL OR type = %(type)s) "
        "AND (%(custom_type)s::bytea IS NULL OR custom_type = %(custom_type)s) "
        "ORDER BY seq {order} LIMIT %(limit)s"
    ),
    "scan_usage": (
        "SELECT raw FROM {s}.usage_rows "
        f"WHERE {_SESSION} AND seq BETWEEN %(from_seq)s AND %(to_seq)s "
        "ORDER BY seq {order} LIMIT %(limit)s"
    ),
    "all_entries": f"SELECT raw, id FROM {{s}}.entries WHERE {_SESSION} ORDER BY seq",
    "all_values": f"SELECT namespace, slot, key_absent, seq, value FROM {{s}}.session_values WHERE {_SESSION}",
    "all_list_elements": (
        "SELECT namespace, slot, key_absent, seq, value FROM {s}.list_elements "
        f"WHERE {_SESSION} ORDER BY seq"
    ),
    "value_namespaces": f"SELECT DISTINCT namespace FROM {{s}}.session_values WHERE {_SESSION}",
    "list_addresses": (
        f"SELECT DISTINCT namespace, slot, key_absent FROM {{s}}.list_elements WHERE {_SESSION}"
    ),
    "insert_entries": (
        "INSERT INTO {s}.entries (tenant, owner_user, session_id, seq, id, parent_id, type, custom_type, "
        "timestamp, raw) SELECT %(tenant)s, %(user)s, %(sid)s, * FROM unnest(%(seqs)b::bigint[], "
        "%(ids)b::bytea[], %(parents)b::bytea[], %(types)b::bytea[], %(custom_types)b::bytea[], "
        "%(timestamps)b::bigint[], %(raws)b::text[])"
    ),
    "insert_usage": (
        "INSERT INTO {s}.usage_rows (tenant, owner_user, session_id, seq, id, raw) "
        "SELECT %(tenant)s, %(user)s, %(sid)s, * FROM unnest(%(seqs)b::bigint[], %(ids)b::bytea[], %(raws)b::text[])"
    ),
    "upsert_value": (
        "INSERT INTO {s}.session_values (tenant, owner_user, session_id, namespace, slot, key_absent, seq, value) "
        "VALUES (%(tenant)s, %(user)s, %(sid)s, %(namespace)s, %(slot)s, %(key_absent)s, %(seq)s, %(value)s) "
        "ON CONFLICT (tenant, owner_user, session_id, namespace, slot) DO UPDATE "
        "SET key_absent = excluded.key_absent, seq = excluded.seq, value = excluded.value"
    ),
    "delete_value": f"DELETE FROM {{s}}.session_values WHERE {_SESSION} AND namespace = %(namespace)s AND slot = %(slot)s",
    "insert_list_elements": (
        "INSERT INTO {s}.list_elements (tenant, owner_user, session_id, namespace, slot, key_absent, seq, value) "
        "SELECT %(tenant)s, %(user)s, %(sid)s, * FROM unnest(%(namespaces)b::bytea[], %(slots)b::bytea[], "
        "%(key_absents)b::boolean[], %(seqs)b::bigint[], %(values)b::text[])"
    ),
    "delete_list": f"DELETE FROM {{s}}.list_elements WHERE {_SESSION} AND namespace = %(namespace)s AND slot = %(slot)s",
    # A whole commit whose writes need no order among themselves (no deletes, each value set once):
    # every row, the commit record and the head in one statement. The head moves, and anything is
    # written, only when the session's next seq is %(expect_seq)s and the validator's recorded answers
    # hold (ids taken for absent "a" are absent, for stored "p"/"q" are stored, values "w" have those
    # seqs): it returns 0 rows written otherwise (see known.py).
    "write_commit": (
        "WITH j AS (SELECT %(rows)s::jsonb AS d), "
        "head AS (UPDATE {s}.sessions SET next_seq = %(next_seq)s, last_timestamp = %(last_timestamp)s, "
        "message_count = %(message_count)s, usage_total = coalesce(%(usage_total)s, usage_total) "
        f"WHERE {_OWNER} AND id = %(sid)s AND incarnation = %(incarnation)s AND next_seq = %(expect_seq)s "
        "AND NOT EXISTS (SELECT FROM {s}.commits "
        f"WHERE {_SESSION} AND first_seq >= %(expect_seq)s) "
        "AND NOT EXISTS (SELECT FROM {s}.entries "
        f"WHERE {_SESSION} AND id = ANY(ARRAY(SELECT decode(x, 'hex') FROM j, jsonb_array_elements_text(j.d->'a') x))) "
        "AND NOT EXISTS (SELECT FROM {s}.usage_rows "
        f"WHERE {_SESSION} AND id = ANY(ARRAY(SELECT decode(x, 'hex') FROM j, jsonb_array_elements_text(j.d->'a') x))) "
        "AND (SELECT count(*) FROM {s}.entries "
        f"WHERE {_SESSION} AND id = ANY(ARRAY(SELECT decode(x, 'hex') FROM j, jsonb_array_elements_text(j.d->'p') x))) "
        "= (SELECT jsonb_array_length(d->'p') FROM j) "
        "AND (SELECT count(*) FROM {s}.usage_rows "
        f"WHERE {_SESSION} AND id = ANY(ARRAY(SELECT decode(x, 'hex') FROM j, jsonb_array_elements_text(j.d->'q') x))) "
        "= (SELECT jsonb_array_length(d->'q') FROM j) "
        "AND NOT EXISTS (SELECT FROM j, jsonb_array_elements(j.d->'w') x WHERE (x->>2)::bigint IS DISTINCT FROM "
        "(SELECT v.seq FROM {s}.session_values v WHERE v.tenant = %(tenant)s AND v.owner_user = %(user)s "
        "AND v.session_id = %(sid)s AND v.namespace = decode(x->>0, 'hex') AND v.slot = decode(x->>1, 'hex'))) "
        "RETURNING 1, pg_notify(%(channel)s, %(notify)s)), "
        "e AS (INSERT INTO {s}.entries (tenant, owner_user, session_id, seq, id, parent_id, type, custom_type, "
        "timestamp, raw) SELECT %(tenant)s, %(user)s, %(sid)s, (x->>0)::bigint, decode(x->>1, 'hex'), "
        "decode(x->>2, 'hex'), decode(x->>3, 'hex'), decode(x->>4, 'hex'), (x->>5)::bigint, x->>6 "
        "FROM head, j, jsonb_array_elements(j.d->'e') x), "
        "u AS (INSERT INTO {s}.usage_rows (tenant, owner_user, session_id, seq, id, raw) "
        "SELECT %(tenant)s, %(user)s, %(sid)s, (x->>0)::bigint, decode(x->>1, 'hex'), x->>2 "
        "FROM head, j, jsonb_array_elements(j.d->'u') x), "
        "l AS (INSERT INTO {s}.list_elements (tenant, owner_user, session_id, namespace, slot, key_absent, seq, value) "
        "SELECT %(tenant)s, %(user)s, %(sid)s, decode(x->>0, 'hex'), decode(x->>1, 'hex'), (x->>2)::boolean, "
        "(x->>3)::bigint, x->>4 FROM head, j, jsonb_array_elements(j.d->'l') x), "
        "v AS (INSERT INTO {s}.session_values (tenant, owner_user, session_id, namespace, slot, key_absent, seq, value) "
        "SELECT %(tenant)s, %(user)s, %(sid)s, decode(x->>0, 'hex'), decode(x->>1, 'hex'), (x->>2)::boolean, "
        "(x->>3)::bigint, x->>4 FROM head, j, jsonb_array_elements(j.d->'v') x "
        "ON CONFLICT (tenant, owner_user, session_id, namespace, slot) DO UPDATE "
        "SET key_absent = excluded.key_absent, seq = excluded.seq, value = excluded.value), "
        "c AS (INSERT INTO {s}.commits (tenant, owner_user, session_id, first_seq, end_seq, id_count) "
        "SELECT %(tenant)s, %(user)s, %(sid)s, %(first_seq)s, %(next_seq)s, %(id_count)s FROM head) "
        "SELECT count(*) FROM head"
    ),
    "insert_commit": (
        "INSERT INTO {s}.commits (tenant, owner_user, session_id, first_seq, end_seq, id_count) "
        "VALUES (%(tenant)s, %(user)s, %(sid)s, %(first_seq)s, %(end_seq)s, %(id_count)s)"
    ),
    # --- the repository: an owner view's statements -----------------------------------------------
    "owned_insert_session": (
        "INSERT INTO {s}.sessions (tenant, owner_user, id, created_at, parent_session_id, cwd, extra, next_seq, "
        "last_timestamp, message_count, usage_total) VALUES (%(tenant)s, %(user)s, %(sid)s, %(created_at)s, "
        "%(parent)s, %(cwd)s, %(extra)s, %(next_seq)s, %(last_timestamp)s, %(message_count)s, %(usage_total)s) "
        "ON CONFLICT DO NOTHING RETURNING incarnation"
    ),
    "owned_find": (
        "SELECT tenant, owner_user, id, created_at, parent_session_id, cwd, extra, incarnation FROM {s}.sessions "
        f"WHERE {_OWNER} AND id = %(sid)s"
    ),
    "owned_list": (
        "SELECT tenant, owner_user, id, created_at, parent_session_id, cwd, extra FROM {s}.sessions "
        f"WHERE {_OWNER} AND (created_at, id) < (%(before_created)s, %(before_id)s) "
        "ORDER BY created_at DESC, id DESC LIMIT %(limit)s"
    ),
    # Its watches (:mod:`.watching`) learn of it when the deletion commits.
    "owned_delete": (
        f"DELETE FROM {{s}}.sessions WHERE {_OWNER} AND id = %(sid)s RETURNING pg_notify(%(channel)s, %(notify)s)"
    ),
    # --- the repository: the unscoped (administrator's) statements --------------------------------
    "any_find": (
        "SELECT tenant, owner_user, id, created_at, parent_session_id, cwd, extra, incarnation FROM {s}.sessions WHERE id = %(sid)s"
    ),
    "any_list": (
        "SELECT tenant, owner_user, id, created_at, parent_session_id, cwd, extra FROM {s}.sessions "
        "WHERE (created_at, id) < (%(before_created)s, %(before_id)s) "
        "ORDER BY created_at DESC, id DESC LIMIT %(limit)s"
    ),
}


def render(schema: str) -> types.MappingProxyType[str, str]:
    """The statements with ``{s}`` set to the quoted ``schema`` (``{order}`` is left for the caller)."""
    return types.MappingProxyType({name: text.replace("{s}", schema) for name, text in QUERIES.items()})
