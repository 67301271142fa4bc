"""Where the repository's files are, for the tests and their helpers.

Test data shared by several areas lives under ``tests/data/``: the differential corpus
(``corpus/``, written by ``tools/gen_corpus.py``), PyTorch's graph dumps for the parser
(``dumps/``, ``tools/dump_parser_cases.py``) and the dumped nn models (``nn_models/``,
``tools/dump_nn_models.py``).  Data that one area reads sits beside its tests
(``tests/passes/<pass>/*.ir``, ``tests/emit/goldens/``).
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
DATA = TESTS / "data"
CORPUS = DATA / "corpus"
DUMPS = DATA / "dumps"
NN_MODELS = DATA / "nn_models"
EXAMPLES = ROOT / "examples"
DOCS = ROOT / "docs"
TOOLS = ROOT / "tools"
