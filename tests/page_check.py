"""The built book read in a real browser (headless Chromium, driven by selenium), at three window widths.

``python tests/page_check.py [HTML_DIR]`` (``make page-check``; default ``_build/html``, the smoke book is
``_build/smoke/_build/html``) opens every page of a built book at each width (phone 390, laptop 1400, wide 1920
CSS pixels, or ``--widths``), waits for MathJax to typeset, and checks what a reader sees:

- **figures**: every image's displayed aspect ratio equals its file's, within 1% (an image given a fixed height is
  squashed when the text column narrows it); an image that did not load is an error too;
- **overflow**: no table, code block or display equation reaches past the text column, unless it sits in a
  *visible* scroll container (an element of ``book/_static/custom.css`` that scrolls and shows it can, marked there
  by the custom property ``--lmc-scroll``); at the laptop and wide widths a table or code block may not need such a
  container either (``--strict-from``): only the phone's column is too narrow for the widest tables;
- **mathematics**: no raw TeX left in the text a reader sees (``$...$``, ``\\(``, ``\\[``, ``\\command``, ``x_{...}``,
  ``x^{...}``), outside code and outside what MathJax typeset;
- **links**: every internal link (``href`` without a scheme) resolves to a file of the build, and its ``#anchor``,
  if any, to an element of that page;
- **breaks inside words**: no line of text (outside code) breaks between two letters or digits of one word, number
  or name ("Definiti|on", "+0.018|4", "attn_384_3|2_e6"); a name may break where the page allows it (``<wbr>``);
- **boxes that scroll apart**: no element of the text column scrolls up and down on its own (a summary capped at a
  share of the screen hides what the page's own scrolling skips);
- **the first screen**: on the intro and every landing page but the prologue's (``--first-screen``), the block of its
  conclusion and headline verdicts (``.lmc-first``, :mod:`lmcompanion.pages`) and its first verdict badge begin within
  the first screen (900 px), at every width;
- **page length**: no page is taller than ``--max-height`` (15,000 px) at the laptop and wide widths with every fold
  closed, as a reader first meets it (the scorecard's and the ledger's heights are printed at every width);
- **console errors**: nothing the page logs as an error in the browser's console (a script that fails);
- **contrast**: every piece of text outside code, and every verdict badge and filter button, against the background
  it is drawn on: at least 4.5:1 (3:1 for large text), WCAG's formula; text shown only on hover is skipped;
- **alt text**: no image's alt text is missing or its file's name.

It prints one line per problem (page, width, what) and a count per width, and exits 1 if there is any. Chromium and
its driver come from Debian (``apt-get install -y chromium chromium-driver``: ``/usr/bin/chromium`` and
``/usr/bin/chromedriver``; ``--chromium`` and ``--chromedriver`` name others). Nothing is fetched: the browser is
started without network services, and selenium is given the driver, so it never looks for one.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlsplit

WIDTHS = {"phone": 390, "laptop": 1400, "wide": 1920}
HEIGHT = 900
MAX_HEIGHT = 15_000  # px: the longest a page may be at the laptop and wide widths, every fold closed
# the pages whose first screen must show their conclusion and headline verdicts (.lmc-first, lmcompanion.pages):
# the intro and every chapter's landing page but the prologue's, which decides nothing
FIRST_SCREEN = r"^book/(intro|(?!prologue/)[^/]+/index)\.html$"
ASPECT_TOLERANCE = 0.01
SKIP = ("_static/", "_sources/", "_images/", "genindex.html", "search.html")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
]

# What a reader would see as unrendered TeX. Each is tested on text outside code, outside MathJax's output.
RAW_MATH = [
    ("$...$", re.compile(r"\$[^$\s][^$]*\$|\$\$")),
    ("\\( or \\[", re.compile(r"\\[()\[\]]")),
    ("a TeX command", re.compile(r"\\(?:[a-zA-Z]{2,}|[,;!])")),
    ("x_{...}", re.compile(r"[\w)\]}\u0370-\u03ff\U0001d400-\U0001d7ff]_\{")),
    ("x^{...} or x^i", re.compile(r"[\w)\]}\u0370-\u03ff\U0001d400-\U0001d7ff]\^(?:\{|[A-Za-z0-9(])")),
    ("a math letter with _sub", re.compile(r"[\u0370-\u03ff\U0001d400-\U0001d7ff]_\w")),
]

# Runs in the page: everything the checks need from the layout, at the current width.
MEASURE = r"""
const col = document.querySelector('article.bd-article') || document.querySelector('main') || document.body;
const cs = getComputedStyle(col);
const colBox = col.getBoundingClientRect();
const left = colBox.left + parseFloat(cs.paddingLeft), right = colBox.right - parseFloat(cs.paddingRight);
const visible = el => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0 && el.getClientRects().length > 0; };
const path = el => { const parts = []; for (let e = el; e && e !== col && parts.length < 4; e = e.parentElement) {
  let s = e.tagName.toLowerCase(); if (e.id) s += '#' + e.id; else if (e.classList.length) s += '.' + [...e.classList].slice(0, 2).join('.');
  parts.unshift(s); } return parts.join(' > '); };
