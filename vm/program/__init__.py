"""The compiled program: the instruction set, the bytecode container, the ``.irbc`` file and
the tables a run checks before its first operator (see README.md)."""
