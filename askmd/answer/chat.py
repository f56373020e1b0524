"""Talk to any OpenAI-compatible chat endpoint: hosted, Ollama, llama.cpp, vLLM, LM Studio.

One small client over the official `openai` package: stream a reply token by token, or
get a short one whole (for rewriting follow-up questions). Every failure becomes one
AskmdError line saying what happened and what to do. It builds no prompts and knows
nothing about notes or citations.
"""

from __future__ import annotations

import json
import time
from collections.abc import Generator
from typing import TYPE_CHECKING

from askmd.errors import OPENAI_URL, AskmdError, LLMFailed, first_line, openai_error

if TYPE_CHECKING:
    import openai

DEFAULT_URL = OPENAI_URL
DEFAULT_MODEL = "gpt-4o-mini"
# The client's own retries (exponential backoff, Retry-After honoured) only ever resend a
# request whose reply had not started: connection failures, 408/409/429 and 5xx. Nothing
# is resent once tokens have been shown, so a retry never duplicates part of an answer.
MAX_RETRIES = 2
CONNECT_TIMEOUT = 10.0
DEFAULT_BUDGET = 120.0  # seconds one answer may take, streamed, before it is cut
# A small model can loop on one sentence until max_tokens: stop once the text ends with the
# same span (MIN_SPAN to MAX_SPAN characters) REPEATS times in a row.
MIN_SPAN, MAX_SPAN, REPEATS = 12, 300, 3
REPEATING = "\n\n(stopped: the model was repeating itself)"


def repeating(text: str) -> bool:
    """Whether `text` ends with one span written REPEATS times in a row."""
    longest = min(MAX_SPAN, len(text) // REPEATS)
    for span in range(MIN_SPAN, longest + 1):
        tail = text[-span:]
        if all(text[-(k + 1) * span : -k * span] == tail for k in range(1, REPEATS)):
            return True
    return False


class Chat:
    """A chat model behind an OpenAI-compatible URL. `model=""` asks the server which."""

    def __init__(
        self,
        base_url: str | None,
        api_key: str | None,
        model: str = "",
        *,
        temperature: float = 0.1,
        max_tokens: int = 800,
        timeout: float = 60.0,
        max_retries: int = MAX_RETRIES,
        budget: float = DEFAULT_BUDGET,
        extra_body: dict | None = None,
    ) -> None:
        import openai

        self.url = (base_url or DEFAULT_URL).rstrip("/")
        self._model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.max_retries = max_retries
        self.budget = budget  # 0: no limit
        self.extra_body = extra_body or {}  # server-specific sampling, e.g. llama.cpp's
        # For a stream the read timeout is the longest wait for the *next* token, so a long
        # answer is never cut off while a stalled server is still noticed. The Timeout is
        # the one of the HTTP library the installed openai is built on (httpx, or httpx2
        # from openai 3.x on): the other's is refused with a TypeError.
        self._client = openai.OpenAI(
            base_url=self.url,
            api_key=api_key or "no-key",
            timeout=openai.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT)),
            max_retries=max_retries,
        )

    @property
    def model(self) -> str:
        """The model to ask: the configured one, or the only one a local server serves."""
        if not self._model:
            self._model = self._default_model()
        return self._model

    def stream(
        self, messages: list[dict], max_tokens: int | None = None
    ) -> Generator[str, None, None]:
        """The reply as text pieces, as they arrive. Closing the iterator ends the request.

        A reply that starts repeating itself, or outlives the time budget, is cut with a
        notice: a small local model can otherwise loop for minutes.
        """
        started, said = time.monotonic(), ""
        pieces = self._pieces(messages, max_tokens)
        try:
            for piece in pieces:
                yield piece
                said += piece
                if repeating(said[-(MAX_SPAN * REPEATS) :]):
                    yield REPEATING
                    return
                if self.budget and time.monotonic() - started > self.budget:
                    yield (
                        f"\n\n(cut: the answer took longer than {self.budget:g} s; "
                        "raise ASKMD_LLM_BUDGET to wait longer)"
                    )
                    return
        finally:
            pieces.close()  # ends the request: the server stops generating

    def _pieces(self, messages: list[dict], max_tokens: int | None) -> Generator[str, None, None]:
        import openai

        try:
            response = self._client.chat.completions.create(
                model=self.model,
                messages=messages,
                temperature=self.temperature,
                max_tokens=max_tokens or self.max_tokens,
                stream=True,
                **({"extra_body": self.extra_body} if self.extra_body else {}),
            )
        except openai.OpenAIError as exc:
            raise self._translate(exc) from None
        with response:  # also on GeneratorExit (Ctrl-C, a closed client): the socket closes
            if "event-stream" not in response.response.headers.get("content-type", ""):
                yield self._whole_reply(response.response.read())  # a server that does not stream
                return
            try:
                for chunk in response:
                    choices = getattr(chunk, "choices", None) or []
                    delta = getattr(choices[0], "delta", None) if choices else None
                    text = getattr(delta, "content", None)
                    if text:
                        yield text
            except openai.OpenAIError as exc:
                raise self._translate(exc) from None
            except ValueError as exc:  # a line that is not JSON
                raise LLMFailed(
                    f"the LLM server at {self.url} sent a reply that is not an OpenAI-style "
                    f"stream ({first_line(exc)}). Check OPENAI_BASE_URL."
                ) from None

    def _whole_reply(self, body: bytes) -> str:
        """The text of a plain (non-streamed) chat completion."""
        try:
            return str(json.loads(body)["choices"][0]["message"]["content"] or "")
        except (ValueError, LookupError, TypeError):
            raise LLMFailed(
                f"the LLM server at {self.url} sent a reply that is neither an OpenAI-style "
                "stream nor a chat completion. Check OPENAI_BASE_URL."
            ) from None

    def complete(self, messages: list[dict], max_tokens: int = 100) -> str:
        """A short reply, whole."""
        return "".join(self.stream(messages, max_tokens=max_tokens)).strip()

    def _default_model(self) -> str:
        import openai

        if self.url == DEFAULT_URL:
            return DEFAULT_MODEL
        try:
            served = sorted(m.id for m in self._client.models.list())
        except openai.NotFoundError:
            served = []
        except openai.OpenAIError as exc:
            raise self._translate(exc) from None
        if len(served) == 1:
            return served[0]
        listed = f" It serves: {', '.join(served[:10])}." if served else ""
        raise LLMFailed(
            f"which model should answer? Set ASKMD_LLM_MODEL to a model the server at "
            f"{self.url} serves.{listed}"
        )

    def _translate(self, exc: openai.OpenAIError) -> AskmdError:
        return openai_error(
            exc,
            kind="LLM",
            url=self.url,
            model=self._model,
            timeout=self.timeout,
            retries=self.max_retries,
        )
