"""The page's ES modules as the service serves them: exactly the files index.html's module scripts import,
one after another, each as JavaScript; nothing else of static/ served as a script."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

from memmy_kb_client.desktop import page

STATIC = Path(page.__file__).resolve().parent / "static"
# A static import or re-export, `import ... from "./x.js"` / `import "./x.js"` / `export ... from "./x.js"`;
# import() of a type in a JSDoc comment is no request.
_IMPORT = re.compile(r'^\s*(?:import|export)\b[^"\';]*?(?:\bfrom\s*)?["\'](\./[^"\']+)["\']', re.MULTILINE)


class _Scripts(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.sources: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "script":
            self.sources.append(dict(attrs).get("src") or "")


def imports_of(source: str) -> list[str]:
    """The files a module imports, by their names beside it."""
    return [target.removeprefix("./") for target in _IMPORT.findall(source)]


def loaded_by_the_page(read=lambda name: (STATIC / name).read_text(encoding="utf-8")) -> set[str]:
    scripts = _Scripts()
    scripts.feed(read("index.html"))
    waiting = [src.removeprefix("/") for src in scripts.sources]
    seen: set[str] = set()
    while waiting:
        name = waiting.pop()
        if name not in seen:
            seen.add(name)
            waiting.extend(imports_of(read(name)))
    return seen


def test_imports_are_found_in_each_form_and_not_in_comments():
    source = (
        'import { a } from "./a.js";\n'
        "import {\n  b,\n  c,\n} from './b.js';\n"
        'import "./c.js";\n'
        'export { d } from "./d.js";\n'
        '/** @typedef {import("./e.js").E} E */\n'
        '// import { f } from "./f.js";\n'
    )
    assert imports_of(source) == ["a.js", "b.js", "c.js", "d.js"]


def test_the_walk_follows_imports_from_the_html():
    files = {
        "index.html": '<script type="module" src="/main.js"></script>',
        "main.js": 'import "./x.js";',
        "x.js": 'import "./main.js";\nimport "./y.js";',
        "y.js": "",
    }
    assert loaded_by_the_page(files.__getitem__) == {"main.js", "x.js", "y.js"}


def test_the_service_serves_exactly_the_modules_the_page_loads():
    assert loaded_by_the_page() == set(page.PAGE_MODULES)
    assert {path.name for path in STATIC.glob("*.js")} == set(page.PAGE_MODULES)


def test_each_module_is_served_as_javascript_at_its_name():
    for name in page.PAGE_MODULES:
        assert page.ASSETS[f"/{name}"] == (name, "text/javascript; charset=utf-8")
    scripts = {path for path, (_, kind) in page.ASSETS.items() if kind.startswith("text/javascript")}
    assert scripts == {f"/{name}" for name in page.PAGE_MODULES}


def loops(imports: dict[str, list[str]]) -> list[list[str]]:
    """Each import loop among the modules, as the path that closes it."""
    found: list[list[str]] = []

    def walk(name: str, path: list[str]) -> None:
        for target in imports.get(name, []):
            if target in path:
                found.append([*path[path.index(target) :], target])
            elif target not in done:
                walk(target, [*path, target])
        done.add(name)

    done: set[str] = set()
    for name in sorted(imports):
        if name not in done:
            walk(name, [name])
    return found


def test_the_modules_import_one_another_without_a_loop():
    # A panel that must tell one it is imported by announces it (events.js) instead of importing it back.
    imports = {name: imports_of((STATIC / name).read_text(encoding="utf-8")) for name in page.PAGE_MODULES}
    assert loops(imports) == []
    assert loops({"a.js": ["b.js"], "b.js": ["c.js"], "c.js": ["a.js"]}) == [["a.js", "b.js", "c.js", "a.js"]]
