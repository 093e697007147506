"""Sphinx extension: each notebook page offers its jupytext source (``.py``) for download beside the ``.ipynb``.

The book's pages are the executed ``notebooks/**/*.ipynb``; their sources are the ``.py`` files next to them. For
every page with such a source, this copies the ``.py`` into the HTML output's ``_sources/`` (where the theme's
download button already points for the ``.ipynb``) and adds a ``.py`` entry to sphinx-book-theme's download menu.
Named in ``_config.yml`` under ``sphinx.local_extensions``.
"""

from __future__ import annotations

import shutil
from pathlib import Path


def _source(app, docname: str) -> Path | None:
    """The jupytext source of a notebook page, when there is one."""
    page = Path(app.env.doc2path(docname))
    source = page.with_suffix(".py")
    return source if page.suffix == ".ipynb" and source.is_file() else None


def _add_button(app, pagename, templatename, context, doctree) -> None:
    if doctree is None or _source(app, pagename) is None:
        return
    for group in context.get("header_buttons", []):
        if group.get("label") == "download-buttons":
            group["buttons"].insert(1, {
                "type": "link",
                "url": f"{context['pathto']('_sources', 1)}/{pagename}.py",
                "text": ".py",
                "tooltip": "Download the notebook's source (a jupytext percent script)",
                "icon": "fas fa-file-code",
                "label": "download-py-source-button",
            })


def _copy_sources(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    for docname in sorted(app.env.found_docs):
        source = _source(app, docname)
        if source is not None:
            target = Path(app.outdir) / "_sources" / f"{docname}.py"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)


def setup(app):
    app.connect("html-page-context", _add_button, priority=600)  # after sphinx-book-theme builds the menu (501)
    app.connect("build-finished", _copy_sources)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
