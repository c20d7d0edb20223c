"""The ``sessiontree`` subcommands beyond ``dump`` and ``commit``, one module each.

Each module registers its :class:`sessiontree.cli.Command` when imported; ``sessiontree.cli`` imports
them. Shared pieces: :mod:`.common` (URLs, opening sessions, output), :mod:`.tree` (the session tree
model that ``show`` and ``export`` draw), :mod:`.transfer` (copying sessions between backends) and
:mod:`.health` (what ``check`` looks for).
"""
