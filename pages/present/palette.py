"""The one method palette: every chart that colours by method takes its colours here, so a
method keeps its colour from page to page, whatever else a chart shows. No streamlit.

Which colours, and why:

* The first nine are Paul Tol's **muted** qualitative scheme (rose, indigo, sand, green,
  cyan, wine, teal, olive, purple; P. Tol, "Colour Schemes", SRON/EPS/TN/09-002, 2021;
  the ``tol-colors`` package's ``muted`` set). Tol designed it for categorical data that
  people with the common colour-vision deficiencies (protan, deutan, tritan) can still
  tell apart, in lines and in fills on white, which is what our charts draw. Okabe-Ito was
  the other candidate: it has eight colours, one of them black (our median and axis
  colour) and one yellow that vanishes on white as a line.
* Then the four entries of Tol's **light** scheme with a hue the muted nine lack (light blue,
  orange, pear, pink), Tol's **vibrant** red (the light scheme's other four, mint, light
  yellow, light cyan and olive, sit next to muted's teal, sand, cyan and olive: CORN in mint
  beside Poisson in teal was hard to tell apart), then those four, also from Tol's notes.
* Past those 18, the colours repeat the 18 hues darker (then lighter, in turn), so every
  name still gets a colour of its own and nothing crashes at any count.

Who gets which: every built-in method has a fixed colour (`BUILTIN_COLOUR_INDEX`: the paper's
five the first five, the other nine the next nine), so a method is the same colour on every
page whatever else is shown, and adding a method recolours none of them (by registry
position, adding one recoloured 8 of 14: issue 37). Any other name (a lab's plug-in method,
results imported from another tool, a second label of one method, "beta · study B") takes
the first colours no built-in method holds, in the chart's order.

Beyond what colour can separate: nobody tells fourteen hues apart reliably, colour-blind or
not, so colour is never the only cue. Charts that place methods on an axis or in facets
(violins, box plots, the CD diagram, Table 4, per-method panels) label each method by name;
line charts (reliability, learning curves, the stress test) also give each block of the
palette its own dash (`method_dashes`: muted solid, light dashed, further dotted), so the
10th method's line differs from the 1st's in dash as well as shade; every tooltip names the
method.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import altair as alt

from engine.methods import BUILT_IN_ORDER, method_label, method_names, order_methods
from engine.vocab import LABEL_SEPARATOR
from pages.present.tables import method_title

#: Paul Tol's muted qualitative scheme, in his order (pale grey, his "bad data", left out).
TOL_MUTED: tuple[str, ...] = (
    "#CC6677",  # rose
    "#332288",  # indigo
    "#DDCC77",  # sand
    "#117733",  # green
    "#88CCEE",  # cyan
    "#882255",  # wine
    "#44AA99",  # teal
    "#999933",  # olive
    "#AA4499",  # purple
)
#: Paul Tol's light scheme (pale grey left out), the hues muted lacks first: light cyan,
#: mint, light yellow and olive sit close to muted's cyan, teal, sand and olive.
TOL_LIGHT: tuple[str, ...] = (
    "#77AADD",  # light blue
    "#EE8866",  # orange
    "#BBCC33",  # pear
    "#FFAABB",  # pink
    "#44BB99",  # mint
    "#EEDD88",  # light yellow
    "#99DDFF",  # light cyan
    "#AAAA00",  # olive
)
#: Paul Tol's vibrant red: a 14th hue unlike the muted nine and the light four.
TOL_VIBRANT_RED = "#CC3311"
PALETTE: tuple[str, ...] = TOL_MUTED + TOL_LIGHT[:4] + (TOL_VIBRANT_RED,) + TOL_LIGHT[4:]
#: Each built-in method's palette index, for good: the paper's five first (in the paper's
#: order), then the others. A method not here takes the first indices none of these holds.
BUILTIN_COLOUR_INDEX: dict[str, int] = {name: i for i, name in enumerate(BUILT_IN_ORDER)}
#: One dash per block of the palette (muted, light, then each further round), for lines.
DASHES: tuple[tuple[int, ...], ...] = ((1, 0), (6, 3), (2, 2), (8, 3, 2, 3))


def colour_at(index: int) -> str:
    """The palette's colour number ``index`` (0-based), for any index >= 0.

    Past `PALETTE`, round r (r >= 1) repeats its hues mixed with black (odd rounds) or
    white (even rounds), a little more each time, so no two indices share a colour.
    """
    if index < 0:
        raise ValueError(f"{index=} must be >= 0")
    rnd, base = divmod(index, len(PALETTE))
    if rnd == 0:
        return PALETTE[base]
    towards = (0, 0, 0) if rnd % 2 else (255, 255, 255)
    share = min(0.2 + 0.1 * ((rnd - 1) // 2), 0.8)
    rgb = [int(PALETTE[base][i : i + 2], 16) for i in (1, 3, 5)]
    mixed = [round(c + (t - c) * share) for c, t in zip(rgb, towards, strict=True)]
    return "#" + "".join(f"{c:02X}" for c in mixed)


def dash_at(index: int) -> list[int]:
    """The line dash of palette colour number ``index``: one per block (`DASHES`)."""
    if index < len(TOL_MUTED):
        block = 0
    elif index < len(PALETTE):
        block = 1
    else:
        block = 2 + (index // len(PALETTE) - 1) % (len(DASHES) - 2)
    return list(DASHES[block])


def _palette_indices(methods: Sequence[str]) -> dict[str, int]:
    """Each method (or label) its palette index, in display order: a built-in method its
    fixed index (`BUILTIN_COLOUR_INDEX`; the first label of it in the chart); anything else
    the next index no built-in method holds. A method may come by name or by display title
    ("CDW-CE")."""
    fixed = dict(BUILTIN_COLOUR_INDEX)
    fixed.update({method_label(name).lower(): i for name, i in BUILTIN_COLOUR_INDEX.items()})
    held = set(BUILTIN_COLOUR_INDEX.values())
    spare = (i for i in itertools.count() if i not in held)
    taken: set[int] = set()
    out: dict[str, int] = {}
    for method in order_methods(methods):
        base = method.partition(LABEL_SEPARATOR)[0]
        index = fixed.get(base, fixed.get(base.lower()))
        if index is not None and index not in taken:
            out[method] = index
            taken.add(index)
        else:
            out[method] = next(spare)
    return out


def method_colours(methods: Sequence[str]) -> dict[str, str]:
    """Each method (or label) its colour, in display order.

    Args:
        methods: Method names or labels ("beta", "beta · study B", "my_imported_loss"); any
            order, repeats ignored, any number.
    """
    return {m: colour_at(i) for m, i in _palette_indices(methods).items()}


def method_dashes(methods: Sequence[str]) -> dict[str, list[int]]:
    """Each method (or label) its line dash (`dash_at`), in display order."""
    return {m: dash_at(i) for m, i in _palette_indices(methods).items()}


#: method -> colour, for every registered method (registry order).
METHOD_COLOURS: dict[str, str] = method_colours(method_names())


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


def method_dash_scale(methods: Sequence[str], *, titled: bool = True) -> alt.Scale:
    """An Altair strokeDash scale giving each method its block's dash (`method_dashes`)."""
    dashes = method_dashes(methods)
    domain = [method_title(m) if titled else m for m in dashes]
    return alt.Scale(domain=domain, range=list(dashes.values()))
