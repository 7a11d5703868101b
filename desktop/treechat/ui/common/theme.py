"""The look: a light and a dark palette with one accent, a style sheet on top of Fusion, and
following the system's colour scheme when the user has not picked one."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QColor, QGuiApplication, QPalette

if TYPE_CHECKING:
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication

MODES = ("system", "light", "dark")


class Colors(NamedTuple):
    """Named colours of one scheme; widgets derive them from their palette (`colors_of`).
    (A named tuple: the window's first frame imports this, and a dataclass costs more.)"""

    dark: bool
    window: str
    sidebar: str
    base: str
    raised: str
    text: str
    muted: str
    border: str
    accent: str
    accent_text: str
    accent_soft: str
    hover: str
    ok: str
    warn: str
    danger: str
    danger_soft: str
    warn_soft: str
    code: str


LIGHT = Colors(
    dark=False,
    window="#f7f7f9",
    sidebar="#eef0f3",
    base="#ffffff",
    raised="#ffffff",
    text="#1c1f24",
    muted="#626a76",
    border="#d9dde3",
    accent="#2f6fde",
    accent_text="#ffffff",
    accent_soft="#dbe6fb",
    hover="#e3e7ed",
    ok="#1f8a43",
    warn="#b7791f",
    danger="#c8322f",
    danger_soft="#fbe6e5",
    warn_soft="#fcf1dc",
    code="#f3f4f6",
)

DARK = Colors(
    dark=True,
    window="#1c1e22",
    sidebar="#17191c",
    base="#23262b",
    raised="#2a2d33",
    text="#e5e7eb",
    muted="#9aa2ae",
    border="#363a42",
    accent="#5b8def",
    accent_text="#ffffff",
    accent_soft="#2a3a5c",
    hover="#2c3037",
    ok="#3fb760",
    warn="#d9a23a",
    danger="#ef5d58",
    danger_soft="#3f2424",
    warn_soft="#3d3220",
    code="#1a1c20",
)


def colors_of(palette: QPalette) -> Colors:
    """The scheme a palette belongs to, judged by its text colour (light text: dark scheme).
    Not by the background: style sheets make some backgrounds transparent."""
    return DARK if palette.color(QPalette.ColorRole.WindowText).lightness() > 128 else LIGHT


def level_color(fraction: float, colors: Colors) -> str:
    """Green while there is room, amber from 70 % (compaction is near), red from 90 %."""
    if fraction >= 0.9:
        return colors.danger
    if fraction >= 0.7:
        return colors.warn
    return colors.ok


def system_is_dark() -> bool:
    from PySide6.QtCore import Qt

    hints = QGuiApplication.styleHints()
    return hints.colorScheme() == Qt.ColorScheme.Dark


def palette_for(colors: Colors) -> QPalette:
    p = QPalette()
    role = QPalette.ColorRole
    group = QPalette.ColorGroup

    def put(r: QPalette.ColorRole, value: str) -> None:
        p.setColor(r, QColor(value))

    put(role.Window, colors.window)
    put(role.WindowText, colors.text)
    put(role.Base, colors.base)
    put(role.AlternateBase, colors.sidebar)
    put(role.Text, colors.text)
    put(role.Button, colors.raised)
    put(role.ButtonText, colors.text)
    put(role.BrightText, colors.danger)
    put(role.Highlight, colors.accent)
    put(role.HighlightedText, colors.accent_text)
    put(role.ToolTipBase, colors.raised)
    put(role.ToolTipText, colors.text)
    put(role.PlaceholderText, colors.muted)
    put(role.Link, colors.accent)
    put(role.Mid, colors.border)
    put(role.Midlight, colors.hover)
    put(role.Dark, colors.border)
    put(role.Light, colors.raised)
    put(role.Shadow, "#000000")
    disabled = QColor(colors.muted)
    disabled.setAlpha(150)
    for r in (role.WindowText, role.Text, role.ButtonText):
        p.setColor(group.Disabled, r, disabled)
    return p


def _check_mark() -> str:
    """The tick drawn on a checked box: white, the accent's text colour in both schemes."""
    from ... import paths

    return paths.resource("icons", "ui", "check-on-accent.svg").as_posix()


def style_sheet(c: Colors) -> str:
    """Polish that the palette cannot express: radii, spacing, the composer card. Combo and
    spin boxes keep Fusion's own frames and arrows (drawn from the palette); only their
    popups are styled, so the row under the pointer or the keyboard is solid accent in both
    schemes."""
    check = _check_mark()
    return f"""
QToolTip {{
    color: {c.text}; background: {c.raised}; border: 1px solid {c.border};
    border-radius: 6px; padding: 6px 8px;
}}
QMainWindow::separator {{ background: {c.border}; width: 1px; height: 1px; }}
#Sidebar {{ background: {c.sidebar}; border-right: 1px solid {c.border}; }}
#SidebarTitle {{ color: {c.text}; font-weight: 600; }}
#SessionSearch {{
    background: {c.base}; border: 1px solid {c.border}; border-radius: 8px;
    padding: 6px 10px; selection-background-color: {c.accent};
}}
#SessionSearch:focus {{ border: 1px solid {c.accent}; }}
#SessionListView {{ background: transparent; border: none; outline: none; }}
#NewChatButton {{
    background: {c.accent}; color: {c.accent_text}; border: none; border-radius: 8px;
    padding: 7px 12px; font-weight: 600;
}}
#NewChatButton:hover {{ background: {c.accent}; border: 1px solid {c.text}; }}
#Center {{ background: {c.window}; }}
#ChatHeader {{ background: {c.window}; border-bottom: 1px solid {c.border}; }}
#ChatTitle {{ font-weight: 600; color: {c.text}; }}
#ChatSubtitle {{ color: {c.muted}; }}
#Composer {{ background: transparent; }}
#ComposerCard {{
    background: {c.base}; border: 1px solid {c.border}; border-radius: 14px;
}}
#ComposerCard[focused="true"] {{ border: 1px solid {c.accent}; }}
#ComposerInput {{
    background: transparent; border: none; color: {c.text};
    selection-background-color: {c.accent}; padding: 2px;
}}
#ModelPicker {{
    background: transparent; border: 1px solid transparent; border-radius: 7px;
    padding: 3px 8px; color: {c.muted};
}}
#ModelPicker:hover {{ border: 1px solid {c.border}; color: {c.text}; }}
#ModelPickerPopup {{ background: {c.raised}; border: 1px solid {c.border}; }}
#ModelPickerPopup QTreeView {{ background: {c.raised}; border: none; outline: none; }}
#ModelPickerPopup QTreeView::item {{ padding: 3px 2px; color: {c.text}; }}
#ModelPickerPopup QTreeView::item:hover {{ background: {c.hover}; }}
#ModelPickerPopup QTreeView::item:selected {{ background: {c.accent}; color: {c.accent_text}; }}
#SendButton {{
    background: {c.accent}; color: {c.accent_text}; border: none; border-radius: 8px;
    padding: 5px 14px; font-weight: 600;
}}
#SendButton:disabled {{ background: {c.hover}; color: {c.muted}; }}
#SendButton[stop="true"] {{ background: {c.danger}; }}
#ComposerHint {{ color: {c.muted}; }}
#ErrorBanner {{ border-radius: 10px; border: 1px solid {c.border}; }}
#ErrorBanner[level="error"] {{ background: {c.danger_soft}; border: 1px solid {c.danger}; }}
#ErrorBanner[level="warning"] {{ background: {c.warn_soft}; border: 1px solid {c.warn}; }}
#ErrorBanner[level="info"] {{ background: {c.accent_soft}; border: 1px solid {c.accent}; }}
#ErrorTitle {{ font-weight: 600; color: {c.text}; }}
#ErrorMessage {{ color: {c.text}; }}
#BannerAction {{
    background: {c.base}; color: {c.text}; border: 1px solid {c.border};
    border-radius: 7px; padding: 4px 12px;
}}
#BannerAction:hover {{ border: 1px solid {c.accent}; }}
#BannerClose {{ background: transparent; border: none; color: {c.muted}; padding: 2px 6px; }}
#BannerClose:hover {{ color: {c.text}; }}
#EmptyTitle {{ color: {c.text}; font-weight: 600; }}
#EmptyHint {{ color: {c.muted}; }}
#PlaceholderChat {{ background: {c.window}; border: none; }}
QDockWidget {{ color: {c.text}; }}
QDockWidget::title {{
    background: {c.sidebar}; padding: 6px 8px; border-bottom: 1px solid {c.border};
}}
QTabWidget::pane {{ border: none; background: {c.window}; }}
QTabBar::tab {{
    background: transparent; color: {c.muted}; padding: 6px 14px; border: none;
    border-bottom: 2px solid transparent;
}}
QTabBar::tab:selected {{ color: {c.text}; border-bottom: 2px solid {c.accent}; }}
QMenu {{ background: {c.raised}; border: 1px solid {c.border}; padding: 4px; }}
QMenu::item {{ padding: 5px 22px 5px 14px; border-radius: 5px; }}
QMenu::item:selected {{ background: {c.accent_soft}; color: {c.text}; }}
QMenu::separator {{ height: 1px; background: {c.border}; margin: 4px 6px; }}
QMenuBar {{ background: {c.window}; }}
QMenuBar::item:selected {{ background: {c.hover}; border-radius: 4px; }}
QStatusBar {{ color: {c.muted}; }}
QScrollBar:vertical {{ background: transparent; width: 10px; margin: 2px; }}
QScrollBar::handle:vertical {{ background: {c.border}; border-radius: 4px; min-height: 32px; }}
QScrollBar::handle:vertical:hover {{ background: {c.muted}; }}
QScrollBar::add-line:vertical, QScrollBar::sub-line:vertical {{ height: 0; }}
QScrollBar::add-page:vertical, QScrollBar::sub-page:vertical {{ background: transparent; }}
QScrollBar:horizontal {{ background: transparent; height: 10px; margin: 2px; }}
QScrollBar::handle:horizontal {{ background: {c.border}; border-radius: 4px; min-width: 32px; }}
QScrollBar::add-line:horizontal, QScrollBar::sub-line:horizontal {{ width: 0; }}
#DialogHeadline {{ font-weight: 600; color: {c.text}; }}
#DialogMuted {{ color: {c.muted}; }}
QTableView {{
    background: {c.base}; border: 1px solid {c.border}; border-radius: 8px;
    gridline-color: transparent; selection-background-color: {c.accent_soft};
    selection-color: {c.text};
}}
QHeaderView::section {{
    background: {c.base}; color: {c.muted}; border: none;
    border-bottom: 1px solid {c.border}; padding: 6px 8px;
}}
QLineEdit {{
    background: {c.base}; color: {c.text}; border: 1px solid {c.border}; border-radius: 6px;
    padding: 4px 8px;
}}
QLineEdit:focus {{ border: 1px solid {c.accent}; }}
QAbstractSpinBox QLineEdit {{
    background: transparent; border: none; border-radius: 0; padding: 0;
}}
QComboBox QAbstractItemView {{
    background: {c.raised}; color: {c.text}; border: 1px solid {c.border}; outline: none;
    selection-background-color: {c.accent}; selection-color: {c.accent_text};
}}
QComboBox QAbstractItemView::item {{ min-height: 24px; padding: 0 8px; }}
QComboBox QAbstractItemView::item:selected {{
    background: {c.accent}; color: {c.accent_text};
}}
QCheckBox::indicator, QAbstractItemView::indicator {{
    width: 14px; height: 14px; border: 1px solid {c.muted}; border-radius: 3px;
    background: {c.base};
}}
QCheckBox::indicator:hover, QAbstractItemView::indicator:hover {{ border: 1px solid {c.accent}; }}
QCheckBox::indicator:checked, QAbstractItemView::indicator:checked {{
    background: {c.accent}; border: 1px solid {c.accent}; image: url("{check}");
}}
QCheckBox::indicator:disabled, QAbstractItemView::indicator:disabled {{
    border: 1px solid {c.border};
}}
QCheckBox::indicator:checked:disabled, QAbstractItemView::indicator:checked:disabled {{
    background: {c.border}; border: 1px solid {c.border};
}}
QPushButton {{
    background: {c.raised}; border: 1px solid {c.border}; border-radius: 7px;
    padding: 5px 14px; color: {c.text};
}}
QPushButton:hover {{ border: 1px solid {c.accent}; }}
QPushButton:default {{ background: {c.accent}; color: {c.accent_text}; border: none; }}
QPushButton:disabled {{ color: {c.muted}; }}
QPushButton:default:disabled {{
    background: {c.raised}; color: {c.muted}; border: 1px solid {c.border};
}}
QDialogButtonBox {{ dialogbuttonbox-buttons-have-icons: 0; }}
QScrollArea {{ background: transparent; }}
"""


class ThemeManager(QObject):
    """Applies a scheme to the application and re-applies it when the system scheme changes
    while the user's choice is "system"."""

    changed = Signal(object)  # Colors

    def __init__(self, app: QApplication, mode: str = "system") -> None:
        from PySide6.QtGui import QFont

        super().__init__(app)
        self._app = app
        self._mode = mode if mode in MODES else "system"
        self._colors = LIGHT
        app.setStyle("Fusion")
        font = app.font()
        if font.pointSizeF() < 10:
            font.setPointSizeF(10)
        font.setHintingPreference(QFont.HintingPreference.PreferNoHinting)
        app.setFont(font)
        QGuiApplication.styleHints().colorSchemeChanged.connect(self._system_changed)
        self.apply()

    @property
    def mode(self) -> str:
        return self._mode

    @property
    def colors(self) -> Colors:
        return self._colors

    def set_mode(self, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown theme {mode!r}")
        self._mode = mode
        self.apply()

    def apply(self) -> None:
        dark = system_is_dark() if self._mode == "system" else self._mode == "dark"
        colors = DARK if dark else LIGHT
        changed = colors != self._colors
        self._colors = colors
        self._app.setPalette(palette_for(colors))
        self._app.setStyleSheet(style_sheet(colors))
        if changed:
            self.changed.emit(colors)

    def _system_changed(self, _scheme: Qt.ColorScheme) -> None:
        if self._mode == "system":
            self.apply()
