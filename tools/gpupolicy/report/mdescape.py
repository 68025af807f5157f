"""Repository content placed in a Markdown document, literally: the pull-request comment `gpupolicy diff`
writes.

Names, messages, plan fields and revisions come from the pull request. Written raw, a `<!--` opens an HTML
comment that hides the rest of the comment (its Findings section), a `<img>` or `<details>` injects HTML, a
`|` splits a table cell, a newline ends a table, and `*`, `_`, `[`, `` ` `` change what the reader sees. Every
piece of content goes through one of these before it joins the Markdown: `text` for inline text, `code` for a
code span, `link` for a link, `html_text` inside an HTML element. Their results are `Markdown`, which the
table writer passes through unchanged; anything else it escapes with `text`. CommonMark: any ASCII punctuation
may be backslash-escaped, and entity references stand for their character without being parsed as HTML
(spec.commonmark.org, "Backslash escapes", "Entity and numeric character references"); GFM: `\\|` keeps a pipe
inside a table cell, also inside a code span (github.github.com/gfm, "Tables").
"""

from __future__ import annotations

import html
import re
from urllib.parse import quote, urlsplit


class Markdown(str):
    """Text that is already safe Markdown (built by this module, or by the writer from literals)."""


_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]+")  # newlines end a table row; other controls are noise
_PUNCTUATION = re.compile(r"([\\`*_\[\]|~])")
_LINE_START = re.compile(r"^(\s*)([#+\-=>]|\d+[.)])")  # a heading, list, rule or quote if it started a line


def _one_line(value: object) -> str:
    return _CONTROL.sub(" ", str(value))


def text(value: object, line_start: bool = False) -> Markdown:
    """`value` as inline text that renders as written: no HTML, no comment, no emphasis, link or cell break.
    `line_start`: the text begins a line, where `#`, `-`, `+`, `>` or `1.` would make a heading, list or
    quote."""
    escaped = _one_line(value).replace("&", "&amp;").replace("<", "&lt;")  # nothing opens a tag or a comment
    escaped = _PUNCTUATION.sub(r"\\\1", escaped)
    if line_start:
        escaped = _LINE_START.sub(lambda m: m.group(1) + "\\" + m.group(2), escaped)
    return Markdown(escaped)


def code(value: object) -> Markdown:
    """`value` as a code span (literal: HTML and emphasis are not parsed inside one), usable in a table
    cell."""
    body = _one_line(value).replace("|", "\\|")
    longest = max((len(run) for run in re.findall("`+", body)), default=0)
    mark = "`" * (longest + 1)
    padded = f" {body} " if body.startswith("`") or body.endswith("`") or not body.strip() else body
    return Markdown(f"{mark}{padded}{mark}")


def link(label: object, url: str) -> Markdown:
    """A link to an http(s) `url` with `label` as text; just the text for any other URL."""
    if urlsplit(url).scheme not in ("http", "https"):
        return text(label)
    return Markdown(f"[{text(label)}]({quote(_one_line(url), safe=':/?#@!$&*+,;=%~-._')})")


def html_text(value: object) -> Markdown:
    """`value` inside an HTML element of the document (`<summary>`): entities for every markup character."""
    return Markdown(html.escape(_one_line(value), quote=True))