const near = el => { let h = null; for (let e = el; e && !h; e = e.parentElement) {
  for (let p = e.previousElementSibling; p && !h; p = p.previousElementSibling) if (/^H[1-6]$/.test(p.tagName)) h = p; }
  return h ? h.textContent.replace('#', '').trim().slice(0, 60) : ''; };
const figures = [];
for (const img of col.querySelectorAll('img')) {
  if (!visible(img)) continue;
  const r = img.getBoundingClientRect();
  figures.push({src: img.getAttribute('src'), complete: img.complete, nw: img.naturalWidth, nh: img.naturalHeight,
                w: r.width, h: r.height, near: near(img), intended: parseFloat(img.style.width) || img.naturalWidth});
}
const scroller = el => { for (let e = el.parentElement; e instanceof Element && e !== col.parentElement; e = e.parentElement) {
  const s = getComputedStyle(e);
  if (s.overflowX === 'auto' || s.overflowX === 'scroll' || s.overflowX === 'hidden' || s.overflowX === 'clip') return e; }
  return null; };
const wide = [];
for (const el of col.querySelectorAll('table, pre, img, mjx-container[display="true"]')) {
  if (!visible(el) || (el.tagName === 'TABLE' && el.parentElement.closest('table'))) continue;
  const r = el.getBoundingClientRect();
  const width = Math.max(r.width, el.scrollWidth);
  const box = scroller(el);
  const boxRect = box ? box.getBoundingClientRect() : null;
  const needs = width > (box ? boxRect.width : right - left) + 1 || (!box && (r.right > right + 1 || r.left < left - 1));
  if (!needs) continue;
  const marked = box ? getComputedStyle(box).getPropertyValue('--lmc-scroll').trim() : '';
  const boxFits = box ? boxRect.right <= right + 1 && boxRect.left >= left - 1 : false;
  wide.push({kind: el.tagName.toLowerCase(), what: path(el), near: near(el), width: Math.round(width),
             column: Math.round(right - left), in_visible_scroller: Boolean(box && marked && boxFits),
             clipped: Boolean(box && !marked)});
}
const texts = [];
const walker = document.createTreeWalker(col, NodeFilter.SHOW_TEXT, {acceptNode: n => {
  for (let e = n.parentElement; e && e !== col; e = e.parentElement) {
    if (/^(SCRIPT|STYLE|CODE|PRE|KBD|SAMP|TEXTAREA|MJX-CONTAINER|MJX-ASSISTIVE-MML)$/.test(e.tagName)) return NodeFilter.FILTER_REJECT;
    if (e.classList.contains('highlight') || e.classList.contains('MathJax')) return NodeFilter.FILTER_REJECT;
  }
  return n.textContent.trim() ? NodeFilter.FILTER_ACCEPT : NodeFilter.FILTER_REJECT; }});
