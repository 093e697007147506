"""Sphinx extension: MathJax on every page whose notebook tables carry mathematics.

The notebooks' tables are HTML made by pandas (``lmcompanion.tables.html``), which sets TeX written between dollars
as ``<span class="math ...">\\(...\\)</span>``, the markup Sphinx gives a ``{math}`` role. Sphinx loads MathJax only
on pages whose doctree has math nodes, and a table is raw HTML to it: a page whose only mathematics is in a table
would show the TeX. This marks such pages as having equations, before Sphinx decides (``html-page-context``).
Named in ``_config.yml`` under ``sphinx.local_extensions``.
"""

from __future__ import annotations

from docutils import nodes

MARK = 'class="math notranslate nohighlight"'


def _mark(app, pagename, templatename, context, doctree) -> None:
    if doctree is None:
        return
    if any(MARK in node.astext() for node in doctree.findall(nodes.raw) if "html" in node.get("format", "")):
        app.env.get_domain("math").data["has_equations"][pagename] = True


def setup(app):
    app.connect("html-page-context", _mark, priority=400)  # before sphinx.ext.mathjax decides (500)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
