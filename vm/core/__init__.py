"""The bottom of the house: errors and spans, the type model and its text, enum values and
the collector pause, which the compiler and every runtime room share (see README.md)."""
