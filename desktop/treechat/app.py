"""Composition root: one QApplication on one qasync loop, the window painted first, then the
store and services built once and handed to the window; litellm loads once a message is being
written."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import paths

if TYPE_CHECKING:
    from types import FrameType

    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication, QWidget

    from .core.clock import Clock
    from .core.model import Session
    from .services.bootstrap import OpenServices
    from .services.store_life.first_frame import FirstFrame
    from .services.turns.sessions import SessionView
    from .store.database import Store
    from .ui.common.theme import ThemeManager
    from .ui.controllers.conversation import ConversationController
    from .ui.shell.main_window import MainWindow

PAINT_WAIT_S = 5.0
_BACKGROUND: set[Any] = set()  # the app's own background tasks, held until they finish


def parse_args(argv: Sequence[str] | None) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(prog="treechat", add_help=True)
    parser.add_argument("--data-dir", help="where the conversation store lives")
    parser.add_argument("--session", help="open this session id")
    return parser.parse_known_args(list(argv) if argv is not None else sys.argv[1:])


def main(argv: Sequence[str] | None = None) -> int:
    args, qt_args = parse_args(argv)
    return run(args, qt_args)


def ui_prefs(data_dir: Path) -> QSettings:
    """Window geometry and theme live beside the store, so `--data-dir` keeps them apart."""
    from PySide6.QtCore import QSettings

    return QSettings(str(data_dir / "window.ini"), QSettings.Format.IniFormat)


def open_shell(data_dir: Path) -> tuple[MainWindow, QSettings]:
    """The window as it first paints: its outline, in the theme's colours."""
    from .ui.shell.main_window import MainWindow

    prefs = ui_prefs(data_dir)
    return MainWindow(prefs), prefs


def finish_window(app: QApplication, window: MainWindow, prefs: QSettings) -> ThemeManager:
    """Style the application and build the window's widgets in place of its outline."""
    from .ui.common.theme import Colors, ThemeManager
    from .ui.shell.outline import LAST_SCHEME

    theme = ThemeManager(app, str(prefs.value("theme", "system")))
    window.build()

    def remember(colors: Colors) -> None:  # for the next start's outline
        prefs.setValue(LAST_SCHEME, colors.dark)

    remember(theme.colors)
    theme.changed.connect(remember)
    return theme


def create_window(
    app: QApplication, data_dir: Path
) -> tuple[MainWindow, QSettings, ThemeManager]:
    """The window with its widgets built, not yet shown."""
    window, prefs = open_shell(data_dir)
    theme = finish_window(app, window, prefs)
    return window, prefs, theme


def connect_services(
    window: MainWindow, services: OpenServices, prefs: QSettings | None, theme: ThemeManager | None
) -> ConversationController:
    """Hand the services to the controllers that drive the window's widgets."""
    from .services.search import SearchService
    from .ui.controllers.command_replies import connect_command_replies
    from .ui.controllers.conversation import ConversationController
    from .ui.controllers.store_health import connect_store_health
    from .ui.controllers.window_actions import connect_window_actions

    controller = ConversationController(
        services, window.parts(services.clock), prefs=prefs, theme=theme,
        clock=services.clock, search=SearchService(services.store),
    )
    connect_window_actions(window, controller)
    connect_store_health(window, controller)  # a damaged store's banner, from the start
    connect_command_replies(controller)  # replies `treechat send` could not write meanwhile
    return controller


def _wait_for_first_paint(app: QApplication, window: MainWindow) -> None:
    """Let Qt expose and paint the window before anything heavy is imported."""
    import time

    from PySide6.QtCore import QEventLoop

    deadline = time.monotonic() + PAINT_WAIT_S
    while not window.painted and time.monotonic() < deadline:
        app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 50)


# What the built window and its first frame import. Loaded on a worker thread while the
# painted outline goes on answering: imported on the GUI thread, they held it still for as
# long (about 100 ms, seconds on a loaded machine). None of them makes a Qt object when
# imported.
_FIRST_FRAME = (
    "ui.common.theme", "ui.common.elided_label", "ui.composer.composer", "ui.sessions.list",
    "ui.shell.empty_state", "ui.richtext.highlighting", "services.store_life.first_frame",
)


