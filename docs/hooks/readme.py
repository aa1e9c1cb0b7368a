"""MkDocs hook: the site's home page is the repository's README.md, with
its links into docs/ made relative to the site and its links to files
outside docs/ turned into plain text."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri != "index.md":
        return markdown
    text = README.read_text(encoding="utf-8")
    text = re.sub(r"\]\(docs/([^)]+)\)", r"](\1)", text)
    return re.sub(r"\[([^\]]+)\]\((?!https?:|[a-z_]+\.md)[^)]*\)", r"\1", text)
