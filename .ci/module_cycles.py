#!/usr/bin/env python3
"""Finds the files of one crate that import each other in a circle.

A circle between modules means neither can be read, tested or moved without the other; the fix
is to move what both use down into a module both import. For every crate under crates/, each
file is a module (`a/b.rs` and `a/b/mod.rs` are `a::b`; `lib.rs` and `main.rs` the root) and
each `crate::…` or `super::…` path in it an edge to the deepest module that path names; a name
the crate root re-exports (`pub use config::Limits;`) leads to the module it comes from. Edges
to the crate root or to a module's own ancestors are left out: a parent declares its children
and re-exports from them, so a child naming its parent is how Rust modules nest, not a circle.
(Method calls name no module, so a circle made only of them goes unseen.)

Prints each circle (a strongly connected set of two or more modules) and exits 1 if there is
one; `--list` prints them and exits 0 (for the before/after counts in a closing note).
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PATH = re.compile(r"\b(crate|super)((?:::[A-Za-z_][A-Za-z0-9_]*)+|::\{)")
USE = re.compile(r"\buse\s+((?:crate|super)::[^;]*);", re.S)
PUB_USE = re.compile(r"\bpub\s+use\s+([^;]*);", re.S)
COMMENT = re.compile(r"//[^\n]*")


def module_of(src: Path, file: Path) -> tuple:
    parts = list(file.relative_to(src).with_suffix("").parts)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return tuple(parts)


def expand(tree: str) -> list:
    """The paths a `use` tree names: `a::{b, c::{d as e}}` -> [a::b, a::c::d]."""
    tree = re.sub(r"\s+as\s+\w+", "", tree)
    tree = re.sub(r"\s+", "", tree)
    depth, start = 0, None
    for i, ch in enumerate(tree):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                prefix, inner = tree[:start], tree[start + 1:i]
                items, depth2, last = [], 0, 0
                for j, c in enumerate(inner):
                    depth2 += (c == "{") - (c == "}")
                    if c == "," and depth2 == 0:
                        items.append(inner[last:j])
                        last = j + 1
                items.append(inner[last:])
                return [p for item in items if item for p in expand(prefix + item)]
    return [tree]


def referenced(text: str) -> list:
    text = COMMENT.sub("", text)
    paths = [p for tree in USE.findall(text) for p in expand(tree)]
    body = USE.sub("", text)
    paths += [m.group(1) + m.group(2) for m in PATH.finditer(body) if m.group(2) != "::{"]
    return paths


def reexports(root_text: str, modules: set) -> dict:
    """What the crate root re-exports from its own modules: name -> the module it is from."""
    found = {}
    for tree in PUB_USE.findall(COMMENT.sub("", root_text)):
        for path in expand(tree):
            segments = [s for s in path.split("::") if s and s not in ("crate", "self")]
            module = tuple(segments[:-1])
            if module in modules and module:
                found[segments[-1]] = module
    return found


def resolve(path: str, here: tuple, modules: set, reexported: dict) -> tuple:
    segments = [s for s in path.split("::") if s and s != "self"]
    if segments[0] == "crate":
        base, rest = (), segments[1:]
    else:
        # `super` in a.rs or a/mod.rs (module a) is a's parent.
        base = here
        while segments and segments[0] == "super":
            base = base[:-1]
            segments = segments[1:]
        rest = segments
    best = base
    for i in range(1, len(rest) + 1):
        candidate = base + tuple(rest[:i])
        if candidate in modules:
            best = candidate
    if best == () and rest and rest[0] in reexported:
        best = reexported[rest[0]]
    return best


def circles_in(crate: Path) -> list:
    src = crate / "src"
    files = {module_of(src, f): f for f in src.rglob("*.rs")}
    modules = set(files)
    reexported = reexports(files[()].read_text(), modules) if () in files else {}
    edges = {m: set() for m in modules}
    for module, file in files.items():
        for path in referenced(file.read_text()):
            target = resolve(path, module, modules, reexported)
            if target != module and target != module[: len(target)]:
                edges[module].add(target)
    return strongly_connected(edges)


def strongly_connected(edges: dict) -> list:
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def main() -> int:
    found = 0
    for crate in sorted((ROOT / "crates").iterdir()):
        if not (crate / "src").is_dir():
            continue
        for group in circles_in(crate):
            found += 1
            names = ", ".join("::".join(m) or "(root)" for m in group)
            print(f"{crate.name}: {names}")
    print(f"{found} import circle(s)")
    return 0 if found == 0 or "--list" in sys.argv else 1


if __name__ == "__main__":
    sys.exit(main())
