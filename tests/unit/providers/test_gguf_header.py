"""Reading a GGUF file's header without loading the model: its architecture, window, chat
template and KV cache size per token, from the bundled model and from headers written here;
a file that is not GGUF, is truncated or holds nonsense is refused in words."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from treechat.providers.gguf_header import GGUFError, read_header
from treechat.providers.local.bundled_model import find_gguf


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def _header(pairs: list[tuple[str, int, bytes]], version: int = 3) -> bytes:
    out = b"GGUF" + struct.pack("<IQQ", version, 0, len(pairs))
    for key, kind, value in pairs:
        out += _string(key) + struct.pack("<I", kind) + value
    return out


@pytest.fixture(scope="module")
def gguf() -> Path:
    return find_gguf()


def test_the_gguf_header_reader(tmp_path: Path, gguf: Path) -> None:
    header = read_header(gguf)
    assert (header.architecture, header.context_length) == ("llama", 8192)
    # SmolLM2-135M: 30 layers, 576 wide, 9 heads of which 3 KV heads
    assert header.kv_bytes_per_token == 2 * 30 * (576 * 3 // 9) * 2
    assert header.chat_template and "<|im_start|>" in header.chat_template
    truncated = tmp_path / "cut.gguf"
    truncated.write_bytes(gguf.read_bytes()[:2000])
    with pytest.raises(GGUFError, match="truncated"):
        read_header(truncated)
    other = tmp_path / "not.gguf"
    other.write_bytes(b"PK\x03\x04 not a model")
    with pytest.raises(GGUFError, match="not a GGUF"):
        read_header(other)


def test_a_header_written_here_is_read_back(tmp_path: Path) -> None:
    template = "{% if tools %}{{ tools | tojson }}{% endif %}{{ messages }}"
    path = tmp_path / "tiny.gguf"
    path.write_bytes(_header([
        ("general.architecture", 8, _string("qwen2")),
        ("general.name", 8, _string("Tiny")),
        ("general.size_label", 8, _string("0.5B")),
        ("qwen2.context_length", 4, struct.pack("<I", 32768)),
        ("qwen2.block_count", 4, struct.pack("<I", 24)),
        ("qwen2.embedding_length", 4, struct.pack("<I", 896)),
        ("qwen2.attention.head_count", 4, struct.pack("<I", 14)),
        ("qwen2.attention.head_count_kv", 4, struct.pack("<I", 2)),
        ("tokenizer.ggml.tokens", 9, struct.pack("<IQ", 8, 2) + _string("a") + _string("b")),
        ("tokenizer.ggml.scores", 9, struct.pack("<IQ", 6, 2) + struct.pack("<ff", 0, 0)),
        ("tokenizer.chat_template", 8, _string(template)),
    ]))
    header = read_header(path)
    assert (header.architecture, header.name, header.size_label) == ("qwen2", "Tiny", "0.5B")
    assert header.context_length == 32768
    assert header.kv_bytes_per_token == 2 * 24 * (896 * 2 // 14) * 2
    assert header.template_supports_tools


def test_a_header_without_the_numbers_says_nothing_of_them(tmp_path: Path) -> None:
    path = tmp_path / "bare.gguf"
    path.write_bytes(_header([("general.architecture", 8, _string("llama"))]))
    header = read_header(path)
    assert header.context_length is None and header.kv_bytes_per_token is None
    assert not header.template_supports_tools


@pytest.mark.parametrize(("content", "words"), [
    (_header([], version=1), "version 1 is too old"),
    (_header([("k", 99, b"")]), "unknown GGUF value type 99"),
    (b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 2**40), "implausibly long"),
])
def test_nonsense_in_a_header_is_refused_in_words(
        tmp_path: Path, content: bytes, words: str) -> None:
    path = tmp_path / "bad.gguf"
    path.write_bytes(content)
    with pytest.raises(GGUFError, match=words):
        read_header(path)
