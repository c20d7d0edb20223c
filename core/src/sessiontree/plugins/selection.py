"""Choosing a backend from a URL, a mapping, ``$SESSIONTREE_URL`` or the default repository."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..errors import PluginError
from ..urls import parse_url
from .known import URL_ENV, default_url

__all__ = ["mapping_selection", "selection"]


def selection(
    url_or_mapping: str | Mapping[str, Any] | None, options: Mapping[str, Any]
) -> tuple[str, dict[str, Any], str | None]:
    """``(backend name, factory options, where an implicit URL came from or None)``."""
    source: str | None = None
    if url_or_mapping is None:
        if env_url := os.environ.get(URL_ENV):
            url_or_mapping = env_url
            source = f"The URL comes from {URL_ENV}."
        else:
            url_or_mapping = default_url()
            source = (
                f"This is the default repository, {url_or_mapping}; set {URL_ENV} or pass a URL such as "
                f"'memory://' to choose another."
            )
    if isinstance(url_or_mapping, str):
        if "url" in options:
            raise PluginError(f"The URL is given twice: {url_or_mapping!r} and url={options['url']!r}")
        try:
            backend = parse_url(url_or_mapping).backend
        except PluginError as exc:
            if source is None:
                raise
            raise PluginError(f"{exc} ({source})") from exc
        return backend, {"url": url_or_mapping, **options}, source
    if isinstance(url_or_mapping, Mapping):
        return (*mapping_selection(url_or_mapping, options), None)
    raise PluginError(
        f"Expected a sessiontree URL string or a mapping with a 'backend' key, got "
        f"{type(url_or_mapping).__name__}: {url_or_mapping!r}"
    )


def mapping_selection(mapping: Mapping[str, Any], options: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    config = dict(mapping)
    for key in config:
        if not isinstance(key, str):
            raise PluginError(f"Backend mapping keys must be strings, got {key!r} in {mapping!r}")
    if twice := sorted(config.keys() & options.keys()):
        raise PluginError(f"Option(s) {', '.join(twice)} given both in the mapping and as keyword arguments")
    name = config.pop("backend", None)
    url = config.get("url")
    if url is not None:
        from_url = parse_url(url).backend
        if name is None:
            name = from_url
        elif name != from_url:
            raise PluginError(
                f"Backend mapping names backend {name!r} but its url {url!r} selects {from_url!r}"
            )
    if name is None:
        raise PluginError(f"A backend mapping needs a 'backend' key (or a 'url'), got keys {sorted(config)}")
    if not isinstance(name, str) or not name:
        raise PluginError(f"The 'backend' of a backend mapping must be a non-empty string, got {name!r}")
    return name, {**config, **options}
