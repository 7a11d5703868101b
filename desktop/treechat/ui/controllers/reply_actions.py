"""What a reply's right-click menu adds: its Thinking (shown apart from the answer),
Continue on a reply that was cut short (also Chat → Continue reply), and its cost."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QDialog, QLabel, QMenu, QPlainTextEdit, QVBoxLayout, QWidget

from ...core.reply import can_continue, reasoning_of
from ...services.turns.chat_service import ChatService
from ...services.turns.sessions import SessionView
from .ports import ModelPicker, OpenChat, TurnRunner


def continuable(view: SessionView | None) -> str | None:
    """The branch's last reply when it was cut short and can be continued."""
    if view is None:
        return None
    for node in reversed(view.path):
        if node.role == "assistant":
            return node.id if can_continue(node) else None
    return None


class ReplyActions(QObject):
    def __init__(
        self,
        parent: QObject,
        *,
        chat_service: ChatService,
        chat: OpenChat,
        models: ModelPicker,
        turns: TurnRunner,
        cost_line: Callable[[str], str | None],
        window: QWidget,
    ) -> None:
        super().__init__(parent)
        self._chat = chat_service
        self._open = chat
        self._models = models
        self._turns = turns
        self._cost_line = cost_line
        self._window = window
        self.dialog: QDialog | None = None  # the last Thinking shown

    def reply_menu(self, key: str, menu: QMenu) -> None:
        view = self._open.current_view
        if view is None or key not in view.graph:
            return
        node = view.graph.get(key)
        if node.role != "assistant":
            return
        extra: list[QAction] = []
        if reasoning_of(node):
            show = QAction("Show thinking…", menu)
            show.triggered.connect(lambda *_: self.show_thinking(key))
            extra.append(show)
        if can_continue(node):
            go = QAction("Continue this reply", menu)
            go.setEnabled(not self._chat.is_running(view.session.id))
            go.triggered.connect(lambda *_: self.continue_reply(key))
            extra.append(go)
        cost = self._cost_line(key)
        if cost is not None:
            info = QAction(cost, menu)
            info.setEnabled(False)
            extra.append(info)
        if extra:
            menu.addSeparator()
            for action in extra:
                menu.addAction(action)

    def show_thinking(self, node_id: str) -> QDialog | None:
        view = self._open.current_view
        if view is None or node_id not in view.graph:
            return None
        text = reasoning_of(view.graph.get(node_id))
        dialog = QDialog(self._window)
        dialog.setObjectName("ThinkingDialog")
        dialog.setWindowTitle("Thinking")
        dialog.resize(560, 420)
        body = QPlainTextEdit(text)
        body.setReadOnly(True)
        note = QLabel("What the model reasoned before answering; it is kept apart from the "
                      "answer and never sent back to it.")
        note.setWordWrap(True)
        layout = QVBoxLayout(dialog)
        layout.addWidget(note)
        layout.addWidget(body, 1)
        self.dialog = dialog
        dialog.open()
        return dialog

    def continue_last(self) -> None:
        target = continuable(self._open.current_view)
        if target is not None:
            self.continue_reply(target)

    def continue_reply(self, node_id: str) -> bool:
        view = self._open.current_view
        if view is None:
            return False
        sid = view.session.id
        return self._turns.run_external(
            lambda sink: self._chat.continue_reply(sid, node_id, model=self._models.selected(),
                                                   on_event=sink))
