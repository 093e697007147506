"""Sphinx extension: the book's repository, named once (``repository.url`` in ``_config.yml``), on its pages.

Jupyter Book passes ``repository.url`` and ``repository.branch`` to the theme (``html_theme_options``: the GitHub
button on every page). This makes the same address available to the pages' text as MyST substitutions, so that no
page types it: ``{{ repository }}`` (a link), ``{{ repository_url }}`` and ``{{ repository_clone }}`` (the ``git
clone`` line). Without an address (``url: ""``) there is no button and no substitution (the pages link to the
source archive of their own build instead); a build whose address is Jupyter Book's own default (its placeholder)
stops, and so does one with the button but no address.
Named in ``_config.yml`` under ``sphinx.local_extensions``.
"""

from __future__ import annotations

from sphinx.errors import ConfigError

PLACEHOLDERS = ("executablebooks/jupyter-book", "jupyter-book/jupyter-book", "binder-examples/")


def substitutions(url: str, branch: str) -> dict[str, str]:
    """The substitutions a page may use, from the repository's address and branch."""
    url = url.rstrip("/")
    name = "/".join(url.split("/")[-2:])
    return {"repository_url": url, "repository": f"[{name}]({url})", "repository_branch": branch,
            "repository_clone": f"git clone {url}.git"}


def _set(app, config) -> None:
    options = config.html_theme_options or {}
    url = options.get("repository_url") or ""
    if any(p in url for p in PLACEHOLDERS) or (options.get("use_repository_button") and not url):
        raise ConfigError(f"repository.url in _config.yml is {url or 'unset'}: name the book's own published "
                          "repository there, or set url: \"\" and html.use_repository_button: false")
    if not url:
        return
    config.myst_substitutions = {**(config.myst_substitutions or {}),
                                 **substitutions(url, options.get("repository_branch") or "main")}


def setup(app):
    app.connect("config-inited", _set, priority=400)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
