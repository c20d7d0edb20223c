"""PostgreSQL backend of sessiontree: ``postgresql://user@host:port/db?schema=name``."""
