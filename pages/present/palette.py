"""The one method palette: every chart that colours by method takes its colours here, so a
method keeps its colour from page to page. No streamlit.

The paper's five methods (`engine.vocab.METHODS`) have fixed colours (Tableau 10's first
five, in the paper's order). A label of a method run in several studies ("beta · study B")
takes its method's colour when it is the first of that method in the chart, else the next
spare colour; anything else takes the spare colours in turn.
"""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt

from engine.methods import order_methods, paper_methods
from engine.vocab import LABEL_SEPARATOR
from pages.present.tables import method_title

#: method -> colour, for the paper's methods.
METHOD_COLOURS: dict[str, str] = dict(
    zip(paper_methods(), ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f"), strict=True)
)
#: Colours for labels beyond the paper's methods, in turn (Tableau 10's other five, then
#: Tableau 20's lighter tones).
SPARE_COLOURS: tuple[str, ...] = (
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
    "#aec7e8",
    "#ffbb78",
    "#98df8a",
    "#c5b0d5",
    "#c49c94",
)


def method_colours(methods: Sequence[str]) -> dict[str, str]:
    """Each method (or label) its colour, in the paper's order.

    Args:
        methods: Method names or labels ("beta", "beta · study B"); any order, repeats
            ignored.
    """
    out: dict[str, str] = {}
    spare = iter(SPARE_COLOURS * (1 + len(methods) // len(SPARE_COLOURS)))
    taken: set[str] = set()
    for method in order_methods(methods):
        base = method.partition(LABEL_SEPARATOR)[0].lower()
        if base in METHOD_COLOURS and base not in taken:
            out[method] = METHOD_COLOURS[base]
            taken.add(base)
        else:
            out[method] = next(spare)
    return out


def method_scale(methods: Sequence[str], *, titled: bool = True) -> alt.Scale:
    """An Altair colour scale with each method's colour.

    Args:
        methods: The methods (or labels) the chart shows.
        titled: The chart encodes display titles ("Beta", `method_title`); False: the
            methods' own names.
    """
    colours = method_colours(methods)
    domain = [method_title(m) if titled else m for m in colours]
    return alt.Scale(domain=domain, range=list(colours.values()))
