"""A sanitizer check for view HTML: nothing that runs, nothing that loads from elsewhere, no control characters.

`problems(bundle)` lists every violation in a display bundle's text/html and text/plain; a safe
view has none. Parsing is the standard library's HTMLParser, as lenient as a browser about bad markup.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

# elements that run code, load a resource by themselves or restyle the page
FORBIDDEN_TAGS = {"script", "iframe", "frame", "object", "embed", "link", "style", "base", "meta", "applet", "svg"}
# attributes whose URL the browser fetches when the element is shown (href only on elements that fetch)
LOADING_ATTRS = {"src", "srcset", "poster", "background", "data", "lowsrc", "dynsrc", "xlink:href", "formaction"}
LOADING_HREF_TAGS = {"link", "image", "use", "feimage"}
_INERT_SRC = re.compile(r"^data:(image|audio|video)/[a-z0-9.+-]+(;base64)?,", re.IGNORECASE)
_SCRIPT_URL = re.compile(r"^\s*(javascript|vbscript|data:text/html)", re.IGNORECASE)
_CSS_LOAD = re.compile(r"url\s*\(|@import|expression\s*\(", re.IGNORECASE)
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]|\r(?!\n)")


class _Check(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in FORBIDDEN_TAGS:
            self.problems.append(f"<{tag}> element")
        for name, value in attrs:
            value = value or ""
            if name.startswith("on"):
                self.problems.append(f"<{tag} {name}=…> event handler")
            if name in LOADING_ATTRS and value and not _INERT_SRC.match(value):
                self.problems.append(f"<{tag} {name}={value[:60]!r}> loads a resource")
            if name == "href" and tag in LOADING_HREF_TAGS:
                self.problems.append(f"<{tag} href=…> loads a resource")
            if _SCRIPT_URL.match(value) and name in ("href", "src", "action", "formaction", "xlink:href"):
                self.problems.append(f"<{tag} {name}={value[:60]!r}> script URL")
            if name == "style" and _CSS_LOAD.search(value):
                self.problems.append(f"<{tag} style={value[:60]!r}> loads from CSS")

    handle_startendtag = handle_starttag


def html_problems(html: str) -> list[str]:
    check = _Check()
    check.feed(html)
    check.close()
    problems = check.problems
    if _CONTROL.search(html):
        problems.append(f"control character in HTML: {_CONTROL.search(html).group()!r}")
    return problems


def problems(bundle: dict) -> list[str]:
    found = html_problems(bundle.get("text/html", ""))
    plain = bundle.get("text/plain", "")
    if _CONTROL.search(plain):
        found.append(f"control character in text/plain: {_CONTROL.search(plain).group()!r}")
    return found
