"""Print the SPEC.md §9.2 registry table from the reference's copy, reference/h5ml/spec/codes.py.

Usage: python scripts/update_spec_registry.py            -> prints the block
       python scripts/update_spec_registry.py --update F -> replaces the block between the markers in F
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reference"))
from h5ml.spec.codes import CODES

BEGIN, END = "<!-- registry:begin (the reference's copy: reference/h5ml/spec/codes.py) -->", "<!-- registry:end -->"


def block() -> str:
    rows = [BEGIN, "| Code | Name | Severity | Clause | Summary |", "|---|---|---|---|---|"]
    for c in CODES.values():
        summary = c.summary + (" (retired)" if c.retired else "")
        rows.append(f"| {c.code} | `{c.name}` | {c.severity.value} | {c.clause} | {summary} |")
    rows.append("")
    deep = [c.code for c in CODES.values() if c.deep]
    rows.append("Codes found only by deep validation: " + ", ".join(deep) + ".")
    rows.append(END)
    return "\n".join(rows)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--update":
        text = open(sys.argv[2], encoding="utf-8").read()
        i, j = text.index(BEGIN), text.index(END) + len(END)
        open(sys.argv[2], "w", encoding="utf-8").write(text[:i] + block() + text[j:])
    else:
        print(block())
