"""Token counts offline: the right encoding per model, litellm's bundled tables found without
the network, special tokens counted as text, and a clear error when the tables are missing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from treechat.providers import tokenizer
from treechat.providers.tokenizer import (
    ENCODING_FILES,
    CachedTiktokenCounter,
    TiktokenCounter,
    configure_offline_cache,
    counter_for,
    encoding_for_model,
)


@pytest.mark.parametrize(
    ("model", "encoding"),
    [
        ("openai/gpt-4o", "o200k_base"),
        ("gpt-4.1-mini", "o200k_base"),
        ("openrouter/openai/gpt-4o-mini", "o200k_base"),
        ("openai/gpt-4", "cl100k_base"),
        ("gpt-4-turbo", "cl100k_base"),
        ("gpt-3.5-turbo", "cl100k_base"),
        ("anthropic/claude-sonnet-4-5", "o200k_base"),
        ("ollama_chat/llama3.2", "o200k_base"),
    ],
)
def test_each_model_is_counted_with_its_encoding(model: str, encoding: str) -> None:
    assert encoding_for_model(model) == encoding
    assert counter_for(model).encoding_name == encoding


def test_counts_are_tiktokens_and_special_tokens_are_plain_text() -> None:
    counter = TiktokenCounter("o200k_base")
    assert counter.count("") == 0
    assert counter.count("hello world") == 2
    assert counter.encode("hello world") == counter.encode("hello") + counter.encode(" world")
    assert counter.count("<|endoftext|>") > 1  # text, not the one special token
    messages = [{"role": "user", "content": "hello world"}]
    assert counter.count_messages(messages) > counter.count("hello world")


def test_one_cached_counter_per_encoding_agrees_with_the_raw_one() -> None:
    assert counter_for("openai/gpt-4o") is counter_for("anthropic/claude-sonnet-4-5")
    cached = counter_for("openai/gpt-4")
    assert isinstance(cached, CachedTiktokenCounter)
    text = "The quick brown fox " * 20
    assert cached.count(text) == TiktokenCounter("cl100k_base").count(text) == cached.count(text)
    with pytest.raises(ValueError, match="unsupported encoding"):
        TiktokenCounter("p50k_base")


def test_the_bundled_tables_are_used_unless_the_users_cache_holds_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundled = tokenizer.bundled_encodings_dir()
    assert bundled is not None and (bundled / ENCODING_FILES["o200k_base"]).is_file()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))  # empty: not used
    assert configure_offline_cache("o200k_base") == bundled
    (tmp_path / ENCODING_FILES["cl100k_base"]).write_bytes(b"")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    assert configure_offline_cache("cl100k_base") == tmp_path


NO_LITELLM = """
import importlib.abc, sys

class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "litellm":
            raise ModuleNotFoundError(name)
        return None

sys.meta_path.insert(0, Block())
from treechat.providers.tokenizer import TokenizerUnavailableError, counter_for
try:
    counter_for("openai/gpt-4o")
except TokenizerUnavailableError as exc:
    print(exc)
"""


def test_missing_tables_are_a_clear_error(tmp_path: Path) -> None:
    # An install without litellm's tables and an empty cache: no download, a message instead.
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", NO_LITELLM], capture_output=True, text=True,
                         env=env, check=True, timeout=120)
    assert "o200k_base token tables were not found offline" in out.stdout
    assert "Reinstall Treechat" in out.stdout
    assert list(tmp_path.iterdir()) == []


DEFERRED_CHILD = """
import copy, json, pickle
import tiktoken
from treechat.providers.tokenizer import DeferredEncoding, configure_offline_cache
deferred = DeferredEncoding("cl100k_base")
probed = [copy.copy(deferred) is not None, repr(deferred)]
before = deferred.loaded
text = "The deferred table counts as the real one does <|endoftext|>"
got = deferred.encode(text, disallowed_special=())
configure_offline_cache("cl100k_base")
print(json.dumps({"before": before, "probed": probed, "after": deferred.loaded,
                  "name": deferred.name, "same": got == tiktoken.get_encoding(
                      "cl100k_base").encode(text, disallowed_special=())}))
"""


def test_a_deferred_encoding_loads_its_tables_only_when_something_counts() -> None:
    done = subprocess.run([sys.executable, "-c", DEFERRED_CHILD], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    import json

    report = json.loads(done.stdout.strip().splitlines()[-1])
    # copying or printing it loads nothing; the first encode loads the real tables
    assert report["before"] is False
    assert report["probed"] == [True, "<DeferredEncoding 'cl100k_base'>"]
    assert report["after"] is True and report["name"] == "cl100k_base"
    assert report["same"] is True
    with pytest.raises(ValueError, match="unsupported encoding"):
        tokenizer.DeferredEncoding("p50k_base")


RELEASE_CHILD = """
import gc, json, weakref
import tiktoken.registry
from treechat.providers import tokenizer
counter = tokenizer.counter_for("openai/gpt-4o")
text = "Counted before and after the tables are let go of."
before = counter.raw.count(text)
held = weakref.ref(tiktoken.registry.ENCODINGS["o200k_base"])
tokenizer.release_encodings()
gc.collect()
stand_in = tiktoken.registry.ENCODINGS["o200k_base"]
report = {"before": before, "freed": held() is None, "stand_in": repr(stand_in),
          "empty": stand_in.encode(""), "loaded_by_empty": stand_in.loaded}
report["after"] = counter.raw.count(text)
report["reloaded"] = sorted(tokenizer._encodings)
report["registry"] = type(tiktoken.registry.ENCODINGS["o200k_base"]).__name__
print(json.dumps(report))
"""


def test_released_tables_are_freed_and_load_again_when_something_counts() -> None:
    """A one-shot command lets go of the tables once its counting is done: nothing keeps
    them (not a counter, not tiktoken's registry), an empty text is counted without them,
    and a later count loads them again and agrees."""
    done = subprocess.run([sys.executable, "-c", RELEASE_CHILD], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    import json

    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["freed"] is True
    assert report["stand_in"] == "<DeferredEncoding 'o200k_base'>"
    assert report["empty"] == [] and report["loaded_by_empty"] is False
    assert report["after"] == report["before"] > 0
    assert report["reloaded"] == ["o200k_base"]
    assert report["registry"] == "Encoding"  # the real tables back in tiktoken's registry
