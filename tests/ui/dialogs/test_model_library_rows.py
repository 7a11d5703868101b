"""The Local models list's wording: the bundled model by the picker's name, shipped and
never removable; a downloaded model with the window it runs with; a download's progress."""

from __future__ import annotations

from treechat.services.models.model_library import BundledModel, InstalledModel, Progress
from treechat.ui.dialogs.model_library_rows import bundled_row, installed_row, progress_text


def test_the_bundled_and_a_downloaded_model_read_alike() -> None:
    row, texts = bundled_row(BundledModel("Bundled · SmolLM2 135M", "smol.gguf", 98_000_000,
                                          8192, running=True))
    assert row.bundled and row.on_disk and row.installed_name is None and row.running
    assert texts[0].startswith("Bundled · SmolLM2 135M  · in use\nshipped with Treechat")
    assert texts[1:3] == ["98 MB", "window 8,192"]
    model = InstalledModel(name="tiny", repo="acme/tiny", file="tiny.gguf", path="/m/tiny.gguf",
                           size=2_000_000_000, sha256=None, context_length=32768,
                           supports_tools=False, added_at=0.0)
    row, texts = installed_row(model, 16384, running=False)
    assert row.on_disk and not row.bundled and row.trained == 32768 and row.window == 16384
    assert texts[0] == "tiny\nacme/tiny" and texts[2] == "window 16,384"


def test_progress_says_how_much_how_fast_and_how_long() -> None:
    text = progress_text(Progress(done=50_000_000, total=100_000_000, bytes_per_second=2e6,
                                  seconds_left=125.0))
    assert text == "50 MB of 100 MB · 2.0 MB/s · 2 min 05 s left"
