"""The loaded model of the bundled server: prompt formatting by the GGUF's own chat template,
exact token counts, and token-by-token generation with stop sequences held back."""

from __future__ import annotations

import codecs
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from .messages import RequestError

# SmolLM2's model card recommends a low temperature; a tiny model rambles at 1.0.
DEFAULT_TEMPERATURE = 0.2
DEFAULT_TOP_P = 0.9


@dataclass
class Generation:
    """One completion's running state, filled in as tokens arrive."""

    prompt_tokens: int
    completion_tokens: int = 0
    finish_reason: str = "length"
    prompt_seconds: float = 0.0
    generate_seconds: float = 0.0
    pieces: list[str] = field(default_factory=list)

    def usage(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
        }

    def timings(self) -> dict[str, float]:
        per_second = (
            self.completion_tokens / self.generate_seconds if self.generate_seconds > 0 else 0.0
        )
        return {
            "prompt_n": self.prompt_tokens,
            "prompt_ms": round(self.prompt_seconds * 1000, 3),
            "predicted_n": self.completion_tokens,
            "predicted_ms": round(self.generate_seconds * 1000, 3),
            "predicted_per_second": round(per_second, 3),
        }


class Engine:
    """The loaded model: prompt formatting, exact token counts and token-by-token generation.

    llama.cpp contexts are not thread-safe, so one request generates at a time.
    """

    def __init__(self, model_path: str, n_ctx: int, n_threads: int, name: str,
                 chat_template: str | None = None) -> None:
        import llama_cpp
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        self._llama_cpp = llama_cpp
        self.llm = llama_cpp.Llama(
            model_path=model_path,
            n_ctx=n_ctx,
            n_threads=n_threads,
            n_threads_batch=n_threads,
            verbose=False,
        )
        self.name = name
        self.model_path = model_path
        self.n_ctx = int(self.llm.n_ctx())
        self.created = int(time.time())
        eos = self.llm.token_eos()
        bos = self.llm.token_bos()
        template = chat_template or self.llm.metadata.get("tokenizer.chat_template") or _CHATML
        # Tools are offered only to models whose own template renders them.
        self.takes_tools = "tools" in template
        self._formatter = Jinja2ChatFormatter(
            template=template,
            eos_token=self.llm._model.token_get_text(eos) if eos != -1 else "",
            bos_token=self.llm._model.token_get_text(bos) if bos != -1 else "",
            stop_token_ids=[eos],
        )
        self.lock = threading.Lock()
        self.last: Generation | None = None

    def warm_up(self) -> None:
        """Generate one token before announcing readiness.

        llama.cpp's first evaluation pays for buffer allocation; paying it here keeps it out
        of the user's first reply, and the default system prefix it evaluates stays cached.
        """
        tokens = self.prompt_tokens([{"role": "user", "content": "Hi"}])
        for _ in self.generate(tokens, 1, {"temperature": 0.0}, (), Generation(len(tokens))):
            pass

    def meta(self) -> dict[str, int]:
        model = self.llm._model
        return {
            "n_ctx": self.n_ctx,
            "n_ctx_train": int(model.n_ctx_train()),
            "n_params": int(model.n_params()),
            "n_vocab": int(self.llm.n_vocab()),
            "size": int(model.size()),
        }

    def tokenize_text(self, text: str, add_special: bool = False) -> list[int]:
        return list(self.llm.tokenize(text.encode("utf-8"), add_bos=add_special, special=True))

    def prompt_tokens(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Any] | None = None,
    ) -> list[int]:
        try:
            formatted = self._formatter(messages=cast(Any, list(messages)),
                                        tools=cast(Any, list(tools) if tools else None))
        except Exception as exc:
            raise RequestError(f"cannot format the messages: {exc}", param="messages") from exc
        add_bos = not formatted.added_special
        return list(
            self.llm.tokenize(formatted.prompt.encode("utf-8"), add_bos=add_bos, special=True)
        )

    def check_window(self, prompt_tokens: int, max_tokens: int | None) -> int:
        """The number of tokens to generate; raises OpenAI's overflow error when it won't fit."""
        if max_tokens is None:
            if prompt_tokens >= self.n_ctx:
                raise RequestError(
                    f"This model's maximum context length is {self.n_ctx} tokens. However, your "
                    f"messages resulted in {prompt_tokens} tokens. Please reduce the length of "
                    "the messages.",
                    param="messages",
                    code="context_length_exceeded",
                )
            return self.n_ctx - prompt_tokens
        if prompt_tokens + max_tokens > self.n_ctx:
            raise RequestError(
                f"This model's maximum context length is {self.n_ctx} tokens. However, you "
                f"requested {prompt_tokens + max_tokens} tokens ({prompt_tokens} in the messages, "
                f"{max_tokens} in the completion). Please reduce the length of the messages or "
                "completion.",
                param="messages",
                code="context_length_exceeded",
            )
        return max_tokens

    def generate(
        self,
        tokens: Sequence[int],
        max_tokens: int,
        sampling: Mapping[str, Any],
        stops: Sequence[str],
        result: Generation,
    ) -> Iterator[str]:
        """Yield text pieces as they are decoded; `result` ends with counts and finish reason.

        Text that might be the start of a stop sequence is held back until it is known not
        to be one, so a stop sequence never reaches the client.
        """
        llama_cpp = self._llama_cpp
        vocab = self.llm._model.vocab
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        hold = max((len(s) for s in stops), default=1) - 1
        pending = ""
        if sampling.get("seed") is not None:
            self.llm.set_seed(int(sampling["seed"]))
        started = time.perf_counter()
        first_token_at: float | None = None
        tokens_out = self.llm.generate(
            list(tokens),
            temp=float(sampling.get("temperature", DEFAULT_TEMPERATURE)),
            top_p=float(sampling.get("top_p", DEFAULT_TOP_P)),
            presence_penalty=float(sampling.get("presence_penalty", 0.0)),
            frequency_penalty=float(sampling.get("frequency_penalty", 0.0)),
        )
        try:
            stopped = False
            for token in tokens_out:
                if first_token_at is None:
                    first_token_at = time.perf_counter()
                    result.prompt_seconds = first_token_at - started
                if llama_cpp.llama_vocab_is_eog(vocab, token):
                    result.finish_reason = "stop"
                    break
                result.completion_tokens += 1
                pending += decoder.decode(self.llm.detokenize([token], special=False))
                cut = min((i for i in (pending.find(s) for s in stops) if i >= 0), default=-1)
                if cut >= 0:
                    pending = pending[:cut]
                    result.finish_reason = "stop"
                    stopped = True
                    break
                if result.completion_tokens >= max_tokens:
                    result.finish_reason = "length"
                    break
                safe = len(pending) - hold
                if safe > 0:
                    yield pending[:safe]
                    pending = pending[safe:]
            if not stopped:
                pending += decoder.decode(b"", final=True)
            if pending:
                yield pending
        except GeneratorExit:
            # The consumer went away (the client hung up): generation stops here.
            result.finish_reason = "cancelled"
            raise
        finally:
            tokens_out.close()
            end = time.perf_counter()
            result.generate_seconds = end - (first_token_at or end)
            self.last = result


_CHATML = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content']"
    " + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}{% endif %}"
)

