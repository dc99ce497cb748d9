"""An OpenAI-compatible chat endpoint, configured from settings or the environment, with the key kept out of sight.

Configuration: the endpoint (base URL) and model come from the editor settings `llm.endpoint` / `llm.model` or
from `WARPWISE_LLM_ENDPOINT` / `WARPWISE_LLM_MODEL`; the key only from the environment, `WARPWISE_LLM_API_KEY`,
else `OPENAI_API_KEY`. The key is never logged, never part of a report, and not shown by `repr` (a local server
that needs none gets a placeholder). Nothing is sent anywhere unless an endpoint is configured.

`LLMClient.chat` sends one chat completion through the `openai` client (its own retries with back-off cover
connection errors, time-outs, 429 and 5xx answers) and records each call (role, seconds, outcome) for the report.
Failures are `LLMError`s with a one-line reason; the search turns them into rejected branches.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

ENV_ENDPOINT = "WARPWISE_LLM_ENDPOINT"
ENV_MODEL = "WARPWISE_LLM_MODEL"
ENV_KEYS = ("WARPWISE_LLM_API_KEY", "OPENAI_API_KEY")
PLACEHOLDER_KEY = "no-key"


class LLMError(RuntimeError):
    """A request to the endpoint failed (after the client's retries), or its answer was unusable."""


@dataclass(frozen=True)
class LLMConfig:
    """Where the LLM is and how to talk to it (the key is excluded from `repr` and from `public`)."""

    endpoint: str
    model: str
    api_key: str = field(default="", repr=False)
    timeout_s: float = 120.0
    max_retries: int = 2
    temperature: float = 0.2
    max_tokens: int = 4096

    @classmethod
    def resolve(
        cls, endpoint: str = "", model: str = "", env: Mapping[str, str] | None = None, **kwargs: Any
    ) -> LLMConfig | None:
        """Return the configuration from settings values, falling back on the environment; None when not set."""
        env = os.environ if env is None else env
        endpoint = endpoint or env.get(ENV_ENDPOINT, "")
        model = model or env.get(ENV_MODEL, "")
        if not endpoint or not model:
            return None
        key = next((env[k] for k in ENV_KEYS if env.get(k)), "")
        return cls(endpoint.rstrip("/"), model, key, **kwargs)

    @property
    def public(self) -> dict[str, Any]:
        """Return what may be shown or stored: endpoint and model, never the key."""
        return {"endpoint": self.endpoint, "model": self.model, "key": "set" if self.api_key else "none"}


@dataclass(frozen=True, slots=True)
class Call:
    """One request: the role that made it, how long it took, and how it ended."""

    role: str
    seconds: float
    ok: bool
    detail: str = ""


class LLMClient:
    """Chat completions from one configured endpoint."""

    def __init__(self, config: LLMConfig) -> None:
        try:
            import openai
        except ImportError as exc:
            raise LLMError("the `openai` package is not installed (pip install 'warpwise[llm]')") from exc
        self.config = config
        self._openai = openai
        self._client = openai.OpenAI(
            base_url=config.endpoint,
            api_key=config.api_key or PLACEHOLDER_KEY,
            timeout=config.timeout_s,
            max_retries=config.max_retries,
        )
        self.calls: list[Call] = []

    def chat(self, role: str, messages: list[dict[str, str]]) -> str:
        """Return the assistant's answer to a conversation, or raise `LLMError` saying why there is none."""
        o = self._openai
        t0 = time.perf_counter()
        try:
            answer = self._client.chat.completions.create(
                model=self.config.model,
                messages=messages,  # type: ignore[arg-type]
                temperature=self.config.temperature,
                max_tokens=self.config.max_tokens,
            )
        except o.APITimeoutError as exc:
            self._record(role, t0, False, "timed out")
            raise LLMError(f"the LLM endpoint did not answer within {self.config.timeout_s:g} s") from exc
        except o.APIConnectionError as exc:
            self._record(role, t0, False, "connection failed")
            raise LLMError(f"cannot reach the LLM endpoint {self.config.endpoint}") from exc
        except o.APIStatusError as exc:
            self._record(role, t0, False, f"HTTP {exc.status_code}")
            raise LLMError(f"the LLM endpoint answered HTTP {exc.status_code}") from exc
        except Exception as exc:  # A body that does not parse, or any other client failure, is an answer-less call.
            self._record(role, t0, False, type(exc).__name__)
            raise LLMError(f"the LLM request failed: {type(exc).__name__}") from exc
        try:
            content = answer.choices[0].message.content
        except (AttributeError, IndexError, TypeError):
            content = None
        if not content:
            self._record(role, t0, False, "empty answer")
            raise LLMError("the LLM endpoint gave an empty answer")
        self._record(role, t0, True)
        return str(content)

    def _record(self, role: str, t0: float, ok: bool, detail: str = "") -> None:
        self.calls.append(Call(role, round(time.perf_counter() - t0, 3), ok, detail))

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()
