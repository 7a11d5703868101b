"""What litellm's import would load and a request rarely reads (its Anthropic tokenizer,
`cryptography` for Oracle Cloud) loads at its first use, and is then what litellm had."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

CHILD = textwrap.dedent("""
    import json, sys, threading
    from importlib import resources
    from treechat.providers import llm

    litellm = llm.litellm_module()
    utils = sys.modules["litellm.utils"]
    oci = sys.modules["litellm.llms.oci.common_utils"]
    report = {
        "cryptography_after_import": "cryptography" in sys.modules,
        "tokenizer_text_after_import": "claude_json_str" in vars(utils),
        "parsed_tokenizer_kept": hasattr(utils, "json_data"),
        "oci_says_available": oci._CRYPTOGRAPHY_AVAILABLE,
    }
    # Oracle Cloud signing reads a PEM key with what it took from cryptography
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    report["oci_key"] = type(oci.load_private_key_from_str(pem)).__name__
    # the Anthropic tokenizer litellm reads is the one it ships
    shipped = resources.files("litellm.litellm_core_utils.tokenizers").joinpath(
        "anthropic_tokenizer.json").read_text(encoding="utf-8")
    from litellm.utils import claude_json_str
    report["same_tokenizer"] = json.loads(claude_json_str) == json.loads(shipped)
    report["claude_tokens"] = litellm.token_counter(model="claude-2", text="hello there world")
    print(json.dumps(report))
""")

OTHER_THREAD_CHILD = textwrap.dedent("""
    import json, sys, threading
    from treechat.providers import litellm_deferred

    seen = {}

    def elsewhere():
        try:
            import cryptography.hazmat.primitives.hashes
            seen["other_thread"] = "imported"
        except ImportError as exc:
            seen["other_thread"] = repr(exc)

    with litellm_deferred.deferring():
        try:
            import cryptography.hazmat.primitives.hashes  # noqa: F811
            seen["this_thread"] = "imported"
        except ImportError:
            seen["this_thread"] = "refused"
        worker = threading.Thread(target=elsewhere)
        worker.start()
        worker.join()
    import cryptography.fernet
    seen["after"] = "imported"
    print(json.dumps(seen))
""")


def _run(code: str) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True,
                          text=True, timeout=240, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    report: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def test_litellm_imports_without_cryptography_or_its_tokenizer_and_each_loads_when_read() -> None:
    report = _run(CHILD)
    assert report["cryptography_after_import"] is False
    assert report["tokenizer_text_after_import"] is False
    assert report["parsed_tokenizer_kept"] is False
    assert report["oci_says_available"] is True
    assert report["oci_key"] == "RSAPrivateKey"
    assert report["same_tokenizer"] is True
    assert isinstance(report["claude_tokens"], int) and report["claude_tokens"] > 0


def test_only_the_thread_importing_litellm_finds_cryptography_absent() -> None:
    report = _run(OTHER_THREAD_CHILD)
    assert report == {"this_thread": "refused", "other_thread": "imported", "after": "imported"}
