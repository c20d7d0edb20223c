"""Entry-point module of the memory backend."""
