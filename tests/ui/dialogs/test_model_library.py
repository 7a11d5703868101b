"""The Local models dialog over the real library service and a loopback hub: search,
download with progress, pause, resume, cancel, remove."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtWidgets import QPushButton
from tests.support.hub_server import Hub, HubServer, sha256_of
from tests.ui.conftest import Aio, Desk

from treechat.providers.local.bundled_model import LocalModel, find_gguf
from treechat.services.models.model_library import (
    ModelLibrary,
    ModelLibraryService,
    size_text,
)
from treechat.ui.common.tasks import BackgroundTasks
from treechat.ui.dialogs.model_library import ModelLibraryDialog

REPO, FILE = "acme/Tiny-Chat-GGUF", "tiny-chat-q4.gguf"


@pytest.fixture
def hub() -> Iterator[HubServer]:
    state = Hub(rate=25_000_000)
    state.add(REPO, FILE, find_gguf(), sha256_of(find_gguf()))
    with HubServer(state) as server:
        yield server


def dialog_for(qtbot: object, tmp_path: Path, hub: HubServer) -> tuple[ModelLibraryDialog,
                                                                          BackgroundTasks]:
    tasks = BackgroundTasks()
    service = ModelLibraryService(ModelLibrary(tmp_path / "models", endpoint=hub.url))
    dialog = ModelLibraryDialog(service, tasks, ollama_url=None)
    qtbot.addWidget(dialog)  # type: ignore[attr-defined]
    dialog.show()
    return dialog, tasks


def test_search_download_pause_resume_and_remove(qtbot: object, aio: Aio, tmp_path: Path,
                                                 hub: HubServer) -> None:
    dialog, tasks = dialog_for(qtbot, tmp_path, hub)
    changes: list[None] = []
    dialog.modelsChanged.connect(lambda: changes.append(None))

    async def scenario() -> None:
        await dialog.refresh()
        titles = [r.title for r in dialog.rows()]
        assert "Qwen2.5 1.5B Instruct" in titles  # the recommended list is there offline

        dialog.search_field.setText("tiny")
        dialog.search()
        await aio.until(lambda: any(r.repo == REPO for r in dialog.rows()), what="results")
        assert "1 GGUF file" in dialog.status.text()

        dialog.select(REPO, FILE)
        assert dialog.download_button.isEnabled() and not dialog.use_button.isEnabled()
        dialog.download()
        await aio.until(lambda: dialog.progress.value() > 0, what="progress")
        assert dialog.progress.isVisible()
        assert "MB/s" in dialog.status.text()
        assert not dialog.download_button.isEnabled()  # one download at a time
        dialog.pause()
        await aio.until(lambda: "Paused" in dialog.status.text(), what="paused")
        await tasks.idle()

        dialog.select(REPO, FILE)
        assert dialog.download_button.text() == "Resume"
        dialog.download()
        await aio.until(lambda: "is ready" in dialog.status.text(), timeout=60, what="done")
        await tasks.idle()
        assert changes, "the picker is told a model arrived"

        dialog.select(REPO, FILE)
        assert dialog.use_button.isEnabled() and dialog.remove_button.isEnabled()
        dialog.remove()
        assert dialog.remove_button.text() == "Remove — click again"  # asks once more
        dialog.remove()
        await aio.until(lambda: "freed" in dialog.status.text(), what="removed")
        await tasks.idle()
        assert not any(r.installed_name for r in dialog.rows())

    aio.run(scenario(), timeout=120)


def test_cancel_removes_what_was_downloaded(qtbot: object, aio: Aio, tmp_path: Path,
                                            hub: HubServer) -> None:
    dialog, tasks = dialog_for(qtbot, tmp_path, hub)

    async def scenario() -> None:
        await dialog.refresh()
        dialog.search_field.setText("tiny")
        dialog.search()
        await aio.until(lambda: any(r.repo == REPO for r in dialog.rows()), what="results")
        dialog.select(REPO, FILE)
        dialog.download()
        await aio.until(lambda: dialog.progress.value() > 0, what="progress")
        dialog.cancel()
        await aio.until(lambda: "cancelled" in dialog.status.text(), what="cancelled")
        await tasks.idle()
        assert not list((tmp_path / "models").rglob("*.part"))

    aio.run(scenario(), timeout=120)


def test_an_unreachable_hub_says_so(qtbot: object, aio: Aio, tmp_path: Path) -> None:
    tasks = BackgroundTasks()
    service = ModelLibraryService(ModelLibrary(tmp_path / "m", endpoint="http://127.0.0.1:9"))
    dialog = ModelLibraryDialog(service, tasks)
    qtbot.addWidget(dialog)  # type: ignore[attr-defined]

    async def scenario() -> None:
        dialog.search_field.setText("qwen")
        dialog.search()
        await aio.until(lambda: "could not search" in dialog.status.text(), what="error")
        assert dialog.search_button.isEnabled()

    aio.run(scenario())


def test_the_window_opens_the_library_and_a_downloaded_model_joins_the_picker(
        desk: Desk) -> None:
    from treechat.providers.model_library import ModelLibrary as Library

    model = Library(desk.data_dir / "models").add_file(find_gguf())

    async def scenario() -> None:
        desk.window.local_models_action.trigger()
        dialog = desk.controller.dialogs.model_library_dialog
        assert dialog is not None and dialog.isVisible()
        await desk.aio.until(lambda: any(r.installed_name == model.name for r in dialog.rows()),
                             what="the model on disk is listed")
        dialog.modelsChanged.emit()  # what a finished download or a removal says
        address = f"library/{model.name}"
        await desk.aio.until(
            lambda: any(c.id == address for c in desk.controller.models.choices), what="picker")
        choice = next(c for c in desk.controller.models.choices if c.id == address)
        assert choice.label == f"Downloaded · {model.name}"
        assert choice.window == 8192

    desk.aio.run(scenario())


def test_an_unreachable_hub_is_said_at_once_and_what_is_on_disk_is_listed(
    qtbot: object, aio: Aio, tmp_path: Path
) -> None:
    tasks = BackgroundTasks()
    service = ModelLibraryService(ModelLibrary(tmp_path / "m", endpoint="http://127.0.0.1:9"))
    dialog = ModelLibraryDialog(service, tasks)
    qtbot.addWidget(dialog)  # type: ignore[attr-defined]

    async def scenario() -> None:
        await service.add_file(find_gguf())
        dialog.show()
        await dialog.refresh()  # opening it: no search typed
        await aio.until(lambda: "not reachable" in dialog.status.text(), what="the hub's state")
        text = dialog.status.text()
        assert "nothing answers at that address" in text and "Errno" not in text
        assert "on this computer" in text
        assert any(r.installed_name for r in dialog.rows())  # the model on disk is listed
        # Enter never cancels a download or removes a model because focus landed there
        assert not any(b.autoDefault() for b in dialog.findChildren(QPushButton)
                       if b is not dialog.search_button)

        dialog.search_field.setText("qwen")
        dialog.search()
        await aio.until(lambda: "could not search" in dialog.status.text(), what="error")
        assert "Errno" not in dialog.status.text()

    aio.run(scenario())


def test_the_bundled_model_is_listed_on_this_computer_and_cannot_be_removed(
        qtbot: object, aio: Aio, tmp_path: Path) -> None:
    tasks = BackgroundTasks()
    service = ModelLibraryService(ModelLibrary(tmp_path / "m", endpoint="http://127.0.0.1:9"))
    dialog = ModelLibraryDialog(service, tasks,
                                bundled=lambda: service.bundled(LocalModel(), 8192))
    qtbot.addWidget(dialog)  # type: ignore[attr-defined]
    used: list[str] = []
    dialog.useRequested.connect(used.append)

    async def scenario() -> None:
        await service.add_file(find_gguf())
        dialog.show()
        await dialog.refresh()
        section = next(dialog.tree.topLevelItem(i) for i in range(dialog.tree.topLevelItemCount())
                       if dialog.tree.topLevelItem(i).text(0) == "On this computer")
        assert section is not None and not section.isHidden()
        texts = [section.child(i).text(0) for i in range(section.childCount())]
        assert texts[0].startswith("Bundled · SmolLM2 135M") and "shipped with Treechat" in texts[0]
        bundled = next(r for r in dialog.rows() if r.bundled)
        assert bundled.window == 8192 and not bundled.running
        first = section.child(0)
        assert first.text(1) == size_text(find_gguf().stat().st_size)
        assert first.text(2) == "window 8,192"
        assert len(texts) == 2  # the downloaded model beside it

        dialog.select(bundled.repo, bundled.file)
        assert dialog.use_button.isEnabled()
        assert not dialog.remove_button.isEnabled()
        assert "cannot be removed" in dialog.remove_button.toolTip()
        assert not dialog.download_button.isEnabled()
        dialog.use()
        assert used == ["local/smollm2-135m-instruct"]

    aio.run(scenario())


def test_no_window_box_until_a_downloaded_model_is_selected(
        qtbot: object, aio: Aio, tmp_path: Path) -> None:
    tasks = BackgroundTasks()
    service = ModelLibraryService(ModelLibrary(tmp_path / "m", endpoint="http://127.0.0.1:9"))
    dialog = ModelLibraryDialog(service, tasks)
    qtbot.addWidget(dialog)  # type: ignore[attr-defined]

    async def scenario() -> None:
        model = await service.add_file(find_gguf())
        dialog.show()
        await dialog.refresh()
        assert dialog.current_row() is None
        assert not dialog.window_spin.isVisible() and not dialog.window_label.isVisible()
        assert dialog.hint.isVisible() and "Select a model" in dialog.hint.text()

        dialog.select(model.repo, model.file)
        assert dialog.window_spin.isVisible() and dialog.window_spin.isEnabled()
        assert not dialog.hint.isVisible()
        recommended = next(r for r in dialog.rows() if r.installed_name is None)
        dialog.select(recommended.repo, recommended.file)  # not downloaded: no window to set
        assert not dialog.window_spin.isVisible()

    aio.run(scenario())


def test_the_window_lists_the_bundled_model_in_the_library(desk: Desk) -> None:
    desk.services.models.bundled = LocalModel()  # this build ships it (never started here)

    async def scenario() -> None:
        desk.window.local_models_action.trigger()
        dialog = desk.controller.dialogs.model_library_dialog
        assert dialog is not None
        await desk.aio.until(lambda: any(r.bundled for r in dialog.rows()),
                             what="the bundled model is listed")
        row = next(r for r in dialog.rows() if r.bundled)
        assert row.title == desk.controller.models.label_for("local/smollm2-135m-instruct")

    desk.aio.run(scenario())
