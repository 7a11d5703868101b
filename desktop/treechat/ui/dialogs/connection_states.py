"""How Settings → Connections words a connection's state: a short line for the list's
State column, the whole line (with the reason it is not usable) for its tooltip and the
status line."""

from __future__ import annotations

from ...services.models.connections import ConnectionStatus

STATE_TEXT = {
    "ready": "Ready",
    "detected": "Detected on this machine",
    "unreachable": "Unreachable",
    "unchecked": "Not checked yet",
    "needs-key": "Needs an API key",
}
# The kind as the list's narrow column says it (the editor's combo box keeps the long names).
SHORT_KINDS = {"openai-compatible": "OpenAI-compatible", "llamacpp": "llama.cpp",
               "hosted": "Hosted"}
BUNDLED_KIND = "Bundled with Treechat"
BUNDLED_STATE = "Ready · works offline"
BUNDLED_TIP = ("Shipped with Treechat: runs on this computer with no network, and starts with "
               "the first message sent to it. It cannot be edited, tested or removed.")


def state_line(status: ConnectionStatus) -> str:
    """The state and the models, with the reason a connection is not usable."""
    text = state_text(status)
    return f"{text} · {status.reason}" if status.reason else text


def state_text(status: ConnectionStatus) -> str:
    """What the list's State column says: short enough to be read whole; the reason goes
    to its tooltip and the status line."""
    if status.connection.kind == "bundled":
        return BUNDLED_STATE
    count = len(status.connection.offered())
    models = f"{count} model{'s' if count != 1 else ''}" if count else "no models listed"
    return f"{STATE_TEXT.get(status.state, status.state)} · {models}"
