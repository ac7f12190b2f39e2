"""One small HTML renderer for the Jupyter reprs of Universe, Tokenizer, Corpus and Ragged."""

from __future__ import annotations

from html import escape


def card(title: str, fields: dict, samples: list[tuple[str, str]] | None = None) -> str:
    """A titled key/value table, optionally followed by a few decoded records."""
    rows = "".join(f"<tr><th style='text-align:left;padding-right:1em'>{escape(str(k))}</th>"
                   f"<td style='text-align:left'>{escape(str(v))}</td></tr>" for k, v in fields.items())
    html = (f"<div class='genotok-repr'><strong>{escape(title)}</strong>"
            f"<table style='margin-top:0.3em'>{rows}</table>")
    if samples:
        items = "".join(f"<tr><th style='text-align:left;padding-right:1em'>{escape(k)}</th>"
                        f"<td style='text-align:left;font-family:monospace'>{escape(v)}</td></tr>"
                        for k, v in samples)
        html += f"<details open><summary>records</summary><table>{items}</table></details>"
    return html + "</div>"


def preview(tokens: list[str], k: int = 6) -> str:
    """The first tokens of a record, with the count of the rest."""
    head = ", ".join(tokens[:k])
    return head + (f", … (+{len(tokens) - k})" if len(tokens) > k else "")
