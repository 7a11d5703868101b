"""Findings of tool results and facts the user stated: what stands out is found wherever it
sits, whatever its case, and nothing is found in output where nothing stands out."""

from __future__ import annotations

from treechat.core.findings import stated_facts, tool_findings


def _source(lines: int) -> list[str]:
    return [f"    total_{i % 9} = compute_{i % 13}(rows, period)  # step {i % 5}"
            for i in range(lines)]


def test_a_setting_buried_in_a_long_file_is_a_finding_and_a_first_line_is_not() -> None:
    body = _source(400)
    body.insert(230, "# The staging server is kestrel, ask before deploying.")
    found = tool_findings("def compute(rows, period):\n" + "\n".join(body))
    assert any("kestrel" in line for line in found)
    assert not any(line.startswith("def compute") for line in found)


def test_a_failing_test_and_the_tally_stand_out_of_a_log_of_passes() -> None:
    rows = [f"tests/test_api.py::test_case_{i} PASSED" for i in range(300)]
    rows[140] = "tests/test_api.py::test_refund_rounding FAILED - AssertionError: 10.01 != 10.0"
    rows.append("==== 299 passed, 1 failed in 12.31s ====")
    found = tool_findings("\n".join(rows))
    assert any("test_refund_rounding" in line for line in found)
    assert not any(line.endswith("PASSED") for line in found)


def test_output_where_nothing_stands_out_has_no_findings() -> None:
    rows = [f"tests/test_api.py::test_case_{i} PASSED" for i in range(200)]
    assert tool_findings("\n".join(rows)) == ()


def test_findings_are_the_same_for_the_same_output() -> None:
    body = "\n".join([*_source(200), "LICENSE_KEY = 'amber-kite'  # rotated"])
    assert tool_findings(body) == tool_findings(body)
    assert any("amber-kite" in line for line in tool_findings(body))


def test_what_the_user_says_of_themselves_is_found_in_any_case() -> None:
    for text in ("MY SISTER LIVES IN PORTO and tests the app.",
                 "my sister lives in porto and tests the app",
                 "ok. Also, My sister lives in Porto and tests the app."):
        assert any("porto" in f.lower() for f in stated_facts(text)), text


def test_decisions_about_the_project_are_found_without_a_first_person() -> None:
    facts = stated_facts("Thanks. Decision made: the database will be couchdb. Go on")
    assert any("couchdb" in f for f in facts)
    assert any("gannet" in f for f in stated_facts(
        "How does it work? (the build server is called gannet)"))


def test_questions_and_quoted_text_are_not_facts() -> None:
    assert stated_facts("Is my sister's flat in Porto?") == ()
    assert stated_facts('The manual says: "We always close every file we open in the loop." '
                        "Why?") == ()
