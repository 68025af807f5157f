"""The runbook site, built with `mkdocs build --strict` and opened in a real browser (headless Chromium).

What the on-call engineer relies on, checked end to end: the home page renders, a generated cluster diagram
became an SVG (Mermaid ran), searching a pool's name finds its cluster page, no internal link is broken (every
built page is crawled in Python; a sample is also followed in the browser), and the pages read at 3 a.m. fit a
1280-pixel window: no horizontal scrolling, no table cut off. Screenshots of those pages go to
artifacts/screenshots/.

The site works with no network at all: every asset, Mermaid included, comes from the build (decision 0039).
The browser may reach only the local server; a test fails on any request that leaves it. Without mkdocs,
Playwright, Chromium or the Mermaid library the test skips on a developer machine and fails in CI.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from html.parser import HTMLParser
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pytest
from support import REPO, require_tool

from gpupolicy.docsgen.site_hooks import mermaid_js
from gpupolicy.infra import sitetrust

SCREENSHOTS = REPO / "artifacts" / "screenshots"
VIEWPORT = {"width": 1280, "height": 900}
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def _require(condition: bool, reason: str) -> None:
    """Skip on a developer machine, fail in CI: CI must not go green by skipping."""
    if condition:
        return
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (required in CI)")
    pytest.skip(reason)


# --- building and serving
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _require(
        importlib.util.find_spec("mkdocs") is not None and importlib.util.find_spec("material") is not None,
        "mkdocs-material is not installed in this environment",
    )
    _require(
        mermaid_js() is not None,
        "mermaid.min.js (npm package `mermaid`) is not on this machine; "
        "`make system-tools` puts it in ~/.cache/gpupolicy/mermaid",
    )
    # mkdocs executes the hooks and imports the plugins its config names: never build one that names code
    # other than the toolkit's (decision 0061, SEC011); PYTHONSAFEPATH keeps the checkout's folders off
    # sys.path.
    refused = sitetrust.repository_problems(REPO)
    assert not refused, (
        f"mkdocs.yml would run code that is not the toolkit's, the site is not built: {refused}"
    )
    out = tmp_path_factory.mktemp("site")
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONSAFEPATH": "1"},
    )
    assert build.returncode == 0, f"mkdocs build --strict failed:\n{build.stdout}\n{build.stderr}"
    return out


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class names it so
        pass


@pytest.fixture(scope="module")
def base_url(site: Path) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


# --- links, crawled in Python
# ----------------------------------------------------------------------------------


class _PageLinks(HTMLParser):
    """Every href/src of a page and every id it defines."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if values.get("id"):
            self.ids.add(values["id"] or "")
        if values.get("name") and tag == "a":
            self.ids.add(values["name"] or "")
        for attribute in ("href", "src"):
            if values.get(attribute) and tag in ("a", "link", "script", "img"):
                self.links.append(values[attribute] or "")


def _parse(page: Path) -> _PageLinks:
    parser = _PageLinks()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


def _target_file(site: Path, page: Path, link: str) -> tuple[Path | None, str]:
    """The built file an internal link points at (None: external), and its fragment."""
    parts = urlsplit(link)
    if parts.scheme or parts.netloc or link.startswith(("mailto:", "javascript:")):
        return None, ""
    page_url = "/" + page.relative_to(site).as_posix()
    resolved = urlsplit(urljoin(page_url, link))
    target = site / unquote(resolved.path).lstrip("/")
    if resolved.path.endswith("/") or target.is_dir():
        target = target / "index.html"
    return target, resolved.fragment


def _broken_links(site: Path) -> list[str]:
    pages = sorted(site.rglob("*.html"))
    parsed = {page: _parse(page) for page in pages}
    broken = []
    for page, links in parsed.items():
        for link in links.links:
            target, fragment = _target_file(site, page, link)
            if target is None:
                continue
            where = f"{page.relative_to(site)} -> {link}"
            if not target.is_file():
                broken.append(f"{where}: no such file {target.relative_to(site)}")
            elif fragment and target in parsed and fragment not in parsed[target].ids:
                broken.append(f"{where}: no element with id {fragment!r}")
    return broken


def test_every_internal_link_resolves(site: Path) -> None:
    pages = list(site.rglob("*.html"))
    assert len(pages) > 10, f"the site has only {len(pages)} pages"
    broken = _broken_links(site)
    assert not broken, f"{len(broken)} broken internal link(s):\n" + "\n".join(broken[:40])


def test_link_checker_catches_a_broken_link(site: Path, tmp_path: Path) -> None:
    """The crawler itself is trusted only if it reports a link that leads nowhere."""
    page = tmp_path / "index.html"
    page.write_text(
        '<a href="missing/">x</a><a href="index.html#nowhere">y</a><a id="here" href="#here">z</a>'
    )
    assert sorted(_broken_links(tmp_path)) == [
        "index.html -> index.html#nowhere: no element with id 'nowhere'",
        "index.html -> missing/: no such file missing/index.html",
    ]


