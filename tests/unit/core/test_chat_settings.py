"""Chat parameters and presets: validation a person can act on, and the JSON round trip."""

from __future__ import annotations

import json

import pytest

from treechat.core.chat_settings import (
    ChatParameters,
    Preset,
    SettingsError,
    dump_presets,
    join_instructions,
    load_presets,
    preset_from_dict,
)


def test_parameters_keep_only_what_is_set_and_refuse_nonsense() -> None:
    params = ChatParameters(temperature=0.7, max_tokens=500)
    assert params.as_dict() == {"temperature": 0.7, "max_tokens": 500}
    assert ChatParameters.from_dict(params.as_dict()) == params
    assert params.updated(temperature=None).as_dict() == {"max_tokens": 500}
    for bad in ({"temperature": 3}, {"top_p": 0}, {"max_tokens": 0},
                {"reasoning_effort": "extreme"}, {"thinking_budget": 10},
                {"temperature": "hot"}, {"max_tokens": 1.5}):
        with pytest.raises(SettingsError):
            ChatParameters.from_dict(bad)


def test_instructions_join_in_a_fixed_order_without_empty_layers() -> None:
    assert join_instructions("identity", "", " global ", "chat") == "identity\n\nglobal\n\nchat"


def test_presets_round_trip_through_their_export_file() -> None:
    presets = (
        Preset("Editor", system_prompt="Edit.", model="openai/gpt-4o",
               parameters=ChatParameters(temperature=0.2), description="tight"),
        Preset("Plain"),
    )
    text = dump_presets(presets)
    assert json.loads(text)["format"] == "treechat-presets"
    assert load_presets(text) == presets
    # A bare object or list is read too.
    assert load_presets(json.dumps(presets[0].as_dict())) == presets[:1]


def test_a_bad_preset_file_is_refused_whole_with_a_reason() -> None:
    with pytest.raises(SettingsError, match="not a JSON"):
        load_presets("{nope")
    with pytest.raises(SettingsError, match="needs a name"):
        load_presets('[{"name": "ok"}, {"system_prompt": "x"}]')
    with pytest.raises(SettingsError, match="twice"):
        load_presets('[{"name": "a"}, {"name": "a"}]')
    with pytest.raises(SettingsError, match="newer"):
        load_presets('{"format": "treechat-presets", "version": 99, "presets": []}')
    with pytest.raises(SettingsError, match="temperature"):
        preset_from_dict({"name": "hot", "parameters": {"temperature": 9}})
