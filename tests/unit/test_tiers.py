"""The slow-tier table (tests/tiers.py) names tests that exist: a renamed or deleted test
would otherwise silently return to the quick tier's budget, or vanish from it."""

from __future__ import annotations

import re

from tests.conftest import ROOT
from tests.tiers import SLOW, slow_key


def test_every_slow_entry_names_an_existing_test():
    for key in SLOW:
        path, _, function = key.partition("::")
        source = ROOT / path
        assert source.is_file(), key
        if function:
            assert re.search(rf"^(async )?def {function}\(", source.read_text(), re.M), key


def test_slow_key_of_a_parametrised_test():
    assert slow_key("tests/unit/test_x.py::test_y[a-b]") == (
        "tests/unit/test_x.py",
        "tests/unit/test_x.py::test_y",
    )
