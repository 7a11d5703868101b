"""What the model library speaks of: a download's progress, and pause or cancel asked for
from another thread and seen between chunks."""

from __future__ import annotations

import threading

import pytest

from treechat.providers.model_records import (
    ChecksumMismatch,
    DownloadControl,
    DownloadStopped,
    LibraryError,
    NotEnoughSpace,
    Progress,
    TooMuchData,
)


def test_progress_is_a_fraction_of_what_is_known() -> None:
    assert Progress(25, 100, 10.0, 7.5).fraction == 0.25
    assert Progress(5, 0, 0.0, None).fraction == 0.0


def test_every_library_failure_is_a_library_error() -> None:
    for kind in (NotEnoughSpace, ChecksumMismatch, TooMuchData, DownloadStopped):
        assert issubclass(kind, LibraryError)


def test_nothing_asked_lets_the_download_go_on() -> None:
    DownloadControl().check()


@pytest.mark.parametrize(("cancel", "words"), [(False, "download paused"),
                                               (True, "download cancelled")])
def test_a_pause_or_cancel_from_another_thread_stops_at_the_next_chunk(
        cancel: bool, words: str) -> None:
    control = DownloadControl()
    thread = threading.Thread(target=control.cancel if cancel else control.pause)
    thread.start()
    thread.join()
    with pytest.raises(DownloadStopped, match=words) as stopped:
        control.check()
    assert stopped.value.cancelled is cancel


def test_a_cancel_wins_over_a_pause() -> None:
    control = DownloadControl()
    control.pause()
    control.cancel()
    with pytest.raises(DownloadStopped) as stopped:
        control.check()
    assert stopped.value.cancelled
