"""An explorer a person can look at: one self-contained HTML page comparing runs.

``write_view(paths, out)`` gathers the runs' numbers and what their saved models compute
(``view.data``) and writes ``out``, one HTML file with its data, styles and script inline
(``view.page``): it opens from disk, with no server and no network. ``syntaxlm view`` is its
command; the quickstart writes ``view.html`` beside ``report.md``.
"""

from syntaxlm.view.data import view_data
from syntaxlm.view.page import render_page, write_view

__all__ = ["render_page", "view_data", "write_view"]
