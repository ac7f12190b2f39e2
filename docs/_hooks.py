"""MkDocs hook: numpydoc/Sphinx cross-reference roles in docstrings rendered as links.

genotok's docstrings follow numpydoc and write ``:class:`~genotok.Tokenizer```; mkdocstrings
renders that as ``:class:<code>~genotok.Tokenizer</code>``, role and tilde shown literally. This
hook turns each one into an autorefs cross-reference (a link to the API page when the target is
documented, plain code otherwise), shortened as Sphinx would (``~a.b.C`` shows ``C``).
"""

from __future__ import annotations

import html
import re

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|attr|data|exc|obj|const|ref|term):"
                  r"<code>(?P<target>[^<]+)</code>")


def _link(m: re.Match) -> str:
    target = html.unescape(m["target"]).strip()
    short = target.startswith("~")
    target = target.lstrip("~").rstrip("()")
    shown = target.rsplit(".", 1)[-1] if short else target
    if m.group(0).startswith((":func:", ":meth:", ":py:func:", ":py:meth:")):
        shown += "()"
    return (f'<autoref identifier="{html.escape(target)}" optional>'
            f"<code>{html.escape(shown)}</code></autoref>")


def on_page_content(content: str, **kwargs) -> str:
    return ROLE.sub(_link, content)
