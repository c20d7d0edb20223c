"""JSONL sessiontree backend (pi format 4)."""