def _import_while_answering(app: QApplication, names: Sequence[str]) -> None:
    """Import `names` on a worker thread, handling the window's events meanwhile. A module
    that fails to import is left for the GUI thread's own import, which raises its error."""
    import logging
    import threading

    from PySide6.QtCore import QEventLoop

    done = threading.Event()

    def load() -> None:
        try:
            _preload(*names)
        except Exception:  # raised again where the GUI thread imports it
            logging.getLogger(__name__).debug("a first-frame import failed", exc_info=True)
        finally:
            done.set()

    threading.Thread(target=load, name="first-frame-imports", daemon=True).start()
    while not done.wait(0.002):
        app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 5)


def run(
    args: argparse.Namespace,
    qt_args: Sequence[str] = (),
    *,
    on_first_paint: Callable[[MainWindow], None] | None = None,
) -> int:
    """Open the window for `args.data_dir` (or hand over to the window already showing it).
    `on_first_paint` is called once the window has painted, before its widgets are built and
    the store is opened. The log file is set up after the paint as well."""
    from PySide6.QtWidgets import QApplication

    from .ui.shell.import_hook import tolerate_lazy_modules

    tolerate_lazy_modules()  # before the window's modules are imported: they are not read
    from .ui.shell.single_instance import SingleInstance, server_name

    data_dir = paths.data_dir(args.data_dir)
    try:
        paths.require_folder(data_dir)
    except paths.NotAFolderError as exc:
        print(f"treechat: {exc}", file=sys.stderr)
        return 2
    data_dir.mkdir(parents=True, exist_ok=True)
    existing = QApplication.instance()
    app = existing if isinstance(existing, QApplication) else QApplication(
        [sys.argv[0], *qt_args]
    )
    app.setApplicationName(paths.APP_NAME)
    app.setOrganizationName(paths.APP_NAME)
    app.setDesktopFileName("treechat")
    app.setQuitOnLastWindowClosed(False)

    instance = SingleInstance(server_name(data_dir))
    if instance.hand_over():
        return 0

    window, prefs = open_shell(data_dir)
    close_requested: list[bool] = []
    window.closeRequested.connect(lambda: close_requested.append(True))
    _stop_on_signals(window)
    window.show()
    _wait_for_first_paint(app, window)
    if on_first_paint is not None:
        on_first_paint(window)
    # (the chat view only for a window that reopens a chat: a new one shows the empty state)
    wanted = _wanted_session(args, prefs)
    reopens = ("ui.chat.view",) if wanted else ()
    _import_while_answering(app, (*_FIRST_FRAME, *reopens))
    from .ui.richtext.highlighting import defer_until_warm

    defer_until_warm()  # code is coloured once the lexers have loaded off this thread
    theme = finish_window(app, window, prefs)
    first = _show_first_frame(window, data_dir, wanted)
    if first is not None:  # that frame on screen now, before the log and the loop are set up
        app.processEvents()
    # Listening waits for the paint too; a launch that started in between is told now.
    if instance.hand_over():
        window.close_now()
        return 0
    instance.listen()
    instance.activated.connect(window.bring_to_front)
    from .logs import configure_logging

    configure_logging(data_dir)

    from .ui.shell.event_loop import close_event_loop, create_event_loop

    loop = create_event_loop(app)
    try:
        return int(loop.run_until_complete(
            _serve(app, window, prefs, theme, data_dir, args, close_requested, first)
        ))
    finally:
        instance.close()
        close_event_loop(loop)


