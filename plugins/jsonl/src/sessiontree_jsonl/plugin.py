"""Entry-point module of the JSONL backend."""
