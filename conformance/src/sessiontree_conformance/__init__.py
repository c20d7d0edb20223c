"""sessiontree conformance suite."""
