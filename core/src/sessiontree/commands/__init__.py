"""The ``sessiontree`` subcommands, one click command per module (:mod:`sessiontree.cli` puts them together).

Shared pieces, which plugin commands may use too: :mod:`.targets` (what a command line names: URLs,
directories, session files; opening sessions), :mod:`.options` (the click arguments and options built on
it, and the :class:`~.options.Command` class), :mod:`.output` (JSON, and tables that become plain lines
when piped), :mod:`.status` (exit statuses). :mod:`.tree` is the session tree ``show`` and ``export`` draw;
:mod:`.transfer` copies sessions between backends (reading :mod:`.snapshot`, writing :mod:`.restore`,
comparing :mod:`.compare`); :mod:`.health` is what ``check`` looks for.
"""
