"""What a failed connection means, said as a person would say it ("no network, or its name
cannot be looked up"), read from the exception or any cause under it, not its errno text."""

from __future__ import annotations

_NETWORK_WORDS = (
    (("name or service not known", "nodename nor servname", "getaddrinfo failed",
      "temporary failure in name resolution", "no address associated"),
     "no network, or its name cannot be looked up"),
    (("connection refused",), "nothing answers at that address"),
    (("timed out", "timeout"), "it does not answer"),
    (("network is unreachable", "no route to host"), "no network"),
)


def network_reason(exc: BaseException) -> str:
    """The words for `exc` when it (or a cause under it) is a network failure, else ""."""
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:  # the reason is often a cause deep down
        seen.add(id(link))
        lower = str(link).lower()
        for needles, words in _NETWORK_WORDS:
            if any(n in lower for n in needles):
                return words
        link = link.__cause__ or link.__context__
    return ""


def failure_words(exc: BaseException) -> str:
    """What went wrong in one line: the network's words when it is the network, else the
    first line of what `exc` says."""
    words = network_reason(exc)
    if words:
        return words
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__