# --- the browser
# -----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser():
    _require(importlib.util.find_spec("playwright") is not None, "playwright (Python) is not installed")
    chromium = require_tool("chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, base_url: str):
    """A page that can reach only the local server: any other request is aborted, and fails the test."""
    context = browser.new_context(viewport=VIEWPORT)
    context.add_init_script(_OPEN_SHADOW_ROOTS)
    outside: list[str] = []

    def route(request_route, request) -> None:
        if request.url.startswith(base_url):
            request_route.continue_()
        else:
            outside.append(request.url)
            request_route.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.outside_requests = outside
    yield page
    context.close()
    assert not outside, f"the site asked the network for {sorted(set(outside))}"


# Material renders each diagram into a *closed* shadow root, which no selector can see into; in the test only,
# shadow roots are opened so the SVG can be found.
_OPEN_SHADOW_ROOTS = """
const attach = Element.prototype.attachShadow;
Element.prototype.attachShadow = function (init) { return attach.call(this, {...init, mode: "open"}); };
"""


def _heading(page) -> str:
    """The page's title heading, without the permalink sign the toc extension appends."""
    return page.locator("article h1").first.inner_text().replace("\u00b6", "").strip()


def _screenshot(target, name: str) -> Path:
    """A PNG of a page (whole length, from the top) or of one element; animations finished first."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    if hasattr(target, "goto"):
        target.evaluate("window.scrollTo(0, 0)")
        target.screenshot(path=str(path), full_page=True, animations="disabled")
    else:
        target.screenshot(path=str(path), animations="disabled")
    return path


def _cluster_with_pool() -> tuple[str, str]:
    """A generated cluster page and a pool it lists, from the repository's own files."""
    pools = sorted(p.parent.name for p in (REPO / "pools").glob("*/pool.yaml"))
    for cluster_page in sorted((REPO / "docs" / "generated" / "clusters").glob("*.md")):
        text = cluster_page.read_text(encoding="utf-8")
        for pool in pools:
            if f"| [{pool}](../pools/{pool}.md) |" in text:
                return cluster_page.stem, pool
    pytest.fail("no generated cluster page lists a pool: run `gpupolicy docs`")
    raise AssertionError  # unreachable


def test_home_page_renders(page, base_url: str) -> None:
    response = page.goto(base_url)
    assert response is not None and response.ok
    assert page.title().startswith("GPU platform runbooks")
    assert _heading(page) == "GPU platform runbooks"
    assert page.locator("nav.md-tabs").is_visible(), "navigation tabs are missing"
    _screenshot(page, "home")


def test_cluster_diagram_becomes_svg_from_the_build(page, base_url: str, site: Path) -> None:
    assert (site / "assets" / "javascripts" / "mermaid.min.js").is_file(), "Mermaid is not in the build"
    cluster, pool = _cluster_with_pool()
    response = page.goto(f"{base_url}generated/clusters/{cluster}/")
    assert response is not None and response.ok
    svg = page.locator("div.mermaid svg").first
    svg.wait_for(state="visible", timeout=30_000)
    assert pool in svg.text_content(), f"the diagram of {cluster} does not draw pool {pool}"
    _screenshot(page, f"cluster-{cluster}")
    _screenshot(page.locator("div.mermaid").first, f"cluster-{cluster}-diagram")


def test_a_request_leaving_localhost_is_caught(page, base_url: str) -> None:
    """The guard itself: a page that asks another host is recorded (and would fail its test)."""
    page.goto(base_url)
    page.set_content('<img src="https://cdn.invalid/x.png">')
    page.wait_for_load_state("load")
    assert page.outside_requests == ["https://cdn.invalid/x.png"]
    page.outside_requests.clear()  # caught as intended: this test passes


def test_mig_layouts_page(page, base_url: str) -> None:
    response = page.goto(f"{base_url}generated/mig-layouts/")
    assert response is not None and response.ok
    assert "MIG" in _heading(page)
    _screenshot(page, "mig-layouts")


def test_search_finds_a_pool_on_its_cluster_page(page, base_url: str) -> None:
    cluster, pool = _cluster_with_pool()
    page.goto(base_url)
    search = page.locator("input.md-search__input")  # in the header at desktop width
    search.click()
    # Typed key by key: Material reads the query on keyup (and when its search worker is ready), not on the
    # `input` event that fill() sends, so a filled-in query could go unseen when the worker was already ready.
    search.press_sequentially(pool)
    results = page.locator(".md-search-result__item a.md-search-result__link")
    results.first.wait_for(state="attached", timeout=30_000)
    expected = f"generated/clusters/{cluster}/"
    # The first results may answer a prefix of the query (the worker answers each keyup as it comes, and on a
    # busy machine it falls behind the typing), so read the list again until the full query's results are in.
    hrefs: list[str] = []
    for _ in range(30):
        hrefs = _all_result_links(page, results)
        if any(expected in href for href in hrefs):
            break
        page.wait_for_timeout(1000)
    assert any(expected in href for href in hrefs), (
        f"searching {pool!r} did not list {expected}: {hrefs[:10]}"
    )


def _all_result_links(page, results) -> list[str]:
    """Result links; Material renders results in batches as the list scrolls, so scroll until it stops
    growing.
    A batch may take a while on a busy machine: the list counts as complete when 3 s pass without growth.
    The worker may also replace the whole list while it is read (the answer to a later keyup, often shorter):
    a scroll to an item that is gone is a list to read again, and the links are read in one snapshot."""
    from playwright.sync_api import Error as PlaywrightError  # TimeoutError and a detached element alike

    seen = -1
    for _ in range(100):  # bounded: a list that never settles fails the caller's assertion instead of hanging
        count = results.count()
        if count == seen or not count:
            break
        seen = count
        try:
            results.nth(seen - 1).scroll_into_view_if_needed(timeout=5_000)
        except PlaywrightError:
            seen = -1  # the list was replaced under us: read it again
            continue
        for _ in range(30):
            page.wait_for_timeout(100)
            if results.count() != seen:
                break
    return results.evaluate_all("links => links.map(link => link.getAttribute('href') || '')")


def test_sample_of_home_page_links_open_in_the_browser(page, base_url: str) -> None:
    page.goto(base_url)
    hrefs = page.locator("article a[href]").evaluate_all("links => links.map(a => a.href)")
    internal = sorted({re.sub(r"#.*$", "", href) for href in hrefs if href.startswith(base_url)})
    assert len(internal) >= 5, f"the home page links only {internal}"
    for url in internal[:12]:
        response = page.goto(url)
        assert response is not None and response.ok, f"{url}: HTTP {response.status if response else 'none'}"
        assert page.locator("article h1").count() >= 1, f"{url} has no heading"


# --- layout at 1280 pixels
# ------------------------------------------------------------------------------------

# What a reader would have to scroll sideways for: the page itself, or a table whose content is wider than the
# box Material gives it (a table scrolls inside itself; its right-hand columns are then cut off on screen).
_OVERFLOW = """() => {
  const problems = [];
  const doc = document.documentElement;
  if (doc.scrollWidth > doc.clientWidth + 1) problems.push(`the page is ${doc.scrollWidth}px wide`);
  document.querySelectorAll("article table").forEach((table, index) => {
    const heading = table.rows.length ? table.rows[0].innerText.replace(/\\s+/g, " ").slice(0, 60) : "";
    const box = table.closest(".md-typeset__scrollwrap") || table;  // Material scrolls a table in this box
    const article = table.closest("article").getBoundingClientRect();
    if (box.scrollWidth > box.clientWidth + 1 || table.getBoundingClientRect().right > article.right + 1)
      problems.push(`table ${index + 1} (${heading}) needs ${box.scrollWidth}px, shows ${box.clientWidth}px`);
  });
  return problems;
}"""


def _layout_pages() -> list[tuple[str, str]]:
    """(screenshot name, path) of the pages an on-call engineer opens first."""
    cluster, _ = _cluster_with_pool()
    runbook = sorted(p.stem for p in (REPO / "docs" / "runbooks").glob("*.md") if p.stem != "index")[0]
    return [
        ("home", ""),
        (f"cluster-{cluster}", f"generated/clusters/{cluster}/"),
        ("quotas", "generated/quotas/"),
        ("mig-layouts", "generated/mig-layouts/"),
        (f"runbook-{runbook}", f"runbooks/{runbook}/"),
        ("gpu-catalog", "generated/gpus/"),
    ]


@pytest.mark.parametrize("name, path", _layout_pages())
def test_page_fits_1280_pixels_with_no_table_cut_off(page, base_url: str, name: str, path: str) -> None:
    response = page.goto(f"{base_url}{path}")
    assert response is not None and response.ok, f"{path}: HTTP {response.status if response else 'none'}"
    if page.locator("div.mermaid").count():
        page.locator("div.mermaid svg").first.wait_for(state="visible", timeout=30_000)
    _screenshot(page, f"layout-{name}")
    problems = page.evaluate(_OVERFLOW)
    assert not problems, f"{path} at {VIEWPORT['width']}px: " + "; ".join(problems)


def test_the_layout_check_catches_a_clipped_table(page, base_url: str) -> None:
    page.goto(f"{base_url}generated/quotas/")
    page.evaluate("""() => { const cell = document.querySelector("article table td");
                             cell.textContent = "x".repeat(400); cell.style.whiteSpace = "nowrap"; }""")
    assert any("table 1" in problem for problem in page.evaluate(_OVERFLOW))


def test_rules_are_grouped_by_category_in_collapsed_sections(page, base_url: str) -> None:
    page.goto(f"{base_url}generated/quotas/")
    sidebar = page.locator("nav.md-nav--primary")
    rule_link = sidebar.locator('a[href$="rules/CAP001/"]')
    assert rule_link.count() == 1 and not rule_link.is_visible(), "the CAP rules are not collapsed"
    categories = sidebar.locator("label.md-nav__link").all_inner_texts()
    assert {"CAP", "MIG", "WL", "YAML"} <= {text.strip() for text in categories}
    sidebar.locator("label.md-nav__link", has_text="CAP").first.click()
    rule_link.wait_for(state="visible", timeout=5_000)
