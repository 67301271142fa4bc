"""The interpreter backend: pre-decoding, the fast loop and the reference loop, and what a
run hands back (see README.md)."""