for (let n = walker.nextNode(); n; n = walker.nextNode()) {
  if (!n.parentElement.getClientRects().length) continue;   // not shown (a folded cell's content is checked when it is)
  texts.push(n.textContent);
}
return {column: Math.round(right - left), viewport: window.innerWidth, figures: figures, wide: wide, texts: texts};
"""

WAIT_MATH = r"""
const done = arguments[arguments.length - 1];
const frames = () => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(r, 50))));
const ready = () => (window.MathJax && MathJax.startup && MathJax.startup.promise) ? MathJax.startup.promise : Promise.resolve();
// open every folded cell and dropdown, so that what it hides is checked too (FOLD closes them again afterwards)
window.lmcOpened = [];
for (const d of document.querySelectorAll('details')) if (!d.open) { d.open = true; window.lmcOpened.push(d); }
ready().then(frames).then(() => done(true), () => done(false));  // and the layout settled at this width
"""

SETTLE = r"""
const done = arguments[arguments.length - 1];
for (const d of window.lmcOpened || []) d.open = false;   // folded again: the page as a reader first sees it
window.lmcOpened = [];
requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(() => done(true), 50)));
"""

# Runs in the page as a reader first sees it (every fold closed): its height, and where the first screen ends.
FOLDED = r"""
const first = document.querySelector('.lmc-first');
const badge = first ? first.querySelector('.lmc-badge') : null;
const top = el => el ? el.getBoundingClientRect().top + window.scrollY : null;
return {height: document.documentElement.scrollHeight, screen: window.innerHeight,
        first: top(first), badge: top(badge), badges: document.querySelectorAll('.lmc-badge').length};
"""

# Runs in the page with every fold open: text broken inside a word, text whose contrast is too low, boxes that
# scroll apart from the page, images whose alt text is their file.
READ = r"""
const col = document.querySelector('article.bd-article') || document.querySelector('main') || document.body;
const SKIP = /^(SCRIPT|STYLE|CODE|PRE|KBD|SAMP|TEXTAREA|MJX-CONTAINER|MJX-ASSISTIVE-MML|BUTTON|svg)$/;
const shown = n => { for (let e = n.parentElement; e && e !== col; e = e.parentElement) {
  if (SKIP.test(e.tagName) || e.classList.contains('highlight') || e.classList.contains('MathJax')) return false; }
  return n.parentElement.getClientRects().length > 0; };
const walker = document.createTreeWalker(col, NodeFilter.SHOW_TEXT,
  {acceptNode: n => /\S/.test(n.textContent) && shown(n) ? NodeFilter.FILTER_ACCEPT : NodeFilter.FILTER_REJECT});
