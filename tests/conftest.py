"""Fixtures shared by every test directory."""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

# No test, nor any process a test starts, probes the machine's own Ollama, LM Studio or
# llama.cpp server: a test that wants one starts it on a free port and names it.
os.environ["TREECHAT_LOCAL_SERVERS"] = "none"
# Nor the person's keychain or desktop session: with no session bus a test sees what CI sees
# (no Secret Service); a keyring test starts its own bus with dbus-run-session.
os.environ.pop("DBUS_SESSION_BUS_ADDRESS", None)

if TYPE_CHECKING:
    from tests.support.loopback_server import LoopbackProvider


@pytest.fixture(autouse=True, scope="session")
def collect_cycles_on_the_main_thread() -> Iterator[None]:
    """As in the window (`ui.shell.collector`): the cycle collector never runs on a worker
    thread, where freeing a Qt object left by an earlier test crashes Qt."""
    was = gc.isenabled()
    gc.disable()
    yield
    if was:
        gc.enable()


@pytest.fixture(autouse=True)
def collect_after_each_test() -> Iterator[None]:
    yield
    gc.collect()


@pytest.fixture(autouse=True)
def forget_remembered_secrets() -> Iterator[None]:
    """Keys a test's process read are redacted from every log line after it (a process-wide
    set); a test's keys must not redact the words of the next test a worker runs."""
    from treechat.providers import keys

    with keys._secrets_lock:
        before = set(keys._secrets)
    yield
    with keys._secrets_lock:
        keys._secrets.clear()
        keys._secrets.update(before)


@pytest.fixture(scope="session")
def qapp_args() -> list[str]:
    """Under the offscreen platform the screen is a 1366×768 laptop's, the smallest the window
    is made to fit (the plugin's own is 800×800); on a real display, the display's."""
    if os.environ.get("QT_QPA_PLATFORM") == "offscreen":
        config = Path(__file__).parent / "data" / "offscreen-laptop.json"
        return [sys.argv[0], "-platform", f"offscreen:configfile={config}"]
    return [sys.argv[0]]


@pytest.fixture
def loopback() -> Iterator[LoopbackProvider]:
    """A provider on 127.0.0.1 (random port) speaking the OpenAI and Anthropic wire formats."""
    from tests.support.loopback_server import LoopbackProvider

    server = LoopbackProvider()
    try:
        yield server
    finally:
        server.stop()


@pytest.hookimpl(trylast=True)  # after -m / -k have deselected what will not run
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The minutes the frozen bundle takes to build overlap the rest of the run.

    In one process the bundle starts building on a thread now and the tests that need it
    run last. Across workers (pytest-xdist with `--dist loadfile`, as `make test` runs) they
    run first, on the one worker their file goes to, which builds while the other workers
    take the rest of the suite."""
    needs_bundle = [item for item in items if "bundle" in getattr(item, "fixturenames", ())]
    if not needs_bundle:
        return
    others = [item for item in items if "bundle" not in getattr(item, "fixturenames", ())]
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items[:] = needs_bundle + others
        return
    from tests.packaging.build import start_background_build

    items[:] = others + needs_bundle
    start_background_build()
