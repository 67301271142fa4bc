"""The golden-file machinery: a differing output fails with a diff, and ``--regen-goldens``
writes exactly the new output into its case, leaving the other cases and comments alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.goldens import read_cases

TEXT = """-- a comment about the file

[case first]
-- what the first case shows
input one
[out]
old one

[case second]
input two
[out]
old two
"""


def test_a_differing_output_fails_with_a_diff(tmp_path: Path) -> None:
    path = tmp_path / "x.test"
    path.write_text(TEXT)
    first, second = read_cases(path)
    assert (first.name, first.source, first.expected) == ("first", "input one\n", "old one\n")
    assert (second.name, second.source, second.expected) == ("second", "input two\n", "old two\n")
    first.check("old one\n", regen=False)
    with pytest.raises(AssertionError, match=r"(?s)--regen-goldens.*-old one.*\+new one"):
        first.check("new one\n", regen=False)


def test_regen_rewrites_only_its_own_case(tmp_path: Path) -> None:
    path = tmp_path / "x.test"
    path.write_text(TEXT)
    first, second = read_cases(path)
    first.check("new one\nline two\n", regen=True)
    second.check("new two\n", regen=True)
    assert path.read_text() == TEXT.replace("old one\n", "new one\nline two\n").replace("old two", "new two")
    again = read_cases(path)
    assert [c.expected for c in again] == ["new one\nline two\n", "new two\n"]
    again[0].check("new one\nline two\n", regen=False)


def test_a_case_without_out_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.test"
    path.write_text("[case lonely]\ninput\n")
    with pytest.raises(ValueError, match=r"\[case lonely\] has no \[out\] section"):
        read_cases(path)
