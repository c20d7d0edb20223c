"""pytest11 plugin of the conformance suite."""
