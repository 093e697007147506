"""Sphinx extension: every figure's alt text says what it shows, taken from its caption.

A notebook's figure cell gives a caption (``mystnb: figure: caption``) and no alt text, so myst-nb's image gets
none and the HTML writer uses the image's file path. This sets the alt text of every image in a figure that has a
caption, and has none of its own, to the caption's text (its mathematics as written, without the dollar signs), so a
reader who cannot see the image hears what it shows. Named in ``_config.yml`` under ``sphinx.local_extensions``.
"""

from __future__ import annotations

from docutils import nodes


def caption_text(figure: nodes.figure) -> str:
    """The text of a figure's caption, on one line ("" where it has none)."""
    caption = next(iter(figure.findall(nodes.caption)), None)
    if caption is None:
        return ""
    return " ".join(caption.astext().replace("$", "").split())


def _set_alt(app, doctree, docname) -> None:
    for figure in doctree.findall(nodes.figure):
        text = caption_text(figure)
        if not text:
            continue
        for image in figure.findall(nodes.image):
            if not image.get("alt") or image["alt"] == image.get("uri"):
                image["alt"] = text


def setup(app):
    app.connect("doctree-resolved", _set_alt)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
