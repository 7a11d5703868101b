"""API keys per provider, kept in the OS keychain (Secret Service, macOS Keychain, Windows
Credential Locker) and nowhere else: never DuckDB, logs, exports or exception text."""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

SERVICE = "treechat"

# The environment variable each provider's own tools read, used when no key is stored.
ENV_VARS: Mapping[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "mistral": ("MISTRAL_API_KEY",),
    "groq": ("GROQ_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "cohere": ("COHERE_API_KEY", "CO_API_KEY"),
    "cohere_chat": ("COHERE_API_KEY", "CO_API_KEY"),
    "together_ai": ("TOGETHERAI_API_KEY", "TOGETHER_API_KEY"),
    "fireworks_ai": ("FIREWORKS_AI_API_KEY", "FIREWORKS_API_KEY"),
    "perplexity": ("PERPLEXITYAI_API_KEY", "PERPLEXITY_API_KEY"),
    "azure": ("AZURE_API_KEY", "AZURE_OPENAI_API_KEY"),
}

KeySource = Literal["keyring", "memory", "environment", "none"]

# Sent instead of a key to servers that need none (llama.cpp, LM Studio, Ollama's OpenAI API,
# the bundled model): the OpenAI client refuses to start without some value.
PLACEHOLDER_API_KEY = "no-key"

NO_KEYCHAIN_MESSAGE = (
    "No system keychain is available, so the key is kept in memory for this session only "
    "and will be asked for again next time. To save it, install and unlock a keychain "
    "(GNOME Keyring, KWallet or another Secret Service provider)."
)

# --- redaction --------------------------------------------------------------------------

_secrets: set[str] = set()
_secrets_lock = threading.Lock()
_KEY_SHAPES = re.compile(
    r"sk-[A-Za-z0-9_\-]{8,}"
    r"|sk_[A-Za-z0-9]{16,}"
    r"|AIza[0-9A-Za-z_\-]{20,}"
    r"|gsk_[A-Za-z0-9]{16,}"
    r"|xai-[A-Za-z0-9]{16,}"
    r"|(?i:bearer)\s+[A-Za-z0-9._\-]{8,}"
)
REDACTED = "[redacted]"


def remember_secret(value: str | None) -> None:
    """Register a key so `redact` removes it from any text, whatever its shape, and in the
    encodings a server may echo it in (base64 of a header, of `user:key`, URL-safe or not)."""
    if value and len(value) >= 6:
        forms = {value, *_encoded_forms(value)}
        with _secrets_lock:
            _secrets.update(forms)


def _encoded_forms(value: str) -> set[str]:
    """The part of any base64 text that holds `value` whatever bytes came before it: the key
    starts at one of three offsets in a three-byte group, and the groups wholly inside it
    encode the same way every time."""
    import base64

    raw = value.encode("utf-8", "surrogatepass")
    out: set[str] = set()
    for offset in range(3):
        lead = (3 - offset) % 3  # bytes of the key that share a group with what came before
        body = raw[lead:]
        body = body[: len(body) - len(body) % 3]
        if len(body) < 6:
            continue
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            out.add(encode(body).decode("ascii"))
    return out


def redact(text: str) -> str:
    """`text` with every known key and anything shaped like one replaced."""
    with _secrets_lock:
        known = sorted(_secrets, key=len, reverse=True)
    for secret in known:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return _KEY_SHAPES.sub(REDACTED, text)


class RedactingFilter(logging.Filter):
    """Scrubs keys from log records before any handler formats them."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact(message)
        if clean != message:
            record.msg = clean
            record.args = None
        return True


def install_log_redaction(*logger_names: str) -> None:
    """Attach the redacting filter to the given loggers (default: Treechat's and litellm's)
    and to the root logger's handlers, so a key never reaches a log file."""
    names = logger_names or ("treechat", "LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "httpx")
    for name in names:
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactingFilter) for f in logger.filters):
            logger.addFilter(RedactingFilter())
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())


# --- storage ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class KeyStatus:
    """Where a provider's key comes from, for settings and `treechat doctor`."""

    provider: str
    source: KeySource
    persistent: bool
    message: str = ""


def _is_plaintext(backend: Any) -> bool:
    cls = type(backend)
    module = cls.__module__
    name = cls.__name__.lower()
    if module.startswith("keyrings.alt") or "plaintext" in name or "encrypted" in name:
        return True
    if module.startswith("keyring.backends.fail") or module.startswith("keyring.backends.null"):
        return True
    priority = getattr(backend, "priority", 1)
    try:
        return float(priority) <= 0
    except (TypeError, ValueError):
        return False


