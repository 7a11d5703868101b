"""The connection editor's own parsing: a name made from a URL, headers from one line."""

from __future__ import annotations

import pytest

from treechat.services.models.connections import ConnectionProblem
from treechat.ui.dialogs.connection_editor import name_from_url, parse_headers


def test_a_name_comes_from_the_url_and_headers_from_one_line() -> None:
    assert name_from_url("http://localhost:1234/v1") == "localhost-1234"
    assert name_from_url("lab.example") == "lab.example"
    assert name_from_url("http://[::1") == "server"  # not a URL: still a name
    assert parse_headers("X-Team: blue; X-Other: a:b;") == (("X-Team", "blue"),
                                                            ("X-Other", "a:b"))
    with pytest.raises(ConnectionProblem, match="is not a header"):
        parse_headers("no colon here")
