"""Fragment-file text for hypothesis: valid lines mixed with neutral (blank, comment) and bad
ones, shared by ``tests/singlecell/test_fragments_bad_lines.py`` and the fragment fuzz campaign
(``tests/_frag_fuzz_driver.py``)."""

from __future__ import annotations

from hypothesis import strategies as st


@st.composite
def line_mix(draw, valid, neutral, bad, max_lines: int, tops, cr_odds: int) -> bytes:
    """Up to ``max_lines`` lines joined by newlines, the last one with or without its own: each
    drawn from ``valid`` (a strategy) 15 times in ``top + 1``, ``neutral`` 3 times, ``bad`` the
    rest (``top`` from ``tops``: 17 gives no bad line), one in ``cr_odds + 1`` ending in a CR."""
    lines = []
    top = draw(st.sampled_from(tops))
    for _ in range(draw(st.integers(0, max_lines))):
        kind = draw(st.integers(0, top))
        line = draw(valid) if kind < 15 else draw(st.sampled_from(neutral if kind < 18 else bad))
        if draw(st.integers(0, cr_odds)) == 0:
            line += b"\r"
        lines.append(line)
    text = b"\n".join(lines)
    if lines and draw(st.booleans()):
        text += b"\n"
    return text
