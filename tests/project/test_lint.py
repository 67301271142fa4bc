"""The tree is clean under ruff and the type checker, with pyproject.toml's settings.

``ruff check`` covers the whole repository ([tool.ruff]); basedpyright, pyright packaged for
pip (it bundles node, so it runs offline), type-checks compiler/ and vm/ at the level
[tool.pyright] sets.  Both are pinned in the ``test`` extra: another version may find other
things.  A failure prints what the tool printed.
"""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys

import pytest

from tests.support.paths import ROOT


def _run(tool: str, *args: str) -> tuple[int, str]:
    """(exit code, what it printed under a line naming the command) of ``python -m tool args``
    at the repository's root; a missing tool is a failure that says how to install it, not a skip."""
    try:
        version = importlib.metadata.version(tool)
    except importlib.metadata.PackageNotFoundError:
        pytest.fail(f"{tool} is not installed: python3 -m pip install -e '.[test]'")
    result = subprocess.run(
        [sys.executable, "-m", tool, *args], cwd=ROOT, capture_output=True, text=True, check=False
    )
    return result.returncode, f"{tool} {version} {' '.join(args)}:\n{result.stdout}{result.stderr}"


def test_ruff_check_is_clean() -> None:
    """Every Python file in the repository passes ``ruff check`` with [tool.ruff]'s rules."""
    code, output = _run("ruff", "check", "--no-cache", "--output-format", "concise", ".")
    assert code == 0, output


def test_type_check_is_clean() -> None:
    """compiler/ and vm/ type-check with no error and no warning under [tool.pyright]
    (basic mode), with this interpreter's packages (numpy's stubs) for imports."""
    code, output = _run("basedpyright", "--pythonpath", sys.executable, "--warnings")
    assert code == 0, output
