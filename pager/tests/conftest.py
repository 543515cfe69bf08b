"""Fixtures of the pager tests: the scalar reference implementation (reference.py)."""

import importlib.util
import sys
from pathlib import Path

import pytest

_NAME = "pager_tests_reference"


def load_reference():
    """reference.py as a module (registered so its dataclasses resolve)."""
    if _NAME not in sys.modules:
        spec = importlib.util.spec_from_file_location(_NAME,
                                                      Path(__file__).with_name("reference.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[_NAME] = module
        spec.loader.exec_module(module)
    return sys.modules[_NAME]


@pytest.fixture(scope="session")
def ref():
    return load_reference()
