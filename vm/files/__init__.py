"""Files on disk: what kind a file is, whether irvm may write over it, and the ``.npz``
convention for inputs, outputs and traces (see README.md)."""
