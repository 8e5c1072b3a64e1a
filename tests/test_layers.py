"""Every module of django_mcp is in exactly one layer of the import-linter contract (pyproject.toml).

import-linter checks the imports between the layers it is told about; a module left out of
the contract would escape it, so a new module must be given its layer. An import inside a
function says why it is not at the top (``# reason: ...``). And in tests/, no module imports a test
module: what test files share lives in tests/support/.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

if sys.version_info < (3, 11):
    pytest.skip("tomllib is Python 3.11+", allow_module_level=True)
import tomllib

ROOT = Path(__file__).resolve().parent.parent
UNLAYERED = {"django_mcp", "django_mcp.migrations"}


def _modules() -> set[str]:
    found = set()
    for path in (ROOT / "django_mcp").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if "migrations" not in parts[:-1]:
            found.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


def test_every_module_is_in_one_layer() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (layers,) = [c["layers"] for c in config["contracts"] if c["type"] == "layers"]
    named = [m.strip() for layer in layers for m in layer.replace("|", ":").split(":")]
    assert len(named) == len(set(named)), "a module is named twice"

    def layer_of(module: str) -> list[str]:
        return [n for n in named if module == n or module.startswith(n + ".")]

    # Not layered: the lazy public API (the root), the migrations, and a package whose modules
    # sit in different layers (tasks: its own __init__ is guarded by a forbidden contract).
    missing = sorted(
        m
        for m in _modules()
        if not layer_of(m) and m not in UNLAYERED and not any(n.startswith(m + ".") for n in named)
    )
    assert missing == [], f"modules in no layer of [tool.importlinter]: {missing}"
    nested = {m: layer_of(m) for m in _modules() if len(layer_of(m)) > 1}
    assert nested == {}, f"modules in two layers: {nested}"


def test_no_import_circle() -> None:
    """No two modules of django_mcp import each other, directly or around a circle (imports in functions count).

    The layers contract forbids upward imports; this also catches a circle inside one layer.
    """
    grimp = pytest.importorskip("grimp")  # import-linter's import graph
    graph = grimp.build_graph("django_mcp", exclude_type_checking_imports=True)
    circles = [
        (module, other)
        for module in sorted(graph.modules)
        for other in graph.find_modules_that_directly_import(module)
        if graph.chain_exists(importer=module, imported=other)
    ]
    assert circles == [], f"import circles through: {circles}"


REASON = re.compile(r"#\s*reason:\s*\S")


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _function_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """The imports run inside a function body (nested in if/try/with/for blocks too), not under TYPE_CHECKING."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(node, ast.If) and _is_type_checking(node.test) and child in node.body:
                continue  # annotations only: never runs
            if isinstance(child, (ast.Import, ast.ImportFrom)) and in_function:
                found.append(child)
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(tree, False)
    return found


