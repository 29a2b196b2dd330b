"""Bundled apps are what app developers copy: they import the SDK, never the system."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

APPS = ROOT / "apps"


def system_imports(path: Path, root: Path = ROOT) -> list[str]:
    """``file:line module`` for each import of ``aios`` or ``aios.*`` in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found += [
            f"{path.relative_to(root)}:{node.lineno} {n}"
            for n in names
            if n == "aios" or n.startswith("aios.")
        ]
    return found


def test_the_check_sees_system_imports(tmp_path: Path) -> None:
    probe = tmp_path / "main.py"
    probe.write_text(
        "import aios.errors\nfrom aios import names\nimport aios_sdk\n"
        "from aios_sdk.generic import GenericAgent\n"
        "def f():\n    from aios.protocol import Step\n",
        encoding="utf-8",
    )
    assert [hit.split(" ")[1] for hit in system_imports(probe, tmp_path)] == [
        "aios.errors",
        "aios",
        "aios.protocol",
    ]


def test_no_bundled_app_imports_the_system() -> None:
    files = sorted(APPS.rglob("*.py"))
    assert files, "no app sources found"
    bad = [hit for f in files for hit in system_imports(f)]
    assert not bad, "apps import the SDK (aios_sdk), not the system:\n" + "\n".join(bad)
