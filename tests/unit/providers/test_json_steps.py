"""litellm's price list parsed member by member: the same result as `json.loads`, key order
kept, the original parser for anything else, and repeated keys and names shared."""

from __future__ import annotations

import json

import pytest

from treechat.providers import llm
from treechat.providers.json_steps import BIG_JSON, loads_in_steps


def test_stepwise_json_parse_matches_json_loads() -> None:
    bundled = llm.litellm_tokenizer_dir()
    assert bundled is not None
    price_list = (bundled.parents[1] / "model_prices_and_context_window_backup.json").read_bytes()
    loads = loads_in_steps(json.loads)
    assert len(price_list) > BIG_JSON
    assert loads(price_list) == json.loads(price_list)
    assert list(loads(price_list)) == list(json.loads(price_list))  # key order kept
    pad = " " * BIG_JSON
    for text in ['{"a": [1, {"b": null}], "a": 2 , "c": "\\u00e9"}', "{}", '{"k":\n{"x":1.5e3}}']:
        assert loads(pad + text + pad) == json.loads(text)
    assert loads(pad + "[1, 2]") == [1, 2]  # not an object: the original parser
    with pytest.raises(json.JSONDecodeError):
        loads(pad + '{"a": 1,}')
    with pytest.raises(json.JSONDecodeError):
        loads(pad + '{"a": 1} extra')
    # one string per distinct key and name across members, as one `json.loads` shares keys
    parsed = loads(price_list)
    providers = {id(entry["litellm_provider"]) for entry in parsed.values()
                 if isinstance(entry, dict) and entry.get("litellm_provider") == "openai"}
    keys = {id(key) for entry in parsed.values() if isinstance(entry, dict)
            for key in entry if key == "mode"}
    assert len(providers) == 1 and len(keys) == 1