def test_imports_inside_functions_give_a_reason() -> None:
    """An import stays inside a function only where app loading needs it, and says why.

    Anything else goes to the module's top. The reason is a ``# reason: ...`` comment on the
    import's line or on a comment line just above it, e.g. ``# reason: models need the app registry``.
    """
    unexplained = []
    for path in sorted((ROOT / "django_mcp").rglob("*.py")):
        if "migrations" in path.relative_to(ROOT).parts:
            continue
        source = path.read_text()
        lines = source.splitlines()
        for node in _function_imports(ast.parse(source)):
            own = lines[node.lineno - 1 : node.end_lineno or node.lineno]
            above = lines[node.lineno - 2].strip() if node.lineno > 1 else ""
            if any(REASON.search(line) for line in own) or (above.startswith("#") and REASON.search(above)):
                continue
            unexplained.append(f"{path.relative_to(ROOT)}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    assert unexplained == [], "imports inside functions without a '# reason:' comment:\n" + "\n".join(unexplained)


def _test_modules_imported(source: str, module: str) -> list[str]:
    """The test modules (``test_*``) and conftests of ``tests`` that ``source``, the module named ``module``, imports.

    Relative imports are resolved against ``module``'s package; ``from tests import test_x`` counts too.
    """
    package = module.split(".")[:-1]
    imported: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            parent = ".".join([*base, *([node.module] if node.module else [])])
            imported += [parent, *(f"{parent}.{a.name}" for a in node.names if a.name.startswith("test_"))]
    return sorted(
        {
            name
            for name in imported
            if name.split(".")[0] == "tests" and any(p.startswith("test_") or p == "conftest" for p in name.split("."))
        }
    )


def test_the_import_check_sees_test_modules() -> None:
    source = (
        "import tests.test_a\nfrom tests.test_b import x\nfrom tests import test_c, support\nfrom .test_d import y\n"
        "from tests.conftest import z\nfrom tests.support.servers import LiveServer\nimport pytest\n"
    )
    found = _test_modules_imported(source, "tests.production.test_e")
    assert found == ["tests.conftest", "tests.production.test_d", "tests.test_a", "tests.test_b", "tests.test_c"]


def test_no_test_module_imports_another() -> None:
    """What two test modules share lives in ``tests/support/``; fixtures live in a conftest, which nothing imports.

    A test file that others import cannot be edited, renamed or deleted as one feature's tests, and nothing in
    its name says that other files depend on it.
    """
    offenders = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        found = _test_modules_imported(path.read_text(), module)
        if found:
            offenders.append(f"{path.relative_to(ROOT)}: {', '.join(found)}")
    assert offenders == [], (
        "modules importing a test module or a conftest (move what they share to tests/support/):\n"
        + ("\n".join(offenders))
    )


def test_contributing_layer_table_matches_the_contract() -> None:
    """CONTRIBUTING.md's layer table is what a newcomer reads; the contract is what lint-imports enforces."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (layers,) = [c["layers"] for c in config["contracts"] if c["type"] == "layers"]
    contract = [{m.strip() for m in layer.replace("|", ":").split(":")} for layer in layers]
    text = (ROOT / "CONTRIBUTING.md").read_text()
    rows = re.findall(r"^\| (\d) [^|]*\| (.*) \|$", text[text.index("## Layers") :], flags=re.M)
    assert [int(n) for n, _ in rows] == list(range(len(contract), 0, -1)), "one row per layer, top first"
    table = []
    for _, cell in rows:
        # Each module in backticks, before its note in parentheses; `x/` is the package x.
        names = re.findall(r"`([a-z0-9_.]+/?)`(?![^(]*\))", cell)
        table.append({"django_mcp." + n.rstrip("/") for n in names})
    for number, (written, enforced) in enumerate(zip(table, contract, strict=True)):
        layer = len(contract) - number
        assert written == enforced, (
            f"layer {layer}: only in CONTRIBUTING.md {sorted(written - enforced)}, "
            f"only in pyproject.toml {sorted(enforced - written)}"
        )


def _reaches_past_call(tree: ast.AST) -> list[str]:
    """Where a module reads ``<anything>.exchange`` or ``engine.answer``, or imports ``engine``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "exchange":
            found.append(f"line {node.lineno}: .exchange")
        elif isinstance(node, ast.Attribute) and node.attr == "answer" and isinstance(node.value, ast.Name):
            if node.value.id == "engine":
                found.append(f"line {node.lineno}: engine.answer")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[-1] == "engine":
            found.append(f"line {node.lineno}: imports the engine")
    return found


def test_built_in_middleware_use_only_the_public_call_api() -> None:
    """The built-in middleware are written as users write theirs: through ``Call``, never its exchange or the engine.

    What a built-in middleware needs that ``Call`` lacks is added to ``Call`` (and docs/middleware.md),
    so a user's middleware can do the same.
    """
    reaching = {}
    package = ROOT / "django_mcp"
    built_in = [*(package / "audit").rglob("*.py"), *(package / "limits").rglob("*.py")]
    built_in += [*(package / "telemetry").rglob("*.py"), package / "switches.py", package / "strict.py"]
    for path in sorted(built_in):
        found = _reaches_past_call(ast.parse(path.read_text(), str(path)))
        if found:
            reaching[path.name] = found
    assert reaching == {}, f"built-in middleware reach past the public Call API: {reaching}"


def test_the_check_finds_what_it_forbids() -> None:
    """The AST check above is not vacuous: each form it forbids is found."""
    source = (
        "from ..engine import engine\n"
        "def f(call):\n"
        "    call.exchange.cancelled.set()\n"
        "    return engine.answer(call, {})\n"
    )
    assert len(_reaches_past_call(ast.parse(source))) == 3