async def _serve(
    app: QApplication,
    window: MainWindow,
    prefs: QSettings,
    theme: ThemeManager,
    data_dir: Path,
    args: argparse.Namespace,
    close_requested: list[bool],
    first: FirstFrame | None = None,
) -> int:
    import asyncio

    from PySide6.QtCore import QTimer

    from .core.clock import SYSTEM_CLOCK

    clock = SYSTEM_CLOCK  # the one clock the window and the services read

    closed = asyncio.Event()
    if close_requested:
        closed.set()
    window.closeRequested.connect(closed.set)
    app.aboutToQuit.connect(closed.set)
    # Python runs signal handlers only when it gets control; give it a moment now and then.
    heartbeat = QTimer(window)
    heartbeat.timeout.connect(lambda: None)
    heartbeat.start(400)

    _warm_up_highlighting(window)
    code = 0
    services: OpenServices | None = None
    controller: ConversationController | None = None
    loop = asyncio.get_running_loop()
    # The store and its list first, while the services (the tokenizer above all) take their
    # time to load. Both import their modules (DuckDB among them) on worker threads: an
    # import on this thread would hold the window still.
    store, listed, error = await loop.run_in_executor(None, _open_store, data_dir, clock)
    if store is None:
        if first is not None:  # what the kept frame showed is not there to be opened
            window.sessions.set_sessions((), clock.now())
            window.show_view(None)
        window.show_store_error(error)
        code = 2
    else:
        if not closed.is_set():
            if first is None or listed != first.sessions:
                window.sessions.set_sessions(listed, clock.now())
            # the chat it reopens, whole, before the services are built (the tokenizer above
            # all takes seconds); the kept frame showed only its end
            wanted = _wanted_session(args, prefs)
            if any(s.id == wanted for s in listed):
                view = await loop.run_in_executor(None, _read_view, store, wanted)
                if view is not None and not closed.is_set():
                    window.show_first_view(view)
        services = await loop.run_in_executor(None, _build_services, data_dir, store, clock)
    if services is not None:
        controller = connect_services(window, services, prefs, theme)
        from .store.database import StoreDamagedError

        try:
            await controller.start(args.session)
        except StoreDamagedError:
            # What could be read is shown; the damaged-store banner says why the rest is not.
            from .ui.controllers.store_health import StoreHealth

            health = StoreHealth.of(controller)
            if health is not None:
                health.check()
        # The window has painted and is filled: look for Ollama, LM Studio and llama.cpp on
        # this machine's usual ports in the background, again every 30 s; the picker hears
        # of what is found through the connections' listener.
        if services.connections is not None:
            services.connections.start_detection(interval=30.0)
        if controller.backups is not None:  # at once when due, then soon after a day's change
            controller.backups.start()
        # the search index catches up with what was written since it was last built; its
        # slices run on the store's thread, after the first paint
        if services.search is not None:
            controller.spawn(services.search.catch_up(), name="search-catch-up")
        _warm_up_when_typing(window)
    await closed.wait()
    heartbeat.stop()
    await _shutdown(controller, services)
    window.close_now()
    return code


def _warm_up_highlighting(window: MainWindow) -> None:
    """Build the code lexers off the GUI thread, then colour the code shown plain meanwhile."""
    import asyncio

    from .ui.richtext.highlighting import warm_up_highlighting

    task = asyncio.ensure_future(asyncio.to_thread(warm_up_highlighting))
    _BACKGROUND.add(task)  # kept until done

    def done(finished: asyncio.Future[None]) -> None:
        _BACKGROUND.discard(finished)
        if not finished.cancelled() and finished.exception() is None and window.chat:
            window.chat.show_highlighting()

    task.add_done_callback(done)


def _wanted_session(args: argparse.Namespace, prefs: QSettings) -> str:
    """The chat the window opens on: the one asked for, else the one it closed on."""
    from .ui.shell.outline import LAST_SESSION

    return str(args.session or prefs.value(LAST_SESSION, "") or "")


def _show_first_frame(window: MainWindow, data_dir: Path, wanted: str) -> FirstFrame | None:
    """The chat list and the end of the chat it reopens as the window closed on them, if the
    store is unchanged since: the first frame of the built window carries them, while the
    store itself opens (DuckDB and its reads take longer than that frame may)."""
    from .core.clock import SYSTEM_CLOCK
    from .services.store_life.first_frame import load, store_path_in

    first = load(store_path_in(data_dir))
    if first is None:
        return None
    window.sessions.set_sessions(first.sessions, SYSTEM_CLOCK.now())
    if first.view is not None and first.view.session.id == wanted:
        window.show_first_view(first.view, first.messages)
    return first


