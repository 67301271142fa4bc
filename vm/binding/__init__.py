"""Binding a program to the world: weights into ``%self`` and ``<Tensor>`` constants, inputs
against the declared types, and the checks PyTorch makes before a call (see README.md)."""
