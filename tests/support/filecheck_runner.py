"""FileCheck directives in test data, matched by the PyPI ``filecheck`` package.

Pass goldens (``tests/passes/<pass>/*.ir``) and a few IR texts in test modules carry
``# CHECK:`` lines (``CHECK-NEXT``, ``CHECK-SAME``, ``CHECK-NOT``, ``CHECK-DAG``,
``{{regex}}``, ``[[NAME:regex]]`` captures), as xDSL's tests do.  ``check_output`` hands
the directives and the text they describe to ``filecheck`` (LLVM FileCheck's semantics,
whitespace runs matching any run of blanks) and turns a mismatch into a ``CheckError``
that carries filecheck's own report: the directive's line and the output around it.

    >>> check_output("# CHECK: aten::add\\n# CHECK-NOT: aten::mul", "%1 = aten::add(%0)\\n")
"""

from __future__ import annotations

import io
import re
import tempfile
from pathlib import Path

import attrs
from filecheck.matcher import Matcher
from filecheck.options import DumpInputKind, Options

_DIRECTIVE = re.compile(r"^\s*#\s*CHECK(?:-NEXT|-SAME|-NOT|-DAG|-EMPTY|-LABEL|-COUNT-\d+)?:")


class CheckError(AssertionError):
    """The output does not satisfy the directives; the message is filecheck's report."""


def has_checks(text: str) -> bool:
    """Does ``text`` hold at least one directive line?"""
    return any(_DIRECTIVE.match(line) for line in text.splitlines())


def strip_checks(text: str) -> str:
    """``text`` without its directive lines (what the parser should read)."""
    return "\n".join(line for line in text.splitlines() if not _DIRECTIVE.match(line)) + "\n"


def check_output(checks: str, output: str, name: str = "checks.ir") -> None:
    """Match ``output`` against the directives in ``checks``; raise ``CheckError`` if it fails.

    ``name`` is the file the directives came from, for the report (``name:LINE: error``).
    A text with no directive fails: a check that checks nothing cannot fail.
    """
    with tempfile.TemporaryDirectory(prefix="irvm_filecheck_") as tmp:
        match_file, input_file = Path(tmp) / Path(name).name, Path(tmp) / "output.txt"
        match_file.write_text(checks, encoding="utf-8")
        input_file.write_text(output, encoding="utf-8")
        opts = Options(
            match_filename=str(match_file), input_file=str(input_file), dump_input=DumpInputKind.FAIL
        )
        matcher = Matcher.from_opts(opts)
        report = io.StringIO()
        matcher.stderr = report
        code = matcher.run()
    if code != 0:
        message = report.getvalue().replace(str(match_file), name).replace(str(input_file), "<output>")
        raise CheckError(f"{_ANSI.sub('', message)}\n--- output checked ---\n{output}")


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


SPLIT = "# -----"


@attrs.frozen
class Case:
    """One ``# -----``-separated case of a golden file, and where it starts in that file."""

    group: str  # the directory's name: the pass the case is for
    index: int  # position of the case in its file
    text: str
    path: Path
    first_line: int  # 1-based line of the case's first line in ``path``

    @property
    def id(self) -> str:
        return f"{self.group}-{self.index}"

    def check(self, output: str) -> None:
        """``check_output`` with the case's directives, reported at their lines in the file."""
        check_output("\n" * (self.first_line - 1) + self.text, output, str(self.path))


def golden_cases(root: Path) -> list[Case]:
    """The cases of every ``root/<group>/*.ir``, in sorted order."""
    cases = []
    for path in sorted(root.glob("*/*.ir")):
        line = 1
        for i, text in enumerate(path.read_text().split(SPLIT + "\n")):
            cases.append(Case(path.parent.name, i, text, path, line))
            line += text.count("\n") + 1
    return cases
