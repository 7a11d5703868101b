"""A chat's own settings (instructions on top of the global ones, and request parameters) and
presets (a named system prompt + model + parameters), with their JSON form and validation.

Pure: the store keeps every change as a revision with its time; this module says what a
revision holds and how the instructions join the L0 layer of a request.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

REASONING_EFFORTS = ("minimal", "low", "medium", "high")
MAX_TEMPERATURE = 2.0
MAX_INSTRUCTIONS_CHARS = 200_000
PRESET_FORMAT = "treechat-presets"
PRESET_VERSION = 1


class SettingsError(ValueError):
    """A parameter or preset that cannot be used, with a message a person can act on."""


@dataclass(frozen=True, slots=True)
class ChatParameters:
    """Request parameters a chat sets; None means "the model's own default" (not sent)."""

    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    reasoning_effort: str | None = None
    thinking_budget: int | None = None

    def __post_init__(self) -> None:
        if self.temperature is not None and not (
            math.isfinite(self.temperature) and 0.0 <= self.temperature <= MAX_TEMPERATURE
        ):
            raise SettingsError(
                f"temperature must be between 0 and {MAX_TEMPERATURE:g}, not {self.temperature}"
            )
        if self.top_p is not None and not (
            math.isfinite(self.top_p) and 0.0 < self.top_p <= 1.0
        ):
            raise SettingsError(f"top-p must be above 0 and at most 1, not {self.top_p}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise SettingsError(f"maximum reply tokens must be at least 1, not {self.max_tokens}")
        if self.reasoning_effort is not None and self.reasoning_effort not in REASONING_EFFORTS:
            raise SettingsError(
                f"reasoning effort must be one of {', '.join(REASONING_EFFORTS)}, "
                f"not {self.reasoning_effort!r}"
            )
        if self.thinking_budget is not None and self.thinking_budget < 1024:
            raise SettingsError(
                f"a thinking budget is at least 1024 tokens, not {self.thinking_budget}"
            )

    def as_dict(self) -> dict[str, Any]:
        """Only the parameters that are set."""
        return {
            k: v
            for k, v in (
                ("temperature", self.temperature),
                ("top_p", self.top_p),
                ("max_tokens", self.max_tokens),
                ("reasoning_effort", self.reasoning_effort),
                ("thinking_budget", self.thinking_budget),
            )
            if v is not None
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> ChatParameters:
        """Parameters from their JSON form; unknown keys are ignored, wrong types refused."""
        data = data or {}

        def number(key: str) -> float | None:
            value = data.get(key)
            if value is None:
                return None
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise SettingsError(f"{key} must be a number, not {value!r}")
            return float(value)

        def integer(key: str) -> int | None:
            value = data.get(key)
            if value is None:
                return None
            if isinstance(value, bool) or not isinstance(value, int):
                raise SettingsError(f"{key} must be a whole number, not {value!r}")
            return int(value)

        effort = data.get("reasoning_effort")
        if effort is not None and not isinstance(effort, str):
            raise SettingsError(f"reasoning_effort must be text, not {effort!r}")
        return cls(
            temperature=number("temperature"),
            top_p=number("top_p"),
            max_tokens=integer("max_tokens"),
            reasoning_effort=effort,
            thinking_budget=integer("thinking_budget"),
        )

    def updated(self, **changes: Any) -> ChatParameters:
        """A copy with `changes` applied; a value of None clears that parameter."""
        return replace(self, **changes)


@dataclass(frozen=True, slots=True)
class SessionSettings:
    """One revision of a chat's settings: what every request from `changed_at` on runs
    under until the next revision. `revision` counts from 1 per chat (0: never set)."""

    session_id: str
    instructions: str = ""
    parameters: ChatParameters = field(default_factory=ChatParameters)
    preset: str = ""
    revision: int = 0
    changed_at: float = 0.0
    id: str = ""


def join_instructions(*layers: str) -> str:
    """The L0 system prompt: identity, then the global instructions, then the chat's own;
    empty layers are left out. The order is fixed so the prefix only changes when a layer
    does."""
    return "\n\n".join(t.strip() for t in layers if t and t.strip())


def check_instructions(text: str) -> str:
    if len(text) > MAX_INSTRUCTIONS_CHARS:
        raise SettingsError(
            f"instructions are limited to {MAX_INSTRUCTIONS_CHARS:,} characters "
            f"({len(text):,} given)"
        )
    return text


@dataclass(frozen=True, slots=True)
class Preset:
    """A named starting point for a chat: system prompt, model (empty: the default) and
    parameters. `builtin` presets ship with the app and cannot be removed."""

    name: str
    system_prompt: str = ""
    model: str = ""
    parameters: ChatParameters = field(default_factory=ChatParameters)
    description: str = ""
    builtin: bool = False

    def __post_init__(self) -> None:
        if not self.name.strip():
            raise SettingsError("a preset needs a name")
        check_instructions(self.system_prompt)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "system_prompt": self.system_prompt,
            "model": self.model,
            "parameters": self.parameters.as_dict(),
        }


def preset_from_dict(data: Any, *, builtin: bool = False) -> Preset:
    """A preset from its JSON object; raises `SettingsError` saying what is wrong."""
    if not isinstance(data, Mapping):
        raise SettingsError("a preset is a JSON object with at least a name")
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise SettingsError("a preset needs a name")
    for key in ("system_prompt", "model", "description"):
        if data.get(key) is not None and not isinstance(data.get(key), str):
            raise SettingsError(f"preset {name!r}: {key} must be text")
    parameters = data.get("parameters")
    if parameters is not None and not isinstance(parameters, Mapping):
        raise SettingsError(f"preset {name!r}: parameters must be an object")
    try:
        params = ChatParameters.from_dict(parameters)
    except SettingsError as exc:
        raise SettingsError(f"preset {name!r}: {exc}") from None
    return Preset(
        name=name.strip(),
        system_prompt=str(data.get("system_prompt") or ""),
        model=str(data.get("model") or ""),
        parameters=params,
        description=str(data.get("description") or ""),
        builtin=builtin,
    )


def dump_presets(presets: Sequence[Preset]) -> str:
    """The export file for `presets` (what `load_presets` reads back)."""
    document = {
        "format": PRESET_FORMAT,
        "version": PRESET_VERSION,
        "presets": [p.as_dict() for p in presets],
    }
    return json.dumps(document, ensure_ascii=False, indent=2) + "\n"


def load_presets(text: str | bytes) -> tuple[Preset, ...]:
    """Presets from an export file, a bare list of presets, or one preset object. Nothing is
    returned unless every preset in the file is valid."""
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SettingsError(f"not a JSON file: {exc}") from None
    if isinstance(data, Mapping) and data.get("format") == PRESET_FORMAT:
        version = data.get("version")
        if not isinstance(version, int) or version > PRESET_VERSION:
            raise SettingsError(
                f"written by a newer Treechat (presets version {version}); update to import it"
            )
        items = data.get("presets")
    elif isinstance(data, list):
        items = data
    else:
        items = [data]
    if not isinstance(items, list) or not items:
        raise SettingsError("the file holds no presets")
    presets = tuple(preset_from_dict(item) for item in items)
    names = [p.name for p in presets]
    doubled = sorted({n for n in names if names.count(n) > 1})
    if doubled:
        raise SettingsError(f"the file names a preset twice: {', '.join(doubled)}")
    return presets