const WORD = /[A-Za-z0-9\u00C0-\u024F\u0370-\u03FF]/;
const breaks = [], range = document.createRange();
let nodes = 0;
for (let n = walker.nextNode(); n; n = walker.nextNode()) {
  const text = n.textContent;
  range.selectNodeContents(n);
  const lines = range.getClientRects();
  if (lines.length < 2) continue;      // on one line: nothing broken
  nodes++;
  let lastTop = null;
  for (let i = 0; i < text.length; i++) {
    if (/\s/.test(text[i])) { lastTop = null; continue; }
    range.setStart(n, i); range.setEnd(n, i + 1);
    const r = range.getClientRects()[0];
    if (!r) continue;
    // a new line begins between two letters or digits of one word: a break inside the word
    if (lastTop !== null && r.top > lastTop + 2 && WORD.test(text[i]) && WORD.test(text[i - 1])) {
      const a = text.lastIndexOf(' ', i - 1) + 1, b = text.indexOf(' ', i);
      breaks.push(text.slice(a, i) + '|' + text.slice(i, b < 0 ? text.length : b));
    }
    lastTop = r.top;
  }
}
// contrast of each piece of text against the background it is drawn on (the first opaque one above it)
const rgba = c => { const m = c.match(/[\d.]+/g).map(Number); return m.length === 3 ? [...m, 1] : m; };
const lum = ([r, g, b]) => { const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
  return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
const over = (top, bottom) => { const a = top[3]; return [0, 1, 2].map(i => top[i] * a + bottom[i] * (1 - a)).concat(1); };
const background = el => { const layers = [];
  for (let e = el; e; e = e.parentElement) { const c = rgba(getComputedStyle(e).backgroundColor);
    if (c[3] > 0) { layers.push(c); if (c[3] >= 1) break; } }
  let bg = [255, 255, 255, 1];
  for (const c of layers.reverse()) bg = over(c, bg);
  return bg; };
const pairs = {};
const targets = new Set();
for (const el of col.querySelectorAll('*')) {
  if (SKIP.test(el.tagName) || el.closest('pre, .highlight, mjx-container, svg') || !el.getClientRects().length) continue;
  if ([...el.childNodes].some(c => c.nodeType === 3 && /\S/.test(c.textContent))) targets.add(el);
}
const faded = el => { for (let e = el; e; e = e.parentElement) { const s = getComputedStyle(e);
  if (parseFloat(s.opacity) === 0 || s.visibility === 'hidden') return true; } return false; };  // shown on hover only
for (const el of [...targets, ...document.querySelectorAll('.lmc-badge, .lmc-filter button')]) {
  if (!el.getClientRects().length || faded(el)) continue;
  const s = getComputedStyle(el);
  const bg = background(el), fg = over(rgba(s.color), bg);
  const [hi, lo] = [lum(fg), lum(bg)].sort((a, b) => b - a);
  const ratio = (hi + 0.05) / (lo + 0.05);
  const size = parseFloat(s.fontSize), bold = parseInt(s.fontWeight) >= 700;
  const need = size >= 24 || (bold && size >= 18.66) ? 3 : 4.5;
  const key = s.color + ' on ' + `rgb(${bg.slice(0, 3).map(Math.round).join(', ')})`;
  if (!pairs[key]) pairs[key] = {ratio: Math.round(ratio * 100) / 100, need: need, text: el.textContent.trim().slice(0, 40),
                                 cls: el.tagName.toLowerCase() + (el.classList.length ? '.' + [...el.classList].join('.') : ''),
                                 badge: el.classList.contains('lmc-badge')};
}
// boxes that scroll apart from the page (up and down) inside the text column
const boxes = [];
for (const el of col.querySelectorAll('*')) {
  const s = getComputedStyle(el);
  if ((s.overflowY === 'auto' || s.overflowY === 'scroll') && el.scrollHeight > el.clientHeight + 1 && el.clientHeight > 0)
    boxes.push({what: el.tagName.toLowerCase() + (el.className ? '.' + String(el.className).split(' ').slice(0, 2).join('.') : ''),
                shown: el.clientHeight, holds: el.scrollHeight});
}
const alts = [];
for (const img of col.querySelectorAll('img')) {
  const alt = (img.getAttribute('alt') || '').trim();
  if (!alt || alt === img.getAttribute('src') || /\.(png|jpe?g|svg|gif)$/i.test(alt)) alts.push(img.getAttribute('src'));
}
return {breaks: breaks, nodes: nodes, contrast: Object.entries(pairs).map(([k, v]) => ({pair: k, ...v})), boxes: boxes,
        alts: alts};
"""


@dataclass
class Problem:
    page: str
    width: str
    kind: str
    what: str

    def __str__(self) -> str:
        return f"{self.page} [{self.width}] {self.kind}: {self.what}"


@dataclass
class Report:
    problems: list[Problem] = field(default_factory=list)
    figures: dict = field(default_factory=dict)  # width -> [checked, off]
    scrolled: dict = field(default_factory=dict)  # width -> tables/code in a visible scroll container
    breaks: dict = field(default_factory=dict)  # width -> breaks inside a word or number
    heights: dict = field(default_factory=dict)  # width -> page -> px with every fold closed
    contrast: dict = field(default_factory=dict)  # "colour on background" -> its lowest ratio seen
    pages: int = 0


class _Anchors(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("id", "name") if tag == "a" else ("id",):
            if a.get(key):
                self.ids.add(a[key])
        if tag == "a" and a.get("href") is not None:
            self.links.append(a["href"])


def _parse(path: Path, cache: dict) -> _Anchors:
    if path not in cache:
        parser = _Anchors()
        parser.feed(path.read_text(errors="replace"))
        cache[path] = parser
    return cache[path]


def check_links(root: Path, page: Path, cache: dict) -> list[str]:
    """Internal links of ``page`` that do not resolve (a missing file, or an anchor its page lacks)."""
    bad = []
    page = page.resolve()
    for href in dict.fromkeys(_parse(page, cache).links):
        parts = urlsplit(href)
        if parts.scheme or parts.netloc or href.startswith(("mailto:", "javascript:")):
            continue
        target_url, anchor = urldefrag(href)
        target = page if not target_url else (page.parent / unquote(urlsplit(target_url).path)).resolve()
        if target.is_dir():
            target = target / "index.html"
        if not target.is_file() or root.resolve() not in target.parents:
            bad.append(f"{href} (no such file)")
            continue
        if anchor and target.suffix == ".html" and unquote(anchor) not in _parse(target, cache).ids:
            bad.append(f"{href} (no element #{anchor} on {target.relative_to(root.resolve())})")
    return bad


def raw_math(texts) -> list[str]:
    found = []
    for text in texts:
        for name, pattern in RAW_MATH:
            m = pattern.search(text)
            if m:
                a, b = max(0, m.start() - 30), min(len(text), m.end() + 30)
                found.append(f"{name} in ...{' '.join(text[a:b].split())}...")
                break
    return found


def browser(chromium: str, chromedriver: str, profile_dir: str):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in FLAGS + [f"--user-data-dir={profile_dir}", f"--window-size={max(WIDTHS.values())},{HEIGHT}"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "SEVERE"})  # the console's errors (console_errors)
    return webdriver.Chrome(options=options, service=Service(executable_path=chromedriver))


def set_width(driver, width: int) -> None:
    """The viewport at ``width`` CSS pixels (a phone's narrow widths as a phone: its viewport meta tag honoured)."""
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": width < 600},
    )


def console_errors(driver) -> list[str]:
    """The errors the page logged in the browser's console since the last call (a script that failed, a theme
    error), each as its message."""
    try:
        entries = driver.get_log("browser")
    except Exception:  # a driver without logs: nothing to read
        return []
    return [" ".join(e["message"].split())[:200] for e in entries if e.get("level") == "SEVERE"]


def read_folded(
    report: Report,
    name: str,
    label: str,
    width: int,
    folded: dict,
    *,
    strict_from: int,
    max_height: int,
    first_screen: bool,
) -> None:
    """The page as a reader first sees it: its length (at the laptop and wide widths), and, on a page whose first
    screen must show its verdicts, where they begin."""
    report.heights.setdefault(label, {})[name] = folded["height"]
    if width >= strict_from and folded["height"] > max_height:
        report.problems.append(
            Problem(
                name, label, "long", f"{folded['height']:,} px tall with every fold closed (at most {max_height:,})"
            )
        )
    if not first_screen:
        return
    if folded["first"] is None:
        report.problems.append(
            Problem(name, label, "first screen", "no .lmc-first block (the page's conclusion and headline verdicts)")
        )
    elif folded["badge"] is None or folded["badge"] >= folded["screen"]:
        where = "none" if folded["badge"] is None else f"at {folded['badge']:.0f} px"
        report.problems.append(
            Problem(
                name,
                label,
                "first screen",
                f"its first headline verdict is {where}, below the first screen ({folded['screen']} px)",
            )
        )


def read_open(report: Report, name: str, label: str, r: dict, first_width: bool) -> None:
    """The page with every fold open: breaks inside words, scrolling boxes, and (once per page) contrast and alt
    text."""
    if r["breaks"]:
        report.breaks[label] = report.breaks.get(label, 0) + len(r["breaks"])
        report.problems.append(
            Problem(
                name,
                label,
                "mid-word",
                f"{len(r['breaks'])} breaks inside a word or number: " + ", ".join(dict.fromkeys(r["breaks"][:6])),
            )
        )
    for b in r["boxes"]:
        report.problems.append(
            Problem(
                name,
                label,
                "box scrolls",
                f"{b['what']} shows {b['shown']} of its {b['holds']} px in a box that scrolls apart",
            )
        )
    if not first_width:
        return
    for c in r["contrast"]:
        report.contrast[c["pair"]] = min(c["ratio"], report.contrast.get(c["pair"], c["ratio"]))
        if c["ratio"] < c["need"]:
            report.problems.append(
                Problem(
                    name,
                    "all",
                    "contrast",
                    f"{c['ratio']}:1 (needs {c['need']}:1): {c['pair']}, {c['cls']} '{c['text']}'",
                )
            )
    for src in r["alts"]:
        report.problems.append(Problem(name, "all", "alt text", f"{src}: its alt text is missing or its file name"))


def check(
    root: Path,
    widths: dict[str, int],
    *,
    chromium: str,
    chromedriver: str,
    pages: list[str] | None = None,
    strict_from: int = 1000,
    screenshots: Path | None = None,
    log=print,
    max_height: int = MAX_HEIGHT,
    first_screen: str = FIRST_SCREEN,
) -> Report:
    root = Path(root)
    files = sorted(
        p
        for p in root.rglob("*.html")
        if not str(p.relative_to(root)).startswith(SKIP) and str(p.relative_to(root)) not in SKIP
    )
    if pages:
        files = [p for p in files if any(re.search(pat, str(p.relative_to(root))) for pat in pages)]
    report = Report(pages=len(files))
    cache: dict = {}
    profile_dir = tempfile.mkdtemp(prefix="page-check-")
    driver = browser(chromium, chromedriver, profile_dir)
    try:
        driver.set_script_timeout(60)
        for path in files:
            name = str(path.relative_to(root))
            for bad in check_links(root, path, cache):
                report.problems.append(Problem(name, "all", "link", bad))
            loaded = False
            for label, width in widths.items():
                set_width(driver, width)
                if not loaded:
                    driver.get(path.resolve().as_uri())
                    loaded = True
                driver.execute_async_script(SETTLE)
                try:
                    folded = driver.execute_script(FOLDED)
                    driver.execute_async_script(WAIT_MATH)
                    m = driver.execute_script(MEASURE)
                    opened = driver.execute_script(READ)
                except Exception as e:  # a page the measurement cannot read is a problem, not the end of the check
                    report.problems.append(Problem(name, label, "error", str(e).splitlines()[0]))
                    continue
                read_folded(
                    report,
                    name,
                    label,
                    width,
                    folded,
                    strict_from=strict_from,
                    max_height=max_height,
                    first_screen=bool(re.search(first_screen, name)),
                )
                read_open(report, name, label, opened, label == next(iter(widths)))
                if screenshots is not None:
                    shot = screenshots / label / (name.replace("/", "__")[:-5] + ".png")
                    shot.parent.mkdir(parents=True, exist_ok=True)
                    height = driver.execute_script("return document.documentElement.scrollHeight")
                    driver.execute_cdp_cmd(
                        "Emulation.setDeviceMetricsOverride",
                        {"width": width, "height": min(height, 16000), "deviceScaleFactor": 1, "mobile": width < 600},
                    )
                    driver.save_screenshot(str(shot))
                    set_width(driver, width)
                counts = report.figures.setdefault(label, [0, 0])
                for f in m["figures"]:
                    counts[0] += 1
                    if not f["complete"] or not f["nw"]:
                        report.problems.append(Problem(name, label, "figure", f"{f['src']} did not load"))
                        counts[1] += 1
                        continue
                    shown, stored = f["w"] / f["h"], f["nw"] / f["nh"]
                    if abs(shown / stored - 1) > ASPECT_TOLERANCE:
                        counts[1] += 1
                        report.problems.append(
                            Problem(
                                name,
                                label,
                                "figure",
                                f"aspect {shown:.3f} shown, {stored:.3f} in its file "
                                f"({f['w']:.0f}x{f['h']:.0f} px; near '{f['near']}')",
                            )
                        )
                for w in m["wide"]:
                    where = f"{w['kind']} {w['width']} px wide in a {w['column']} px column (near '{w['near']}'; {w['what']})"
                    if w["in_visible_scroller"] and (width < strict_from or w["kind"] == "mjx-container"):
                        report.scrolled[label] = report.scrolled.get(label, 0) + 1
                    elif w["in_visible_scroller"]:
                        report.problems.append(Problem(name, label, "scrolls", where))
                    else:
                        report.problems.append(
                            Problem(name, label, "overflow" if not w["clipped"] else "cut off", where)
                        )
                if label == next(iter(widths)):  # the same text at every width: once
                    for found in raw_math(m["texts"]):
                        report.problems.append(Problem(name, "all", "raw math", found))
            for message in console_errors(driver):
                report.problems.append(Problem(name, "all", "console", message))
            log(f"checked {name}")
    finally:
        driver.quit()
        shutil.rmtree(profile_dir, ignore_errors=True)
    return report


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "html", nargs="?", default="_build/html", help="a built book's HTML folder (default %(default)s)"
    )
    parser.add_argument(
        "--widths",
        default=",".join(f"{k}={v}" for k, v in WIDTHS.items()),
        help="NAME=PIXELS,... (default %(default)s)",
    )
    parser.add_argument(
        "--strict-from",
        type=int,
        default=1000,
        help="from this width on, a table may not need a scroll container (default %(default)s)",
    )
    parser.add_argument("--pages", nargs="*", help="only pages whose path matches one of these regular expressions")
    parser.add_argument("--screenshots", type=Path, help="also save a full-page screenshot of each page and width here")
    parser.add_argument("--chromium", default=os.environ.get("CHROMIUM", "/usr/bin/chromium"))
    parser.add_argument("--chromedriver", default=os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver"))
    parser.add_argument(
        "--max-height",
        type=int,
        default=MAX_HEIGHT,
        help="the longest a page may be, every fold closed, from --strict-from on (default %(default)s)",
    )
    parser.add_argument(
        "--first-screen",
        default=FIRST_SCREEN,
        help="pages whose first screen must show their headline verdicts (default %(default)s)",
    )
    parser.add_argument("--json", type=Path, help="write the problems and counts here as JSON")
    parser.add_argument("-q", "--quiet", action="store_true", help="no line per page checked")
    args = parser.parse_args(argv)
    root = Path(args.html)
    if not (root / "index.html").is_file():
        parser.error(
            f"{root} holds no built book (no index.html): build one first (make book, or make smoke-book "
            "and pass _build/smoke/_build/html)"
        )
    for tool in (args.chromium, args.chromedriver):
        if not (Path(tool).is_file() and os.access(tool, os.X_OK)):
            parser.error(
                f"{tool} not found: install Debian's chromium and chromium-driver "
                "(apt-get install -y chromium chromium-driver), or name them with --chromium/--chromedriver"
            )
    try:
        widths = {k: int(v) for k, v in (item.split("=") for item in args.widths.split(","))}
    except ValueError:
        parser.error(f"--widths takes NAME=PIXELS,..., got {args.widths!r}")
    os.environ.setdefault("SE_AVOID_STATS", "true")  # selenium sends no usage statistics
    started = time.monotonic()
    report = check(
        root,
        widths,
        chromium=args.chromium,
        chromedriver=args.chromedriver,
        pages=args.pages,
        strict_from=args.strict_from,
        screenshots=args.screenshots,
        max_height=args.max_height,
        first_screen=args.first_screen,
        log=(lambda *_: None) if args.quiet else print,
    )
    for p in report.problems:
        print(p)
    print(
        f"\n{report.pages} pages at {', '.join(f'{k} {v} px' for k, v in widths.items())} in "
        f"{time.monotonic() - started:.0f} s"
    )
    for label in widths:
        checked, off = report.figures.get(label, [0, 0])
        by_kind = {}
        for p in report.problems:
            if p.width == label:
                by_kind[p.kind] = by_kind.get(p.kind, 0) + 1
        print(
            f"  {label}: {checked} figures, {off} with a wrong aspect ratio; "
            f"{by_kind.get('overflow', 0)} overflowing, {by_kind.get('cut off', 0)} cut off, "
            f"{by_kind.get('scrolls', 0)} scrolling where they should fit; "
            f"{report.scrolled.get(label, 0)} in a visible scroll container"
        )
    rest = {}
    for p in report.problems:
        if p.width == "all":
            rest[p.kind] = rest.get(p.kind, 0) + 1
    print(
        f"  every width: {rest.get('raw math', 0)} raw math, {rest.get('link', 0)} broken internal links, "
        f"{rest.get('console', 0)} console errors, {rest.get('contrast', 0)} texts under their contrast, "
        f"{rest.get('alt text', 0)} images whose alt text is missing or their file"
    )
    for label in widths:
        kinds = {}
        for p in report.problems:
            if p.width == label:
                kinds[p.kind] = kinds.get(p.kind, 0) + 1
        heights = report.heights.get(label, {})
        tallest = sorted(heights.items(), key=lambda kv: -kv[1])[:3]
        print(
            f"  {label}: {report.breaks.get(label, 0)} breaks inside a word; {kinds.get('box scrolls', 0)} boxes "
            f"scrolling apart; {kinds.get('first screen', 0)} first screens without their verdicts; "
            f"{kinds.get('long', 0)} pages too long; tallest: " + ", ".join(f"{k} {v:,} px" for k, v in tallest)
        )
    for page in ("book/generated/scorecard.html", "book/generated/claims.html"):
        print(
            f"  {page}: " + ", ".join(f"{label} {report.heights.get(label, {}).get(page, 0):,} px" for label in widths)
        )
    if report.contrast:
        low = sorted(report.contrast.items(), key=lambda kv: kv[1])[:3]
        print("  lowest contrast: " + "; ".join(f"{v}:1 {k}" for k, v in low))
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "problems": [p.__dict__ for p in report.problems],
                    "figures": report.figures,
                    "scrolled": report.scrolled,
                    "breaks": report.breaks,
                    "heights": report.heights,
                    "contrast": report.contrast,
                },
                indent=1,
            )
        )
    print("page check: " + ("passed" if not report.problems else f"{len(report.problems)} problems"))
    return 1 if report.problems else 0


if __name__ == "__main__":
    sys.exit(main())
