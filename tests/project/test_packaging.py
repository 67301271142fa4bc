"""What an installed (non-editable) irvm contains: every source package and its data files."""

from __future__ import annotations

from fnmatch import fnmatch

import pytest
import tomllib

from tests.support.paths import ROOT


@pytest.mark.parametrize("top", ["compiler", "vm"])
def test_every_source_directory_is_a_package(top: str) -> None:
    """pyproject's package finder installs only directories with an __init__.py: a folder of
    modules without one would be missing from a wheel while an editable install still works."""
    missing = [
        str(d.relative_to(ROOT))
        for d in sorted((ROOT / top).rglob("*"))
        if d.is_dir() and "__pycache__" not in d.parts and any(d.glob("*.py")) and not (d / "__init__.py").exists()
    ]
    assert not missing, f"directories with modules but no __init__.py: {missing}"


def test_the_package_finder_covers_every_package() -> None:
    """The include patterns in pyproject.toml select every package under compiler/ and vm/."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    include = config["tool"]["setuptools"]["packages"]["find"]["include"]
    expected = {
        ".".join(d.relative_to(ROOT).parts)
        for top in ("compiler", "vm")
        for d in [ROOT / top, *(ROOT / top).rglob("*")]
        if d.is_dir() and (d / "__init__.py").exists()
    }
    not_selected = sorted(p for p in expected if not any(fnmatch(p, pattern) for pattern in include))
    assert not not_selected, f"not installed: {not_selected}"
    assert not any(fnmatch("tests", pattern) for pattern in include), "tests must not be installed"


def test_no_module_is_over_600_lines() -> None:
    """Modules in compiler/ and vm/ stay under 600 lines (split by responsibility, as
    STYLE.md asks and issue #18 set as its bar)."""
    long = {
        str(p.relative_to(ROOT)): n
        for top in ("compiler", "vm")
        for p in (ROOT / top).rglob("*.py")
        if (n := len(p.read_text().splitlines())) > 600
    }
    assert long == {}
