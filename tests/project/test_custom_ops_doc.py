"""docs/custom_ops.md is executable: its Python blocks run in order, asserts included."""

from __future__ import annotations

import re

from tests.support.paths import DOCS

DOC = DOCS / "custom_ops.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_custom_op_doc_runs_as_written(capsys) -> None:
    text = DOC.read_text()
    blocks = python_blocks(text)
    assert len(blocks) == 3
    namespace: dict[str, object] = {"__name__": "custom_ops_doc"}
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), namespace)
    printed = capsys.readouterr().out.strip()
    shown = re.search(r"which prints\n\n```text\n(.*?)```", text, flags=re.S)
    assert shown is not None
    assert printed == shown.group(1).strip()
