"""A module of `memex.sources` named like a name its package defines would replace that name for every
later import once the module is imported (`memex.sources.adapter`, the function, became the module
`memex/sources/adapter.py` in a process that had imported every module: the indexer then failed)."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import memex.sources


def test_no_module_of_the_package_shadows_a_name_it_defines() -> None:
    tree = ast.parse(Path(memex.sources.__file__).read_text())
    defined = {node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.ClassDef)}
    defined |= {
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign | ast.AnnAssign)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name)
    }
    modules = {info.name for info in pkgutil.iter_modules(memex.sources.__path__)}
    assert "adapter" in defined and not defined & modules


def test_the_adapter_function_survives_every_module_imported() -> None:
    for info in pkgutil.iter_modules(memex.sources.__path__):
        importlib.import_module(f"memex.sources.{info.name}")
    assert memex.sources.adapter("claude").AGENT == "claude"
