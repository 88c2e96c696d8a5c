"""What the wheel installs is declared by hand in pyproject.toml (`[tool.setuptools] packages`),
so a new subpackage is left out of the wheel unless someone remembers the list. An editable
install reads the checkout and hides the omission (docs/install.md); this fast test does not:
the list must equal the folders that hold an `__init__.py`, each mapped from its repository
folder, and no folder of Python files may lack an `__init__.py` (it would be skipped too)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
NAMESPACE = "drone_ops_sync"
CODE_FOLDERS = ("sources", "pipelines", "orchestration", "simulator")
"""Repository folders installed as `drone_ops_sync.<folder>` with every subpackage."""
DATA_PACKAGES = ("models",)
"""Installed for their data files (the dbt project), not walked for subpackages."""
IGNORED = {"__pycache__"}


def _pyproject() -> dict[str, Any]:
    with (REPO / "pyproject.toml").open("rb") as handle:
        return tomllib.load(handle)


def _python_folders(root: Path) -> list[Path]:
    """`root` and every folder below it that holds a .py file or an `__init__.py`."""
    folders = [root]
    for path in sorted(root.rglob("*")):
        wanted = path.is_dir() and not IGNORED & set(path.relative_to(REPO).parts)
        if wanted and any(path.glob("*.py")):
            folders.append(path)
    return folders


def test_packages_equal_the_folders_with_an_init() -> None:
    expected = {f"{NAMESPACE}.{folder}" for folder in DATA_PACKAGES}
    for folder in CODE_FOLDERS:
        for path in _python_folders(REPO / folder):
            if (path / "__init__.py").is_file():
                expected.add(".".join((NAMESPACE, *path.relative_to(REPO).parts)))
    declared = _pyproject()["tool"]["setuptools"]["packages"]
    assert len(declared) == len(set(declared)), "a package is listed twice"
    assert set(declared) == expected, (
        f"missing from pyproject.toml: {sorted(expected - set(declared))};"
        f" listed but not a package: {sorted(set(declared) - expected)}"
    )


def test_no_folder_of_python_files_lacks_an_init() -> None:
    """setuptools' explicit list never picks up a folder without `__init__.py`."""
    lacking = [
        str(path.relative_to(REPO))
        for folder in CODE_FOLDERS
        for path in _python_folders(REPO / folder)
        if not (path / "__init__.py").is_file()
    ]
    assert lacking == []


def test_each_top_folder_is_mapped_under_the_namespace() -> None:
    mapping = _pyproject()["tool"]["setuptools"]["package-dir"]
    assert mapping == {f"{NAMESPACE}.{f}": f for f in (*CODE_FOLDERS, *DATA_PACKAGES)}
    assert _pyproject()["project"]["scripts"] == {
        "drone-sync": f"{NAMESPACE}.pipelines.console_script:main"
    }


def test_the_container_recipe_copies_every_installed_folder() -> None:
    """deploy/docker/Dockerfile copies the packaged folders one by one (never the whole checkout:
    no .venv, no secrets); it is not built here (no Docker engine), so a folder added to the
    package but not to the recipe would only show in someone's image build."""
    recipe = (REPO / "deploy" / "docker" / "Dockerfile").read_text(encoding="utf-8")
    copied = set()
    for line in recipe.splitlines():
        words = line.split()
        if words[:1] == ["COPY"] and not any(word.startswith("--") for word in words):
            copied.update(words[1:-1])
    assert copied == {*CODE_FOLDERS, *DATA_PACKAGES, "pyproject.toml", "README.md"}