def _secure_backend(backend: Any) -> Any | None:
    """The backend to use, or None: plaintext and null backends are refused, and a chainer
    is resolved to its first secure member."""
    members = getattr(backend, "backends", None)
    if type(backend).__name__ == "ChainerBackend" and members is not None:
        for member in sorted(members, key=lambda b: getattr(b, "priority", 0), reverse=True):
            if not _is_plaintext(member):
                return member
        return None
    return None if _is_plaintext(backend) else backend


class KeyStore:
    """Reads and writes provider keys. Calls may talk to the keychain over D-Bus: run them
    off the GUI thread (`asyncio.to_thread`)."""

    def __init__(
        self, backend: Any | None = None, environ: Mapping[str, str] | None = None
    ) -> None:
        self._given = backend
        self._backend: Any | None = None
        self._resolved = False
        self._unavailable_reason = ""
        self._environ = os.environ if environ is None else environ
        self._memory: dict[str, str] = {}
        self._lock = threading.Lock()

    def _keychain(self) -> Any | None:
        with self._lock:
            if not self._resolved:
                self._resolved = True
                try:
                    if self._given is not None:
                        candidate = self._given
                    else:
                        import keyring

                        candidate = keyring.get_keyring()
                    self._backend = _secure_backend(candidate)
                except Exception:
                    self._backend = None
                if self._backend is None:
                    self._unavailable_reason = NO_KEYCHAIN_MESSAGE
            return self._backend

    def _give_up_on_keychain(self) -> None:
        with self._lock:
            self._backend = None
            self._unavailable_reason = NO_KEYCHAIN_MESSAGE

    @property
    def keychain_available(self) -> bool:
        return self._keychain() is not None

    def set_key(self, provider: str, key: str) -> KeyStatus:
        """Store `key` for `provider` in the keychain, or in memory for this session when
        there is none (the status message says so)."""
        provider = provider.lower()
        key = key.strip()
        remember_secret(key)
        backend = self._keychain()
        if backend is not None:
            try:
                backend.set_password(SERVICE, provider, key)
            except Exception:
                self._give_up_on_keychain()
            else:
                self._memory.pop(provider, None)
                return KeyStatus(
                    provider,
                    "keyring",
                    persistent=True,
                    message="The key was saved in the system keychain.",
                )
        self._memory[provider] = key
        return KeyStatus(provider, "memory", persistent=False, message=NO_KEYCHAIN_MESSAGE)

    def _stored(self, provider: str) -> str | None:
        backend = self._keychain()
        if backend is None:
            return None
        try:
            value = backend.get_password(SERVICE, provider)
        except Exception:
            self._give_up_on_keychain()
            return None
        return value if isinstance(value, str) and value else None

    def _from_env(self, provider: str) -> str | None:
        for name in ENV_VARS.get(provider, (f"{provider.upper()}_API_KEY",)):
            value = self._environ.get(name)
            if value:
                return value
        return None

    def get_key(self, provider: str) -> str | None:
        """The key for `provider`: keychain, then this session's memory, then the provider's
        usual environment variable."""
        provider = provider.lower()
        value = self._stored(provider) or self._memory.get(provider) or self._from_env(provider)
        remember_secret(value)
        return value

    def key_for_model(self, model: str) -> str | None:
        """The key for the provider a litellm model id names (`anthropic/...`)."""
        head, sep, _ = model.partition("/")
        return self.get_key(head if sep else "openai")

    def status(self, provider: str) -> KeyStatus:
        provider = provider.lower()
        if self._stored(provider):
            return KeyStatus(provider, "keyring", persistent=True)
        if provider in self._memory:
            return KeyStatus(provider, "memory", persistent=False, message=NO_KEYCHAIN_MESSAGE)
        if self._from_env(provider):
            names = " or ".join(ENV_VARS.get(provider, (f"{provider.upper()}_API_KEY",)))
            return KeyStatus(
                provider,
                "environment",
                persistent=False,
                message=f"The key comes from the environment ({names}).",
            )
        message = "No key is set for this provider."
        if self._keychain() is None:
            message += " " + NO_KEYCHAIN_MESSAGE
        return KeyStatus(provider, "none", persistent=False, message=message)

    def delete_key(self, provider: str) -> None:
        provider = provider.lower()
        self._memory.pop(provider, None)
        backend = self._keychain()
        if backend is None:
            return
        try:
            backend.delete_password(SERVICE, provider)
        except Exception:
            # Nothing stored (PasswordDeleteError) or the keychain went away: either way no
            # key remains for this provider.
            return

    @property
    def unavailable_reason(self) -> str:
        self._keychain()
        return self._unavailable_reason
