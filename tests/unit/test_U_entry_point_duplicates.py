"""A mechanism name two installed packages register (entry-point group
``ldpfleet.mechanisms``) is refused naming both (helper U, library-user QA).

Found: ``get_mechanism("dup", 1.0)`` with ``dup`` registered by ``dist-a`` (``pkg_a:M``)
and ``dist-b`` (``pkg_b:M``) silently built one of them (``pkg_b``'s here): which one a
scenario's ``mechanism = "dup"`` runs depended on the import path's order, possibly
another on the devices' machines. One package found twice on the path is not a clash.
"""

from __future__ import annotations

import sys

import pytest
from ldpfleet.protocol import mechanisms

import ldpfleet


def fake_distribution(root, letter: str, target_letter: str | None = None) -> None:
    package = root / f"pkg_{letter}"
    package.mkdir()
    (package / "__init__.py").write_text(
        "import ldpfleet\n\n\nclass M(ldpfleet.LaplaceMechanism):\n"
        "    def __init__(self, eps):\n        super().__init__(eps)\n"
    )
    info = root / f"dist_{letter}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: dist-{letter}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        f"[ldpfleet.mechanisms]\ndup = pkg_{target_letter or letter}:M\n"
    )


@pytest.fixture(autouse=True)
def fresh_plugin_cache():
    mechanisms._plugin_class.cache_clear()
    yield
    mechanisms._plugin_class.cache_clear()
    for name in ("pkg_a", "pkg_b"):  # each test's own fake packages
        sys.modules.pop(name, None)


def test_a_name_two_packages_register_is_refused_naming_both(tmp_path, monkeypatch):
    fake_distribution(tmp_path, "a")
    fake_distribution(tmp_path, "b")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "dup" in ldpfleet.mechanism_names()
    with pytest.raises(ldpfleet.ParameterError) as caught:
        ldpfleet.get_mechanism("dup", 1.0)
    message = str(caught.value)
    assert caught.value.field == "mechanism"
    assert "'dist-a' -> 'pkg_a:M'" in message and "'dist-b' -> 'pkg_b:M'" in message
    assert "by its import path" in message
    assert type(ldpfleet.get_mechanism("pkg_a:M", 1.0)).__module__ == "pkg_a"  # the way out


def test_one_package_registering_it_still_resolves(tmp_path, monkeypatch):
    fake_distribution(tmp_path, "a")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert type(ldpfleet.get_mechanism("dup", 1.0)).__module__ == "pkg_a"
