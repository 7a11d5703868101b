"""Composition root: builds the services once and opens the main window."""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    from PySide6.QtWidgets import QApplication, QLabel

    app = QApplication([sys.argv[0], *(argv or [])])
    label = QLabel("Treechat")
    label.resize(480, 320)
    label.show()
    return app.exec()
