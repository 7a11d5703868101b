"""What a screen reader sees, read over AT-SPI with pyatspi (the system's python3 runs this:
pyatspi comes from the distribution, not from PyPI).

    python3 atspi_reader.py tree PID         the application's accessible tree as JSON
    python3 atspi_reader.py listen PID SECS  prints "listening", then each announcement as a
                                             JSON line, until SECS have passed

Both need DBUS_SESSION_BUS_ADDRESS (and DISPLAY) of the session the application runs in."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import pyatspi
from gi.repository import GLib

MAX_NODES = 20_000
MAX_DEPTH = 60


def application(pid: int, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        desktop = pyatspi.Registry.getDesktop(0)
        for index in range(desktop.childCount):
            app = desktop.getChildAtIndex(index)
            try:
                if app is not None and app.get_process_id() == pid:
                    return app
            except Exception:  # an application that went away meanwhile
                continue
        if time.monotonic() > deadline:
            raise SystemExit(f"no accessible application with pid {pid}")
        time.sleep(0.2)


def describe(node: Any, depth: int, budget: list[int]) -> dict[str, Any]:
    budget[0] -= 1
    states = node.getState()
    out: dict[str, Any] = {
        "role": node.getRoleName(),
        "name": node.name or "",
        "description": node.description or "",
        "showing": states.contains(pyatspi.STATE_SHOWING),
        "focusable": states.contains(pyatspi.STATE_FOCUSABLE),
        "children": [],
    }
    try:
        text = node.queryText()
        out["text"] = text.getText(0, min(text.characterCount, 2000))
    except NotImplementedError:
        pass
    except Exception:
        pass
    if depth >= MAX_DEPTH:
        return out
    for index in range(min(node.childCount, 5000)):
        if budget[0] <= 0:
            break
        child = node.getChildAtIndex(index)
        if child is not None:
            out["children"].append(describe(child, depth + 1, budget))
    return out


def tree(pid: int) -> None:
    app = application(pid)
    print(json.dumps(describe(app, 0, [MAX_NODES]), ensure_ascii=False))


def listen(pid: int, seconds: float) -> None:
    application(pid)
    loop = GLib.MainLoop()

    def heard(event: Any) -> None:
        try:
            source = event.source
            if source is not None and source.get_process_id() != pid:
                return
            said = event.any_data if isinstance(event.any_data, str) else str(event.any_data)
            print(json.dumps({"type": event.type, "text": said,
                              "source": source.name if source is not None else ""},
                             ensure_ascii=False), flush=True)
        except Exception as exc:  # keep listening; say what was not understood
            print(json.dumps({"type": "error", "text": str(exc)}), flush=True)

    pyatspi.Registry.registerEventListener(heard, "object:announcement")
    GLib.timeout_add(int(seconds * 1000), loop.quit)
    GLib.idle_add(lambda: print("listening", flush=True) and False)
    loop.run()


if __name__ == "__main__":
    verb, pid_text = sys.argv[1], sys.argv[2]
    if verb == "tree":
        tree(int(pid_text))
    elif verb == "listen":
        listen(int(pid_text), float(sys.argv[3]))
    else:
        raise SystemExit(f"unknown verb {verb!r}")
