"""The import rule of the house: an arrow only points down the layers (`make lint`, and a test in `make test`).

    python tools/check_imports.py [ROOT]        # exit status 1 and one line per arrow that points up

    cvmc (the package's face: `cvmc/__init__.py`, `cvmc/examples`)
    tools/      cvm-opt, cvm-run, ...: thin command lines
    runtime/    load models, compile, run
    codegen/    loop-level IR -> LLVM IR and CUDA C
    passes/     analyses and rewrites
    dialects/   types, attributes, ops, verifiers
    cvmc.errors the error classes every layer raises

A module may import its own layer and the layers below it; every import counts, at the top of a file or inside
a function, under `TYPE_CHECKING` or not (a lazy import is still an arrow). Reads the files only: imports nothing
of the project, so it runs on a broken tree.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

# Bottom first: a module of rank r may import modules of rank <= r.
LAYERS = ("cvmc.errors", "cvmc.dialects", "cvmc.passes", "cvmc.codegen", "cvmc.runtime", "cvmc.tools", "cvmc")
# What the package's root holds itself (its version and the error classes) sits at the bottom with the errors:
# `import cvmc` for `cvmc.__version__` is fine anywhere (the package is loaded before any of its modules);
# `from cvmc import load_model` (or `cvmc.load_model`) reaches the top, the runtime behind the root's lazy names.
ROOT_FACTS = frozenset({"__version__", "errors", "CVMError", "CVMLogicError", "CVMRuntimeError"})
FOLDERS = {"dialects": "cvmc.dialects", "passes": "cvmc.passes", "codegen": "cvmc.codegen",
           "runtime": "cvmc.runtime", "tools": "cvmc.tools", "cvmc": "cvmc"}  # fmt: skip


def layer(module: str) -> str | None:
    """The layer of a `cvmc` module (`cvmc.passes.x` -> `cvmc.passes`), None for a module of another project."""
    if module == "cvmc" or (module.startswith("cvmc.") and module[5:] in ROOT_FACTS):
        return "cvmc.errors"
    for name in LAYERS:
        if module == name or module.startswith(name + "."):
            return name
    return None


def module_name(root: Path, path: Path) -> str:
    """`passes/cvm_gas.py` -> `cvmc.passes.cvm_gas` (the package-dir mapping of pyproject.toml)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    parts[0] = FOLDERS[parts[0]]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported(tree: ast.Module, module: str, is_package: bool) -> list[tuple[int, str]]:
    """(line, module) of every import in `tree`; `from a import b` counts as `a.b` (b may be a submodule)."""
    package = module if is_package else module.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            out += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "cvmc":
            out.append((node.lineno, f"cvmc.{node.attr}"))  # after `import cvmc`: a lazy name of the root
    return out


def sources(root: Path) -> list[Path]:
    """The project's Python files under each layer's folder (the `cvmc/<layer>` links are skipped: the folders
    they name are read once, under their own names)."""
    files = []
    for folder in FOLDERS:
        base = root / folder
        for path in sorted(base.rglob("*.py")):
            inside = path.relative_to(root).parts
            if folder == "cvmc" and len(inside) > 2 and (root / "cvmc" / inside[1]).is_symlink():
                continue
            files.append(path)
    return files


def check(root: Path) -> list[str]:
    """One line per import that points up the layers: `path:line: cvmc.passes.x imports cvmc.runtime.y (up)`."""
    problems = []
    rank = {name: i for i, name in enumerate(LAYERS)}
    for path in sources(root):
        module = module_name(root, path)
        own = "cvmc" if module == "cvmc" else layer(module)  # the root's file is the face, its facts aside
        assert own is not None
        tree = ast.parse(path.read_bytes(), str(path))
        for line, target in imported(tree, module, path.name == "__init__.py"):
            other = layer(target)
            if other is not None and rank[other] > rank[own]:
                problems.append(f"{path.relative_to(root)}:{line}: {module} ({own}) imports {target} ({other}), "
                                f"a layer above it")
    return problems


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    root = Path(args[0]) if args else Path(__file__).resolve().parents[1]
    problems = check(root)
    for p in problems:
        print(p)
    print(f"{len(sources(root))} files: {len(problems)} imports point up the layers", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
