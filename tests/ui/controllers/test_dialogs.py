"""The window's dialogs controller on the real services: Help names the folder the store lives
in, the import dialog is one dialog reused, and saved settings reach the services at once and
the store for the next start (through the preferences service, never the store itself)."""

from __future__ import annotations

from dataclasses import replace

from treechat.services.preferences import SETTINGS_DEFAULT_MODEL

from ..conftest import BIG_MODEL, Aio, Desk


def test_help_names_the_stores_folder_and_its_logs(desk: Desk) -> None:
    info = desk.controller.dialogs.app_info()
    assert info.data_dir == desk.data_dir
    assert info.log_dir == desk.data_dir / "logs"


def test_the_import_dialog_is_made_once_and_shown_again(desk: Desk) -> None:
    dialogs = desk.controller.dialogs
    assert dialogs.import_dialog is None  # made on first use
    dialogs.open_import_dialog()
    first = dialogs.import_dialog
    assert first is not None and first.isVisible()
    first.hide()
    dialogs.open_import_dialog()
    assert dialogs.import_dialog is first and first.isVisible()
    first.close()


def test_a_new_default_model_applies_now_and_is_kept_for_the_next_start(
    desk: Desk, aio: Aio
) -> None:
    dialogs = desk.controller.dialogs
    models = desk.controller.models
    models.next_model = "someone/else"  # picked before any chat existed
    chosen = replace(dialogs.current_settings(), default_model=BIG_MODEL)
    dialogs.apply_settings(chosen)
    assert desk.services.models.default_model == BIG_MODEL
    assert models.next_model is None  # a new chat starts on the new default
    aio.run(desk.controller.tasks.idle())
    kept = desk.services.store.call(lambda r: r.get_setting(SETTINGS_DEFAULT_MODEL))
    assert kept == BIG_MODEL
