"""In-memory sessiontree backend."""
