"""The explorer page: ``page.html`` with ``page.css``, ``page.js`` and the data document inline.

The three files ship in the package (``syntaxlm/view/``); ``render_page`` puts the document
(``view.data``) into the page as a ``<script type="application/json">`` element, every ``<``
escaped so that no text in the data can close it, and the script draws the views from it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from importlib import resources
from pathlib import Path
from typing import Any

from syntaxlm.files import atomic_writer

DATA_ELEMENT = "view-data"
MARKER = re.compile(r"/\*(STYLE|SCRIPT|DATA)\*/")  # where page.html takes the other parts


def _asset(name: str) -> str:
    return resources.files("syntaxlm.view").joinpath(name).read_text(encoding="utf-8")


SURROGATE = re.compile(r"[\ud800-\udfff]")


def embedded_json(document: dict[str, Any]) -> str:
    """The document as JSON safe inside a script element (``<``, ``>`` and ``&`` as escapes) and
    in a UTF-8 file (a lone surrogate, which JSON text read from a file may hold, as an escape)."""
    text = json.dumps(document, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    text = SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_page(document: dict[str, Any]) -> str:
    """The whole page for ``document``."""
    page = _asset("page.html")
    parts = {"STYLE": _asset("page.css"), "SCRIPT": _asset("page.js"), "DATA": embedded_json(document)}
    found = MARKER.findall(page)
    if sorted(found) != sorted(parts):
        raise RuntimeError(f"page.html holds the markers {found}; expected each of {sorted(parts)} once")
    return MARKER.sub(lambda match: parts[match.group(1)], page)


def read_embedded(path: str | Path) -> dict[str, Any]:
    """The document embedded in a page written by ``write_view``."""
    text = Path(path).read_text(encoding="utf-8")
    start = text.index(f'<script id="{DATA_ELEMENT}" type="application/json">')
    start = text.index(">", start) + 1
    return json.loads(text[start : text.index("</script>", start)])


def write_view(
    paths: Iterable[str | Path],
    out: str | Path,
    *,
    echo: Callable[[str], None] = lambda message: None,
    **options: Any,
) -> Path:
    """Write the page for ``paths`` (run folders or result files) to ``out``; ``options`` are
    those of ``view_data``. Returns the page's path."""
    from syntaxlm.view.data import view_data

    document = view_data(paths, echo=echo, **options)
    out = Path(out)
    with atomic_writer(out) as handle:
        handle.write(render_page(document))
    return out
