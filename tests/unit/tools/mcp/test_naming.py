"""Tool names as providers see them: one namespace per server, stable, unique, legal; and
schemas a provider would refuse are caught before they fail a request."""

from __future__ import annotations

import pytest

from treechat.tools.mcp.naming import (
    assign_names,
    is_valid_tool_name,
    provider_schema,
    public_name,
    schema_problem,
)


def test_two_servers_with_the_same_tool_get_two_names() -> None:
    names = assign_names([("beta", "search"), ("alpha", "search")])
    assert names == {("alpha", "search"): "alpha__search", ("beta", "search"): "beta__search"}


def test_names_do_not_depend_on_the_order_servers_answered_in() -> None:
    pairs = [("b", "x.y"), ("b", "x_y"), ("a", "t")]
    assert assign_names(pairs) == assign_names(list(reversed(pairs)))


def test_a_collision_after_cleaning_gets_a_suffix() -> None:
    names = assign_names([("s", "x.y"), ("s", "x_y")])
    assert sorted(names.values()) == ["s__x_y", "s__x_y_2"]


def test_a_built_in_name_is_never_taken() -> None:
    names = assign_names([("todo", "list")], taken=["todo__list"])
    assert names[("todo", "list")] == "todo__list_2"


def test_long_names_are_cut_legal_and_distinct() -> None:
    a = public_name("server", "t" * 80 + "a")
    b = public_name("server", "t" * 80 + "b")
    assert len(a) <= 64 and len(b) <= 64 and a != b
    assert is_valid_tool_name(a) and is_valid_tool_name(b)
    assert is_valid_tool_name(public_name("srv", "weird name/with:chars"))


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        ("nope", "not a JSON object"),
        ({"type": "array"}, "not an object"),
        ({"type": "object", "anyOf": [{}]}, "anyOf at the top level"),
        ({"type": "object", "properties": []}, "properties are not an object"),
        ({"type": "object", "required": "a"}, "required list"),
        ({"type": "object", "properties": {"a": {"type": 5}}}, "not valid JSON Schema"),
        ({"type": "object", "properties": {"a": {"maximum": float("inf")}}}, "not plain JSON"),
    ],
)
def test_schemas_a_provider_refuses_are_named(schema: object, problem: str) -> None:
    found = schema_problem(schema)
    assert found is not None and problem in found


def test_ordinary_schemas_pass_and_are_completed() -> None:
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"}
    assert schema_problem(schema) is None
    assert provider_schema(schema) == {"type": "object", "properties": {}}
    full = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    assert schema_problem(full) is None
    assert list(provider_schema(full)) == ["type", "properties", "required"]
