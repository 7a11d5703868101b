"""An aged tool result is a stub that names its call and node and keeps its findings, not its
first line."""

from __future__ import annotations

from treechat.core.aging import aged_tool_item
from treechat.core.commit import ContextItem
from treechat.core.rule_config import RuleConfig
from treechat.providers.tokenizer import counter_for

COUNTER = counter_for("gpt-4o")


def test_an_aged_result_keeps_its_findings_and_says_where_the_rest_is() -> None:
    rows = [f"    total_{i % 5} = step_{i % 9}(rows)" for i in range(200)]
    rows.insert(120, "MIRROR_URL = 'depot-nine'  # internal package mirror")
    text = "import os\n" + "\n".join(rows)
    item = ContextItem(source_node_id="t9", role="tool", rendered=text, tokens=900,
                       tool_name="read_file", tool_call_id="c1", tool_args='{"path": "a.py"}')
    aged = aged_tool_item(item, COUNTER, RuleConfig())
    assert aged.state == "aged" and aged.tokens < item.tokens
    assert "depot-nine" in aged.rendered
    assert "is node t9, recall returns it" in aged.rendered
    assert "import os" not in aged.rendered
