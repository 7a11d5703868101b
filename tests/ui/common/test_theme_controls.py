"""Every combo box, spin box and check box of Settings and the chat's parameters, drawn in both
schemes: the current item reads in the closed box, the popup's current row is a solid accent
that stands out from the popup, spin boxes have both arrows, and a check box's box shows
whether it is ticked or not (it was a faint outline on the dark dialog)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QRect
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QApplication,
    QCheckBox,
    QComboBox,
    QDialog,
    QStyle,
    QStyleOptionButton,
    QStyleOptionSpinBox,
    QTabWidget,
)
from tests.support.pixels import contrast, fill_of, marks_in

from treechat.core.chat_settings import ChatParameters
from treechat.providers.keys import KeyStore
from treechat.ui.common.tasks import BackgroundTasks
from treechat.ui.common.theme import DARK, LIGHT, Colors, ThemeManager
from treechat.ui.dialogs.chat_controls import ParametersDialog, Shown
from treechat.ui.dialogs.settings import SettingsDialog, SettingsValues

from ..conftest import Aio

SHOTS = Path(__file__).resolve().parents[3] / "docs" / "screenshots"


@pytest.fixture(params=["light", "dark"])
def scheme(request: pytest.FixtureRequest, qapp: QApplication) -> Iterator[Colors]:
    theme = ThemeManager(qapp, str(request.param))
    try:
        yield DARK if request.param == "dark" else LIGHT
    finally:
        theme.set_mode("light")
        theme.deleteLater()


def settings_dialog() -> SettingsDialog:
    from treechat.services.models.catalog import ModelChoice

    choices = [ModelChoice("openai/gpt-4o", "OpenAI · GPT-4o", "openai"),
               ModelChoice("openai/gpt-4o-mini", "OpenAI · GPT-4o mini", "openai")]
    values = SettingsValues("openai/gpt-4o-mini", None, 0.8, 0.95, "dark")
    return SettingsDialog(KeyStore(environ={}), ["openai"], choices, values,
                          tasks=BackgroundTasks())


def parameters_dialog() -> ParametersDialog:
    current = ChatParameters(temperature=0.7, top_p=0.9, max_tokens=2048,
                             reasoning_effort="high", thinking_budget=8192)
    return ParametersDialog("anthropic/claude-sonnet-4-5", current,
                            Shown(reasoning_effort=True, thinking_budget=True))


def shown(dialog: QDialog) -> None:
    dialog.resize(640, 480)
    dialog.show()
    QApplication.processEvents()


def check_combo(combo: QComboBox, colors: Colors) -> None:
    assert combo.currentIndex() >= 0 and combo.currentText()
    closed = combo.grab().toImage()
    inside = combo.rect().adjusted(6, 4, -combo.height(), -4)
    back = fill_of(closed, inside)
    assert marks_in(closed, inside, back, 3.0) > 20, combo.accessibleName()  # its text
    combo.showPopup()
    QApplication.processEvents()
    view = combo.view()
    try:
        row = view.visualRect(combo.model().index(combo.currentIndex(), 0))
        image = view.viewport().grab().toImage()
        fill = fill_of(image, row)
        assert fill.name() == colors.accent, (combo.accessibleName(), fill.name())
        assert contrast(fill, colors.raised) >= 3.0
        assert marks_in(image, row, fill, 2.5) > 20  # the item's text on the accent
    finally:
        combo.hidePopup()


def check_spin(spin: QAbstractSpinBox) -> None:
    option = QStyleOptionSpinBox()
    option.initFrom(spin)
    option.subControls = (QStyle.SubControl.SC_SpinBoxUp | QStyle.SubControl.SC_SpinBoxDown
                          | QStyle.SubControl.SC_SpinBoxFrame
                          | QStyle.SubControl.SC_SpinBoxEditField)
    option.frame = spin.hasFrame()
    option.buttonSymbols = spin.buttonSymbols()
    option.stepEnabled = (QAbstractSpinBox.StepEnabledFlag.StepUpEnabled
                          | QAbstractSpinBox.StepEnabledFlag.StepDownEnabled)
    image = spin.grab().toImage()
    for part in (QStyle.SubControl.SC_SpinBoxUp, QStyle.SubControl.SC_SpinBoxDown):
        rect: QRect = spin.style().subControlRect(
            QStyle.ComplexControl.CC_SpinBox, option, part, spin)
        assert rect.width() > 4 and rect.height() > 3, spin.accessibleName()
        inner = rect.adjusted(2, 1, -2, -1)
        assert marks_in(image, inner, fill_of(image, inner), 2.0) >= 3, (
            spin.accessibleName(), part)


def check_box(box: QCheckBox, colors: Colors) -> None:
    option = QStyleOptionButton()
    option.initFrom(box)
    rect = box.style().subElementRect(QStyle.SubElement.SE_CheckBoxIndicator, option, box)
    image = box.grab().toImage()
    if box.isChecked():
        assert fill_of(image, rect.adjusted(1, 1, -1, -1)).name() == colors.accent
        assert marks_in(image, rect.adjusted(2, 2, -2, -2), QColor(colors.accent), 2.5) > 4
    else:  # the empty box's edge stands out from the dialog
        assert marks_in(image, rect, QColor(colors.window), 2.0) > 8, box.accessibleName()


def test_settings_combo_and_spin_boxes_draw_their_current_item_and_arrows(
    scheme: Colors, aio: Aio,
) -> None:
    # `aio`: the dialog starts its key checks on the loop (cancelled when the test ends)
    dialog = settings_dialog()
    try:
        (tabs,) = dialog.findChildren(QTabWidget)
        tabs.setCurrentIndex([tabs.tabText(i) for i in range(tabs.count())].index("General"))
        shown(dialog)
        for combo in (dialog.default_model, dialog.summarizer, dialog.theme):
            check_combo(combo, scheme)
        for spin in (dialog.summarize_at, dialog.emergency_at):
            check_spin(spin)
        if os.environ.get("TREECHAT_SCREENSHOTS") == "1":
            name = "dark" if scheme.dark else "light"
            dialog.grab().save(str(SHOTS / f"first-hour-settings-general-{name}.png"))
    finally:
        dialog.deleteLater()


def test_chat_parameters_spin_boxes_have_arrows_and_the_effort_reads(
    scheme: Colors,
) -> None:
    dialog = parameters_dialog()
    try:
        shown(dialog)
        spins = dialog.findChildren(QAbstractSpinBox)
        assert len(spins) == 4
        for spin in spins:
            check_spin(spin)
        (combo,) = dialog.findChildren(QComboBox)
        check_combo(combo, scheme)
        boxes = dialog.findChildren(QCheckBox)
        assert len(boxes) == 5 and all(b.isChecked() for b in boxes)
        boxes[0].setChecked(False)  # the model's own default: an empty box
        QApplication.processEvents()
        for box in boxes:
            check_box(box, scheme)
        if os.environ.get("TREECHAT_SCREENSHOTS") == "1":
            name = "dark" if scheme.dark else "light"
            dialog.grab().save(str(SHOTS / f"first-hour-parameters-{name}.png"))
    finally:
        dialog.deleteLater()