def _warm_up_when_typing(window: MainWindow) -> None:
    """litellm (seconds and ~200 MB to import) loads once a message is being written, in the
    background, not for a window that only shows chats: the first key typed starts it."""
    from .providers import llm

    field = window.composer.input

    def typed() -> None:
        field.textChanged.disconnect(typed)
        llm.start_warmup()

    if field.toPlainText():
        llm.start_warmup()
    else:
        field.textChanged.connect(typed)


def _open_store(data_dir: Path, clock: Clock) -> tuple[Store | None, tuple[Session, ...], str]:
    """The store (a crash's drafts recovered) and the sessions it lists, or why it could not
    be opened."""
    from .services.store_life.recovery import open_and_recover
    from .store.database import StoreError, default_store_path

    try:
        store = open_and_recover(default_store_path(data_dir), clock=clock)
    except StoreError as exc:
        return None, (), str(exc)
    try:
        listed = store.call(lambda r: r.list_sessions())
    except StoreError:  # a damaged store whose list cannot be read: it opens, read-only, empty
        listed = ()
    return store, listed, ""


def _read_view(store: Store, session_id: str) -> SessionView | None:
    from .core.model import GraphError
    from .services.turns.sessions import load_tail_view
    from .store.database import StoreError

    try:  # a long chat's end only: the controller reads the whole when it starts
        view = store.call(lambda r: load_tail_view(r, session_id))
    except (StoreError, GraphError):  # the controller says why when it opens it
        return None
    _preload("ui.chat.view")
    return view


# Modules the GUI thread needs next, imported on the worker thread that waits anyway: their
# import (hundreds of ms on a loaded machine) would hold the window still. None of them makes
# a Qt object when imported.
_NEXT_ON_THE_GUI_THREAD = (
    "ui.controllers.conversation", "ui.controllers.window_actions",
    "ui.controllers.store_health", "ui.controllers.command_replies", "services.search",
)


def _preload(*names: str) -> None:
    import importlib

    for name in names:
        importlib.import_module(f"{__package__}.{name}")


def _build_services(data_dir: Path, store: Store, clock: Clock) -> OpenServices:
    """The services on the open `store` (closed again if they cannot be built)."""
    from .services.bootstrap import build_services

    try:
        services = build_services(data_dir, store=store, clock=clock)
    except BaseException:
        store.close()
        raise
    _preload(*_NEXT_ON_THE_GUI_THREAD)
    return services


async def _shutdown(
    controller: ConversationController | None, services: OpenServices | None
) -> None:
    """Stop turns (keeping what streamed), save unsent text, stop the local model, close the
    store, in that order; then keep the next start's first frame beside it."""
    session_id = controller.current_session_id if controller is not None else None
    if controller is not None:
        await controller.close()
    if services is not None:
        captured = None
        try:
            await services.close()
            captured = _capture_first_frame(services.store, session_id)
        finally:
            services.close_store()
        if captured is not None:
            from .services.store_life.first_frame import save

            save(captured, services.store.path)


def _capture_first_frame(store: Store, session_id: str | None) -> dict[str, Any] | None:
    """What the next start shows first, read from the store before it closes (None from a
    damaged store, or one that cannot be read now: that start reads the store instead).
    It waits for the read rather than yield to the loop: a task woken meanwhile would find
    the store closing under it."""
    import logging

    from .services.store_life.first_frame import capture

    if store.damage is not None or store.read_only:
        return None
    try:
        return capture(store, session_id)
    except Exception:
        logging.getLogger(__name__).warning("the first frame was not kept", exc_info=True)
        return None


def _stop_on_signals(window: QWidget) -> None:
    import contextlib
    import signal

    from PySide6.QtCore import QTimer

    def handler(_signum: int, _frame: FrameType | None) -> None:
        QTimer.singleShot(0, window.close)

    for sig in (signal.SIGINT, signal.SIGTERM):
        # not possible off the main thread or on some platforms: then Ctrl+C just kills
        with contextlib.suppress(ValueError, OSError):
            signal.signal(sig, handler)
