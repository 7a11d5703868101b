"""The session list's item roles: each is its own, none is one of Qt's own roles, so a
model, delegate and widget reading one never read another's data."""

from __future__ import annotations

from PySide6.QtCore import Qt

from treechat.ui.sessions import roles


def test_every_role_is_distinct_and_past_qts_own() -> None:
    values = [getattr(roles, name) for name in dir(roles) if name.endswith("_ROLE")]
    assert len(values) == 9
    assert len({int(v) for v in values}) == len(values)
    assert all(int(v) > int(Qt.ItemDataRole.UserRole) for v in values)
