"""Checks that documentation shows files exactly as they are.

Usage: python3 blocks.py PAGE FILE [FILE...] [-- PAGE FILE...]...

Each FILE, less its opening comment, must be, line for line, one fenced code block of
PAGE in the FILE's language (``rust`` for .rs, with or without attributes such as
``rust,no_run``; ``js`` for .mjs and .js; ``python`` for .py). Prints one PASS or FAIL
line per file and exits 1 if any failed. Paths are relative to the repository root.
"""

import pathlib
import re
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
LANGUAGES = {".rs": ("rust", "//"), ".mjs": ("js", "//"), ".js": ("js", "//"), ".py": ("python", "#")}
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```$", re.S | re.M)


def body(path: pathlib.Path, comment: str) -> str:
    """The file's text without its opening comment (a `#!` line stays)."""
    lines = path.read_text().splitlines(keepends=True)
    while lines and lines[0].startswith(comment) and not lines[0].startswith(("#!", "#[")):
        lines.pop(0)
    return "".join(lines)


def blocks(page: pathlib.Path) -> list[tuple[str, str]]:
    """The page's fenced blocks: (language, text), the language without attributes."""
    return [(info.split(",")[0].strip(), text) for info, text in FENCE.findall(page.read_text())]


def main(args: list[str]) -> int:
    failed = 0
    groups, group = [], []
    for arg in args:
        if arg == "--":
            groups.append(group)
            group = []
        else:
            group.append(arg)
    groups.append(group)
    for page_name, *files in (g for g in groups if g):
        page = REPO / page_name
        shown = blocks(page) if page.is_file() else []
        for name in files:
            path = REPO / name
            language, comment = LANGUAGES[path.suffix]
            if (language, body(path, comment)) in shown:
                print(f"PASS {page_name} shows {name} as it is")
            else:
                print(f"FAIL {page_name} has no {language} block identical to {name}")
                failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
