"""What the import dialog says: every format it reads named in its intro, sizes and counts
as people read them, and a finished import's headline for each way it can end."""

from __future__ import annotations

from treechat.core.imports import FORMAT_NAMES
from treechat.services.transfer.importing import ImportSummary
from treechat.ui.dialogs.import_wording import INTRO, count_of, size_text, summary_text


def test_the_intro_names_every_format_with_treechat_last() -> None:
    assert "ChatGPT" in INTRO and "Google AI Studio (Gemini)" in INTRO
    assert " or Treechat JSON, every branch kept" in INTRO
    assert len(FORMAT_NAMES) >= 3


def test_counts_and_sizes_read_as_people_say_them() -> None:
    assert count_of(1, "chat") == "1 chat"
    assert count_of(1200, "chat") == "1,200 chats"
    assert count_of(2, "branch", "branches") == "2 branches"
    assert size_text(1) == "1 byte"
    assert size_text(512) == "512 bytes"
    assert size_text(3_500_000) == "3.3 MB"
    assert size_text(5 * 1024**4) == "5,120.0 GB"


def test_each_way_an_import_ends_has_its_own_headline() -> None:
    done = ImportSummary("chatgpt", 2, 9, 0, session_ids=("a", "b"), conversations=3)
    assert summary_text(done) == ("Imported 2 chats",
                                  "3 conversations read from the ChatGPT export.")
    again = ImportSummary("chatgpt", 0, 0, 0, conversations=3)
    assert summary_text(again) == ("Nothing new to import",
                                   "All 3 conversations in this export were imported before.")
    stopped = ImportSummary("chatgpt", 1, 4, 0, session_ids=("a",), conversations=3,
                            cancelled=True)
    headline, detail = summary_text(stopped)
    assert headline == "Import cancelled"
    assert detail.startswith("1 of 3 conversations imported completely")
