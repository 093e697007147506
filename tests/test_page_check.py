"""tests/page_check.py finds what it is for: a squashed figure, a table past the column, raw TeX, a broken link, a
break inside a word, a box that scrolls apart, low contrast, a console error, a missing alt text, a page too long and
verdicts below the first screen.

The browser part runs only where Debian's chromium and chromium-driver and selenium (the page-check extra) are
installed; the parts that read files run everywhere."""

import base64
import importlib.util
import shutil
import struct
import zlib
from pathlib import Path

import pytest

import page_check

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
has_browser = CHROMIUM.exists() and CHROMEDRIVER.exists() and importlib.util.find_spec("selenium") is not None


def _png(width: int, height: int) -> bytes:
    """A grey PNG of this size (no imaging library needed)."""

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


PAGE = """<html><head><style>
article.bd-article {{ width: 600px; padding: 0; }}
.scroll {{ overflow-x: auto; --lmc-scroll: visible; }}
.cut {{ overflow-x: auto; }}
img {{ max-width: 100%; }}
</style></head><body><article class="bd-article">
<h2 id="figures">Figures</h2>
<img src="{img}" style="width: 800px; height: 400px;">
<img src="{img}" style="width: 800px;">
<h2 id="tables">Tables</h2>
<table><tr><td style="white-space: nowrap">{wide}</td></tr></table>
<div class="scroll"><table><tr><td style="white-space: nowrap">{wide}</td></tr></table></div>
<div class="cut"><table><tr><td style="white-space: nowrap">{wide}</td></tr></table></div>
<p>The distance $L^1$ and E_{{i+1}} stay raw; <code>$HOME</code> is code.</p>
<a href="other.html#there">fine</a> <a href="other.html#nowhere">no anchor</a> <a href="missing.html">no page</a>
<a href="https://example.org/x">outside</a>
</article></body></html>"""


@pytest.fixture
def site(tmp_path):
    png = "data:image/png;base64," + base64.b64encode(_png(40, 20)).decode()
    (tmp_path / "index.html").write_text(PAGE.format(img=png, wide="x " * 400))
    (tmp_path / "other.html").write_text(
        '<html><body><article class="bd-article"><p id="there">x</p></article></body></html>'
    )
    return tmp_path


def test_internal_links_resolve_to_a_file_and_an_anchor(site):
    bad = page_check.check_links(site, site / "index.html", {})
    assert bad == ["other.html#nowhere (no element #nowhere on other.html)", "missing.html (no such file)"]


def test_raw_tex_is_found_in_text_and_names_with_underscores_are_not():
    found = page_check.raw_math(
        [
            "the $L^1$ distance",
            "E_{i+1} here",
            "(z^i, x^i)",
            "8 \\ln 2",
            "𝒲_enc",
            "W_e and d_model",
            "x ∈ ℝ",
            "mixer/expanded_d256",
        ]
    )
    assert len(found) == 5, found


@pytest.mark.skipif(not has_browser, reason="needs Debian's chromium and chromium-driver, and selenium")
def test_the_browser_check_finds_a_squashed_figure_an_overflowing_table_and_raw_math(site):
    report = page_check.check(
        site,
        {"laptop": 1400},
        chromium=str(CHROMIUM),
        chromedriver=str(CHROMEDRIVER),
        pages=["index"],
        log=lambda *_: None,
    )
    kinds = [(p.kind, p.what.split(" ")[0]) for p in report.problems if p.page == "index.html"]
    assert report.figures["laptop"] == [2, 1]  # the one with a fixed height is squashed, the other is not
    assert ("overflow", "table") in kinds  # past the column, in no scroll container
    assert ("cut off", "table") in kinds  # in a scroll container that does not show it
    assert ("scrolls", "table") in kinds  # a visible scroll container, at a laptop's width: should fit
    assert sum(k == "raw math" for k, _ in kinds) == 1  # one text node: the first pattern found in it
    assert sum(k == "link" for k, _ in kinds) == 2
    phone = page_check.check(
        site,
        {"phone": 390},
        chromium=str(CHROMIUM),
        chromedriver=str(CHROMEDRIVER),
        pages=["index"],
        log=lambda *_: None,
    )
    assert phone.scrolled["phone"] >= 1  # at a phone's width the visible scroll container is allowed
    assert shutil.which(str(CHROMIUM))


READER = """<html><head><style>
article.bd-article {{ width: 300px; padding: 0; font: 16px sans-serif; }}
td.anywhere {{ overflow-wrap: anywhere; }}
.box {{ max-height: 100px; overflow-y: auto; }}
.pale {{ color: #bbbbbb; background: #ffffff; }}
.lmc-badge.lmc-holds {{ color: #ffffff; background: #1a7f37; }}
</style></head><body><article class="bd-article">
<div style="height: {spacer}px">the method, before the verdicts</div>
<div class="lmc-first"><span class="lmc-badge lmc-holds">holds at cpu</span></div>
<table style="width: 60px"><tr><td class="anywhere">Definition attn_384_32_e6 +0.0184</td></tr></table>
<div class="box">{lines}</div>
<p class="pale">too pale to read</p>
<img src="{img}" alt="{img_alt}">
<script>const twice = 1;</script><script>const twice = 2;</script>
</article></body></html>"""


@pytest.mark.skipif(not has_browser, reason="needs Debian's chromium and chromium-driver, and selenium")
def test_the_reader_checks_find_breaks_inside_words_scrolling_boxes_low_contrast_console_errors_and_late_verdicts(
    tmp_path,
):
    png = "data:image/png;base64," + base64.b64encode(_png(40, 20)).decode()
    lines = "<br>".join(f"line {i}" for i in range(40))
    (tmp_path / "index.html").write_text(READER.format(spacer=1200, lines=lines, img=png, img_alt="x.png"))
    report = page_check.check(
        tmp_path,
        {"laptop": 1400},
        chromium=str(CHROMIUM),
        chromedriver=str(CHROMEDRIVER),
        log=lambda *_: None,
        max_height=1000,
        first_screen="index",
    )
    kinds = {}
    for p in report.problems:
        kinds.setdefault(p.kind, []).append(p.what)
    assert report.breaks["laptop"] >= 2 and any("Definiti" in w or "attn_" in w for w in kinds["mid-word"])
    assert len(kinds["box scrolls"]) == 1 and "div.box" in kinds["box scrolls"][0]
    assert any("too pale" in w for w in kinds["contrast"]) and not any("holds at cpu" in w for w in kinds["contrast"])
    assert any("already been declared" in w for w in kinds["console"])
    assert len(kinds["alt text"]) == 1
    assert len(kinds["long"]) == 1  # taller than max_height
    assert "below the first screen" in kinds["first screen"][0]  # the verdict sits under 1,200 px of method
    # the same page with its verdict first, a box that fits, text that breaks between words, and an alt text: clean
    (tmp_path / "index.html").write_text(
        READER.format(spacer=10, lines="one line", img=png, img_alt="a grey box")
        .replace('class="anywhere"', "")
        .replace("+0.0184", "")
        .replace('<p class="pale">too pale to read</p>', "")
        .replace("<script>const twice = 2;</script>", "")
    )
    clean = page_check.check(
        tmp_path,
        {"laptop": 1400},
        chromium=str(CHROMIUM),
        chromedriver=str(CHROMEDRIVER),
        log=lambda *_: None,
        max_height=1000,
        first_screen="index",
    )
    assert [p for p in clean.problems if p.kind != "overflow"] == [], clean.problems
