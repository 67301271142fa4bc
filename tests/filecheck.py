"""A small FileCheck: match ``# CHECK:`` directives against a pass's printed output.

LLVM's FileCheck (and xDSL's pass tests through the ``filecheck`` package) read checks
from comments in the test file itself.  We support the directives pass tests need:

``CHECK: pat``       ``pat`` occurs at or after the end of the previous match;
``CHECK-NEXT: pat``  ... on the line right after the previous match's line;
``CHECK-SAME: pat``  ... on the previous match's line, after it;
``CHECK-NOT: pat``   ``pat`` does not occur between the previous match and the next
                     positive match (or the end of the output);
``CHECK-DAG: pat``   consecutive DAG checks match in any order (not overlapping), all
                     after the previous match; the next check starts after the last.

A pattern is literal text with two escapes: ``{{regex}}`` and ``[[NAME:regex]]``, which
captures what ``regex`` matched under NAME for later ``[[NAME]]`` uses (so a test can say
``[[X:%[0-9a-z.]+]] = aten::mul`` and later ``aten::add([[X]]``).  Runs of whitespace match
any run of blanks, as FileCheck's default.

    >>> check_output("# CHECK: aten::add\\n# CHECK-NOT: aten::mul", "%1 = aten::add(%0)\\n")
"""

from __future__ import annotations

import re

import attrs

_DIRECTIVE = re.compile(r"^\s*#\s*(CHECK(?:-NEXT|-SAME|-NOT|-DAG)?):\s?(.*?)\s*$")


class CheckError(AssertionError):
    """A check failed; the message shows the directive and the output around the place."""


@attrs.frozen
class Check:
    kind: str  # CHECK, CHECK-NEXT, CHECK-SAME, CHECK-NOT, CHECK-DAG
    pattern: str
    line: int  # line in the test file, for messages


def parse_checks(text: str) -> list[Check]:
    """The directives of ``text``, in order (other lines are ignored)."""
    return [
        Check(m.group(1), m.group(2), i + 1)
        for i, line in enumerate(text.splitlines())
        if (m := _DIRECTIVE.match(line))
    ]


def strip_checks(text: str) -> str:
    """``text`` without its directive lines (what the parser should read)."""
    return "\n".join(line for line in text.splitlines() if not _DIRECTIVE.match(line)) + "\n"


def _regex(pattern: str, captures: dict[str, str]) -> re.Pattern[str]:
    out: list[str] = []
    pos = 0
    for m in re.finditer(r"\{\{(.*?)\}\}|\[\[(\w+)(?::(.*?))?\]\]", pattern):
        out.append(_literal(pattern[pos : m.start()]))
        if m.group(1) is not None:
            out.append(f"(?:{m.group(1)})")
        elif m.group(3) is not None:
            out.append(f"(?P<{m.group(2)}>{m.group(3)})")
        else:
            name = m.group(2)
            if name not in captures:
                raise CheckError(f"[[{name}]] used before it was captured")
            out.append(re.escape(captures[name]))
        pos = m.end()
    out.append(_literal(pattern[pos:]))
    return re.compile("".join(out))


def _literal(text: str) -> str:
    return r"[ \t]+".join(re.escape(part) for part in re.split(r"[ \t]+", text))


class _Matcher:
    def __init__(self, output: str) -> None:
        self.output = output
        self.pos = 0
        self.captures: dict[str, str] = {}
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", output)]

    def line_of(self, offset: int) -> int:
        lo, hi = 0, len(self.line_starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.line_starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def line_span(self, line: int) -> tuple[int, int]:
        start = self.line_starts[line]
        end = self.output.find("\n", start)
        return start, len(self.output) if end < 0 else end

    def search(self, check: Check, start: int, end: int | None = None) -> re.Match[str] | None:
        regex = _regex(check.pattern, self.captures)
        return regex.search(self.output, start, len(self.output) if end is None else end)

    def accept(self, m: re.Match[str]) -> None:
        self.captures.update({k: v for k, v in m.groupdict().items() if v is not None})
        self.pos = m.end()

    def fail(self, check: Check, why: str) -> CheckError:
        line = self.line_of(min(self.pos, max(len(self.output) - 1, 0)))
        lo, hi = max(0, line - 3), line + 4
        excerpt = "\n".join(f"  {i + 1:4} | {t}" for i, t in enumerate(self.output.splitlines()) if lo <= i < hi)
        return CheckError(f"line {check.line}: {check.kind}: {check.pattern!r} {why}\noutput near line {line + 1}:\n{excerpt}")


def check_output(check_text: str | list[Check], output: str) -> None:
    """Raise CheckError unless ``output`` satisfies the directives in ``check_text``."""
    checks = parse_checks(check_text) if isinstance(check_text, str) else check_text
    if not checks:
        raise CheckError("no CHECK directives: a test without checks cannot fail")
    m = _Matcher(output)
    pending_not: list[Check] = []
    i = 0
    while i < len(checks):
        check = checks[i]
        if check.kind == "CHECK-NOT":
            pending_not.append(check)
            i += 1
            continue
        start = m.pos
        if check.kind == "CHECK-DAG":
            j = i
            while j < len(checks) and checks[j].kind == "CHECK-DAG":
                j += 1
            _match_dag(m, checks[i:j])
            i = j
        else:
            _match_one(m, check)
            i += 1
        for bad in pending_not:
            found = m.search(bad, start, m.last_start)
            if found:
                m.pos = found.start()
                raise m.fail(bad, "matched, but must not occur here")
        pending_not = []
    for bad in pending_not:
        if m.search(bad, m.pos):
            raise m.fail(bad, "matched, but must not occur after the last match")


def _match_one(m: _Matcher, check: Check) -> None:
    prev_line = m.line_of(max(m.pos - 1, 0)) if m.pos else -1
    if check.kind == "CHECK-NEXT":
        if prev_line + 1 >= len(m.line_starts):
            raise m.fail(check, "has no next line")
        lo, hi = m.line_span(prev_line + 1)
        found = m.search(check, lo, hi)
    elif check.kind == "CHECK-SAME":
        _, hi = m.line_span(max(prev_line, 0))
        found = m.search(check, m.pos, hi)
    else:
        found = m.search(check, m.pos)
    if not found:
        raise m.fail(check, "not found" + (" on the expected line" if check.kind != "CHECK" else ""))
    m.last_start = found.start()
    m.accept(found)


def _match_dag(m: _Matcher, group: list[Check]) -> None:
    start, used, end = m.pos, [], m.pos
    first = len(m.output)
    for check in group:
        pos = start
        while True:
            found = m.search(check, pos)
            if not found:
                raise m.fail(check, "not found (CHECK-DAG)")
            if not any(a < found.end() and found.start() < b for a, b in used):
                break
            pos = found.start() + 1
        used.append((found.start(), found.end()))
        m.captures.update({k: v for k, v in found.groupdict().items() if v is not None})
        end, first = max(end, found.end()), min(first, found.start())
    m.pos, m.last_start = end, first


_Matcher.last_start = 0  # type: ignore[attr-defined]
