"""`treechat models`: every model of every connection (the bundled one on a fresh computer,
free), and the model library: what is recommended, downloaded or stopped part way; removing
a model that is not there is one line."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli_runner import one_line_error, treechat

NO_KEYCHAIN = {"PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"}


def test_a_fresh_computer_lists_the_bundled_model(tmp_path: Path) -> None:
    listed = treechat(tmp_path, "models", "list", "--json", env=NO_KEYCHAIN)
    assert listed.returncode == 0, listed.stderr
    (bundled,) = [g for g in json.loads(listed.stdout) if g["kind"] == "bundled"]
    (model,) = bundled["models"]
    assert model["address"].startswith("local/") and model["available"]
    assert model["price_in_per_million"] is None and model["window"] > 0
    bare = treechat(tmp_path, "models", env=NO_KEYCHAIN).stdout
    assert bare == treechat(tmp_path, "models", "list", env=NO_KEYCHAIN).stdout
    row = next(line for line in bare.splitlines() if model["address"] in line)
    assert row.split()[-1] == "free" and f"{model['window']:,}" in row


def test_the_library_on_a_fresh_computer(tmp_path: Path) -> None:
    library = json.loads(treechat(tmp_path, "models", "library", "--json").stdout)
    assert library["recommended"] and library["installed"] == library["partial"] == []
    assert all(not r["installed"] for r in library["recommended"])
    table = treechat(tmp_path, "models", "library").stdout
    assert table.startswith("Recommended:") and "Downloaded: none" in table
    assert library["recommended"][0]["id"] in table


def test_removing_a_model_that_is_not_there(tmp_path: Path) -> None:
    gone = treechat(tmp_path, "models", "rm", "nope")
    assert gone.returncode == 1
    assert one_line_error(gone) == "treechat: no downloaded model named 'nope'"
