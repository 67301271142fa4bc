"""What the tests share (import as ``tests.support.<module>``).

- ``paths``: where the repository's folders and the shared test data (``tests/data/``) are;
- ``strategies``: the hypothesis strategies (runnable programs; well-formed IR);
- ``reference``: the reference evaluator (a direct walk of the IR) and ``same_value``;
- ``against_torch``: the torch-comparison harness (conversions, ``assert_matches``);
- ``tensor_ops``, ``nn``, ``prim_torch``, ``torch_models``: per-family case builders for
  the operator tests (tensor-kernel strategies and a schema-driven torch runner; nn kernel
  helpers; TorchScript functions run both ways; shared torch models);
- ``filecheck_runner``: ``# CHECK:`` directives matched by the PyPI ``filecheck`` package;
- ``goldens``: ``[case]``/``[out]`` golden files and ``--regen-goldens``;
- ``ir_checks``, ``mutations``: structural IR checks for the pass fuzzers, and the
  mutations of the fuzz campaign (also used by ``tools/fuzz_campaign.py``).
"""
