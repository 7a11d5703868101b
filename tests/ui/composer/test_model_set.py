"""Choosing several models for the next message: the button says how many, its popup ticks
models and saved sets, and saving asks for a name and two or more models."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtTest import QSignalSpy, QTest
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from treechat.services.models.catalog import ModelChoice
from treechat.ui.composer.composer import Composer

CHOICES = [ModelChoice("m/a", "Alpha", "x"), ModelChoice("m/b", "Beta", "x"),
           ModelChoice("m/c", "Gamma", "x"), ModelChoice("m/off", "Off", "x", available=False)]


def make(qtbot: QtBot) -> Composer:
    composer = Composer()
    qtbot.addWidget(composer)
    composer.resize(800, 160)
    composer.show()
    composer.set_models(CHOICES, "m/a")
    return composer


def test_the_picker_opens_the_several_popup_and_ticked_models_are_chosen(qtbot: QtBot) -> None:
    composer = make(qtbot)
    button = composer.several
    assert button.isHidden() and button.chosen() == []  # the picker's Several… opens it
    composer.picker.showPopup()
    QTest.mouseClick(composer.picker.popup.several_button, Qt.MouseButton.LeftButton)
    popup = button.popup
    assert popup.isVisible()
    assert [popup.list.item(i).text() for i in range(popup.list.count())] == [
        "Alpha", "Beta", "Gamma", "Off"]
    assert not popup.list.item(3).flags() & Qt.ItemFlag.ItemIsEnabled  # not usable now
    popup.list.item(0).setCheckState(Qt.CheckState.Checked)
    assert not popup.use_button.isEnabled()  # one model is the picker's job
    popup.list.item(2).setCheckState(Qt.CheckState.Checked)
    changed = QSignalSpy(button.chosenChanged)
    QTest.mouseClick(popup.use_button, Qt.MouseButton.LeftButton)
    assert button.chosen() == ["m/a", "m/c"] and button.text() == "2 models"
    assert not button.isHidden()
    assert changed.count() == 1
    assert "Alpha, Gamma" in button.toolTip()


def test_saving_needs_a_name_and_a_saved_set_ticks_its_models(qtbot: QtBot) -> None:
    composer = make(qtbot)
    button = composer.several
    button.set_sets({"my three": ("m/a", "m/b", "m/c")})
    button.open_popup()
    popup = button.popup
    saved = QSignalSpy(button.saveRequested)
    popup.tick(["m/a", "m/b"])
    assert not popup.save_button.isEnabled()
    QTest.keyClicks(popup.name, "pair")
    QTest.mouseClick(popup.save_button, Qt.MouseButton.LeftButton)
    assert saved.at(0) == ["pair", ["m/a", "m/b"]]
    popup.saved.setCurrentIndex(1)
    popup.saved.activated.emit(1)
    assert popup.ticked() == ["m/a", "m/b", "m/c"] and popup.name.text() == "my three"
    deleted = QSignalSpy(button.deleteRequested)
    QTest.mouseClick(popup.delete_button, Qt.MouseButton.LeftButton)
    assert deleted.at(0) == ["my three"]


def test_a_chosen_model_that_goes_away_leaves_the_set(qtbot: QtBot) -> None:
    composer = make(qtbot)
    composer.several.set_chosen(["m/a", "m/b", "m/c"])
    composer.set_models(CHOICES[:2], "m/a")
    assert composer.several.chosen() == ["m/a", "m/b"]
    composer.set_models(CHOICES[:1], "m/a")
    assert composer.several.chosen() == []  # one left: back to the picker's model
    assert composer.several.isHidden()


def test_the_keyboard_goes_back_to_the_message_box_when_the_popup_closes(
    qtbot: QtBot,
) -> None:
    composer = make(qtbot)
    composer.activateWindow()
    composer.input.setFocus()
    qtbot.waitUntil(composer.input.hasFocus)
    composer.picker.showPopup()  # Several… in the picker's popup opens it
    QTest.mouseClick(composer.picker.popup.several_button, Qt.MouseButton.LeftButton)
    popup = composer.several.popup
    qtbot.waitUntil(popup.list.hasFocus)
    assert popup.too_few.isHidden()  # three models can be asked
    QTest.keyClick(popup.list, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: not popup.isVisible())
    focused = QApplication.focusWidget()
    assert focused is composer.input  # not the picker, where typing searches models
    QTest.keyClicks(focused, "typed after")
    assert "typed after" in composer.input.toPlainText()


def test_with_one_usable_model_the_popup_says_how_to_get_more(qtbot: QtBot) -> None:
    composer = make(qtbot)
    composer.set_models(CHOICES[:1] + CHOICES[3:], "m/a")
    composer.several.open_popup(composer.picker)
    assert composer.several.popup.too_few.isVisible()
