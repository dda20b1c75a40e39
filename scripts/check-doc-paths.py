#!/usr/bin/env python3
"""Every repository path that README.md and docs/**/*.md name in backticks must exist.

A path is a backticked token starting with one of the repository's top-level folders (docs/, crates/,
scripts/, assets/, src-tauri/, ui/, tests/, .ci/) without placeholders (<, {, *, …). Paths git ignores
(made by scripts/setup.sh: assets/models/, ui/dist) are not required. Moving a file without updating
the documents that name it fails here. Exit code 1 lists the broken ones."""
import pathlib
import re
import subprocess
import sys

root = pathlib.Path(__file__).resolve().parent.parent
roots = ("docs/", "crates/", "scripts/", "assets/", "src-tauri/", "ui/", "tests/", ".ci/")
documents = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
broken = []
for document in documents:
    for number, line in enumerate(document.read_text(encoding="utf-8").splitlines(), 1):
        for token in re.findall(r"`([^`\s]+)`", line):
            path = token.rstrip(".,:;)")
            if not path.startswith(roots) or re.search(r"[<>{}*…|$]", path):
                continue
            path = path.split("#")[0].split(":")[0]
            # A folder pattern ("dist/") matches only with the slash when the folder does not exist yet.
            ignored = any(
                subprocess.run(["git", "-C", str(root), "check-ignore", "-q", candidate]).returncode == 0
                for candidate in (path, path.rstrip("/") + "/")
            )
            if not (root / path).exists() and not ignored:
                broken.append(f"{document.relative_to(root)}:{number}: `{token}` does not exist")
for problem in broken:
    print(problem, file=sys.stderr)
sys.exit(1 if broken else 0)
