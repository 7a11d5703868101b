"""A tool result's facts come from its structure (JSON leaves under their keys, a table's odd
row under its header, settings, the one error of a log, the first hit, the biggest file), each
line keeping its label beside its value, within a budget."""

from __future__ import annotations

import json

from treechat.core.tool_facts import MAX_FACT_CHARS, result_facts, tool_facts


def _has(facts: tuple[str, ...], *parts: str) -> bool:
    return any(all(p in f for p in parts) for f in facts)


def test_a_json_document_keeps_its_identifying_leaves_under_their_keys() -> None:
    doc = {"service": "ledger-api", "deploy": {"region": "ap-south-2", "replicas": 3,
                                               "image": "registry.corp/ledger:5.2.1"},
           "healthy": True, "note": "all good"}
    facts = tool_facts(json.dumps(doc, indent=2))
    assert _has(facts, "deploy.region", "ap-south-2")
    assert _has(facts, "ledger:5.2.1")
    assert not _has(facts, "healthy")


def test_the_record_that_differs_from_its_siblings_is_kept_with_its_name() -> None:
    records = [{"name": f"node-{i}", "state": "ready", "load": 0.2} for i in range(9)]
    records.insert(4, {"name": "node-quill", "state": "draining", "load": 0.9})
    facts = tool_facts(json.dumps({"nodes": records}))
    assert _has(facts, "node-quill", "draining")
    assert not _has(facts, "node-0")


def test_a_table_keeps_its_odd_row_under_the_header() -> None:
    rows = ["NAME           STATUS     RESTARTS   AGE"]
    rows += [f"web-{i}-a1b2c     Running    0          2d" for i in range(12)]
    rows.insert(7, "queue-9f8e7d    Evicted    14         2d")
    facts = tool_facts("\n".join(rows))
    assert _has(facts, "NAME: queue-9f8e7d", "STATUS: Evicted")


def test_a_markdown_table_is_read_by_its_bars() -> None:
    text = ("| region | price | currency |\n|---|---|---|\n| north | 12 | EUR |\n"
            "| south | 12 | EUR |\n| east | 12 | EUR |\n| west | 97 | NOK |\n")
    facts = tool_facts(text)
    assert _has(facts, "region: west", "currency: NOK")


def test_the_one_error_among_info_lines_is_kept_whole() -> None:
    lines = [f"2023-11-0{i % 9 + 1} 10:{i:02d}:00 INFO sync ok batch={i}" for i in range(60)]
    lines.insert(33, "2023-11-04 10:33:10 ERROR sync aborted batch=33 cause=disk_full")
    facts = tool_facts("\n".join(lines))
    assert _has(facts, "ERROR", "cause=disk_full")


def test_the_setting_with_the_most_to_say_wins_over_common_ones() -> None:
    text = "\n".join(["HOME=/home/ana", "LANG=C.UTF-8", "TERM=xterm",
                      "BROKER_URL=amqp://svc@mq-west-7.lan:5672/jobs", "SHLVL=1"])
    facts = tool_facts(text, limit=1)
    assert facts == ("BROKER_URL: amqp://svc@mq-west-7.lan:5672/jobs",)


def test_search_hits_keep_the_first_address() -> None:
    text = ("1. Pooling connections\n   https://docs.example.org/pool/size\n   Use a pool.\n"
            "2. Pool sizing myths\n   https://blog.example.net/myths-42\n"
            "3. Another take\n   https://forum.example.com/t/77\n")
    assert _has(tool_facts(text), "https://docs.example.org/pool/size")


def test_a_listing_keeps_the_file_far_larger_than_the_rest() -> None:
    rows = [f"-rw-r--r--  1 kim  staff  {1000 + 37 * i:>10}  Mar  3 09:1{i % 10} f{i}.txt"
            for i in range(10)]
    rows.insert(6, "-rw-r--r--  1 kim  staff  7340032000  Mar  3 09:15 backup.tar")
    facts = tool_facts("total 7200000\n" + "\n".join(rows))
    assert _has(facts, "backup.tar")


def test_a_test_run_keeps_the_failure_and_the_tally() -> None:
    rows = [f"tests/test_core.py::test_case_{k} PASSED" for k in range(40)]
    rows.insert(20, "tests/test_core.py::test_rounding_half_even FAILED")
    rows.append("==== 1 failed, 40 passed in 3.10s ====")
    facts = tool_facts("\n".join(rows))
    assert _has(facts, "test_rounding_half_even FAILED")


def test_a_short_result_is_its_own_fact() -> None:
    text = "deploy/api.conf:14:cache_host = memo-3.lan"
    assert tool_facts(text) == (text,)


def test_source_code_yields_its_standout_comment_not_its_assignments() -> None:
    code = [f"    value_{k} = compute_{k % 5}(rows, {k})" for k in range(200)]
    code.insert(120, "# The fallback mirror is pinned to vault-seven until the audit ends.")
    facts = tool_facts("def build(rows):\n" + "\n".join(code))
    assert _has(facts, "vault-seven")
    assert not _has(facts, "compute_")


def test_facts_stay_within_their_budget_and_are_deterministic() -> None:
    doc = {f"key_{k}": f"value-{k}-{'x' * 40}" for k in range(50)}
    text = json.dumps(doc)
    facts = tool_facts(text, budget_chars=200, limit=10)
    assert facts and sum(len(f) + 1 for f in facts) <= 201
    assert all(len(f) <= MAX_FACT_CHARS for f in facts)
    assert tool_facts(text, budget_chars=200, limit=10) == facts


def test_nothing_comes_of_an_empty_or_blank_result() -> None:
    assert tool_facts("") == ()
    assert tool_facts("   \n\n  ") == ()


def test_a_result_gives_more_findings_only_when_they_score_alike() -> None:
    # one row far out of line: it and at most one runner-up
    rows = ["NAME           STATUS     RESTARTS   AGE"]
    rows += [f"web-{i}-a1b2c     Running    0          2d" for i in range(12)]
    rows.insert(7, "queue-9f8e7d    Evicted    14         2d")
    clear = result_facts("\n".join(rows))
    assert len(clear) <= 2 and _has(clear[:1], "queue-9f8e7d", "Evicted")
    # leaves of the same weight: which one matters cannot be told, so four are given
    doc = {"service": "ledger-api", "deploy": {
        "region": "ap-south-2", "image": "registry.corp/ledger:5.2.1", "owner": "team-kestrel",
        "port": 8443}, "healthy": True}
    several = result_facts(json.dumps(doc, indent=2))
    assert len(several) == 4
    assert _has(several, "deploy.region: ap-south-2") and _has(several, "team-kestrel")
    assert len(tool_facts(json.dumps(doc, indent=2), limit=1)) == 1
