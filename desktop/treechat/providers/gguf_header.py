"""The few facts a GGUF file's header holds that the model library needs before loading it:
architecture, name, trained context length and chat template.

Written by hand on purpose: the `gguf` package's reader parses every key and tensor record
(the vocabulary arrays included) with NumPy, about 9 s for the bundled 98 MB model on this
kind of machine, while these values sit in the first kilobytes. Arrays are skipped, never read.
The format is llama.cpp's documented GGUF v2/v3 layout (little-endian).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

MAGIC = b"GGUF"
# value type -> struct format for the fixed-size scalars
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
            10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
# A header larger than this is not a GGUF file we should trust (the vocabulary of the
# largest common models is a few MB).
MAX_STRING = 64 * 1024 * 1024


class GGUFError(ValueError):
    """The file is not a GGUF model file, or its header is damaged."""


@dataclass(frozen=True)
class GGUFHeader:
    architecture: str
    name: str
    context_length: int | None
    chat_template: str | None
    size_label: str | None
    # for the KV cache's size: layers, embedding width, attention and KV heads
    block_count: int | None = None
    embedding_length: int | None = None
    head_count: int | None = None
    head_count_kv: int | None = None
    pooling_type: int | None = None  # set by embedding models (how token vectors are pooled)

    @property
    def embeds(self) -> bool:
        """Whether the file is an embedding model (not one that chats)."""
        return self.pooling_type is not None or "bert" in self.architecture

    @property
    def kv_bytes_per_token(self) -> int | None:
        """Bytes of llama.cpp's f16 KV cache per token of context, when the header says."""
        if not (self.block_count and self.embedding_length and self.head_count):
            return None
        kv_heads = self.head_count_kv or self.head_count
        width = self.embedding_length * kv_heads // self.head_count
        return 2 * self.block_count * width * 2  # K and V, two bytes each

    @property
    def template_supports_tools(self) -> bool:
        """Whether the chat template renders a tool list (Jinja templates that take `tools`)."""
        return bool(self.chat_template) and "tools" in (self.chat_template or "")


def read_header(path: Path) -> GGUFHeader:
    with path.open("rb") as stream:
        return _read(stream)


def _read(stream: BinaryIO) -> GGUFHeader:
    if stream.read(4) != MAGIC:
        raise GGUFError("not a GGUF model file")
    version = _uint(stream, "<I")
    if version < 2:
        raise GGUFError(f"GGUF version {version} is too old (llama.cpp reads 2 and later)")
    _unpack(stream, "<Q")  # tensor count
    count = _uint(stream, "<Q")
    values: dict[str, object] = {}
    for _ in range(count):
        key = _string(stream)
        kind = _uint(stream, "<I")
        values[key] = _value(stream, kind)
    arch = str(values.get("general.architecture") or "")
    context = values.get(f"{arch}.context_length")
    template = values.get("tokenizer.chat_template")
    label = values.get("general.size_label")

    def number(key: str) -> int | None:
        value = values.get(f"{arch}.{key}")
        return int(value) if isinstance(value, int) and not isinstance(value, bool) else None

    return GGUFHeader(
        architecture=arch,
        name=str(values.get("general.name") or ""),
        context_length=int(context) if isinstance(context, int) else None,
        chat_template=template if isinstance(template, str) else None,
        size_label=label if isinstance(label, str) else None,
        block_count=number("block_count"),
        embedding_length=number("embedding_length"),
        head_count=number("attention.head_count"),
        head_count_kv=number("attention.head_count_kv"),
        pooling_type=number("pooling_type"),
    )


def _uint(stream: BinaryIO, fmt: str) -> int:
    (value,) = _unpack(stream, fmt)
    assert isinstance(value, int)
    return value


def _unpack(stream: BinaryIO, fmt: str) -> tuple[object, ...]:
    size = struct.calcsize(fmt)
    data = stream.read(size)
    if len(data) != size:
        raise GGUFError("the GGUF header ends early (the file is truncated)")
    return struct.unpack(fmt, data)


def _string(stream: BinaryIO) -> str:
    (length,) = _unpack(stream, "<Q")
    assert isinstance(length, int)
    if length > MAX_STRING:
        raise GGUFError("the GGUF header holds an implausibly long string")
    data = stream.read(length)
    if len(data) != length:
        raise GGUFError("the GGUF header ends early (the file is truncated)")
    return data.decode("utf-8", "replace")


def _value(stream: BinaryIO, kind: int) -> object:
    if kind in _SCALARS:
        return _unpack(stream, _SCALARS[kind])[0]
    if kind == _STRING:
        return _string(stream)
    if kind == _ARRAY:
        (item_kind,) = _unpack(stream, "<I")
        (length,) = _unpack(stream, "<Q")
        assert isinstance(item_kind, int) and isinstance(length, int)
        _skip_array(stream, item_kind, length)
        return None
    raise GGUFError(f"unknown GGUF value type {kind}")


def _skip_array(stream: BinaryIO, kind: int, length: int) -> None:
    if kind in _SCALARS:
        stream.seek(struct.calcsize(_SCALARS[kind]) * length, 1)
    elif kind == _STRING:
        for _ in range(length):
            (size,) = _unpack(stream, "<Q")
            assert isinstance(size, int)
            if size > MAX_STRING:
                raise GGUFError("the GGUF header holds an implausibly long string")
            stream.seek(size, 1)
    elif kind == _ARRAY:
        for _ in range(length):
            (inner,) = _unpack(stream, "<I")
            (count,) = _unpack(stream, "<Q")
            assert isinstance(inner, int) and isinstance(count, int)
            _skip_array(stream, inner, count)
    else:
        raise GGUFError(f"unknown GGUF value type {kind}")
