"""Parsing ``backend[+filesystem]://location[?query]`` repository URLs."""

from __future__ import annotations

from pathlib import PurePosixPath, PureWindowsPath

import pytest

from sessiontree.errors import PluginError
from sessiontree.urls import local_path_url, parse_url


@pytest.mark.parametrize(
    ("url", "backend", "filesystem", "location"),
    [
        ("memory://", "memory", None, ""),
        ("jsonl:///var/lib/agent/sessions", "jsonl", None, "/var/lib/agent/sessions"),
        ("sqlite:///x.sqlite", "sqlite", None, "/x.sqlite"),
        ("sqlite:///var/lib/agent/sessions/", "sqlite", None, "/var/lib/agent/sessions/"),
        ("objstore+s3://bucket/prefix", "objstore", "s3", "bucket/prefix"),
        ("objstore+file:///tmp/store", "objstore", "file", "/tmp/store"),
        ("jsonl://relative/dir", "jsonl", None, "relative/dir"),
    ],
)
def test_parse_url_splits_backend_filesystem_and_location(
    url: str, backend: str, filesystem: str | None, location: str
) -> None:
    parsed = parse_url(url)
    assert (parsed.url, parsed.backend, parsed.filesystem, parsed.location) == (
        url,
        backend,
        filesystem,
        location,
    )
    assert dict(parsed.query) == {}


def test_parse_url_lowercases_the_scheme_but_not_the_location() -> None:
    parsed = parse_url("ObjStore+S3://Bucket/Prefix")
    assert (parsed.backend, parsed.filesystem, parsed.location) == ("objstore", "s3", "Bucket/Prefix")


def test_parse_url_decodes_percent_escapes_in_location_and_query() -> None:
    parsed = parse_url("jsonl:///srv/my%20sessions%3Fold?durability=fsync&label=a%26b&empty=")
    assert parsed.location == "/srv/my sessions?old"
    assert dict(parsed.query) == {"durability": "fsync", "label": "a&b", "empty": ""}


def test_parsed_query_is_read_only() -> None:
    parsed = parse_url("memory://?a=1")
    with pytest.raises(TypeError):
        parsed.query["a"] = "2"  # type: ignore[index]


def test_path_is_none_without_a_location_and_drops_the_slash_before_a_drive() -> None:
    assert parse_url("memory://").path is None
    assert parse_url("jsonl:///var/x").path == "/var/x"
    assert parse_url("jsonl:///C:/Users/me/sessions").path == "C:/Users/me/sessions"


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("memory", "expected backend[+filesystem]://location"),
        ("/var/lib/sessions", "expected backend[+filesystem]://location"),
        ("+s3://bucket", "'+s3' is not backend[+filesystem]"),
        ("objstore+://bucket", "'objstore+' is not backend[+filesystem]"),
        ("a+b+c://x", "'a+b+c' is not backend[+filesystem]"),
        ("9lives://x", "'9lives' is not backend[+filesystem]"),
        ("jsonl:///x?a=1&a=2", "parameter 'a' is given twice"),
        ("jsonl:///x?novalue", "Invalid query"),
        ("jsonl:///%ff", "not percent-encoded UTF-8"),
    ],
)
def test_malformed_urls_raise_plugin_error_naming_the_url(url: str, fragment: str) -> None:
    with pytest.raises(PluginError) as excinfo:
        parse_url(url)
    message = str(excinfo.value)
    assert fragment in message
    assert repr(url) in message


def test_a_url_must_be_a_string() -> None:
    with pytest.raises(PluginError, match="must be a string, got PurePosixPath"):
        parse_url(PurePosixPath("/x"))  # type: ignore[arg-type]


def test_local_path_url_uses_three_slashes_for_absolute_paths() -> None:
    assert local_path_url("jsonl", PurePosixPath("/home/me/.local/share/sessiontree/sessions")) == (
        "jsonl:///home/me/.local/share/sessiontree/sessions"
    )
    assert local_path_url("sqlite", "rel/x.sqlite") == "sqlite://rel/x.sqlite"
    assert (
        local_path_url("jsonl", PureWindowsPath("C:\\Users\\me\\sessions")) == "jsonl:///C:/Users/me/sessions"
    )


def test_local_path_url_round_trips_through_parse_url() -> None:
    url = local_path_url("jsonl", PurePosixPath("/srv/agent/sessions"))
    assert parse_url(url).path == "/srv/agent/sessions"
