"""Request and response bodies of the OpenAI-compatible gateway, plus the gateway's own reports.

Answers (and the messages inside a request) are open-ended, as providers add fields: passthrough
bodies accept and keep unknown fields, and only what the gateway reads or builds is declared. A
request's own top-level fields are checked as OpenAI checks them: a role it does not know or a
sampling value out of range is a 400 naming the field. A top-level field OpenAI does not define
(a provider's own, such as `top_k`) is kept here and goes to the provider only when its
`extra_body` in fleet.yaml lets it through; the gateway refuses it otherwise (see `extra_fields`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator


class Passthrough(BaseModel):
    """A body the gateway forwards: unknown fields are kept as they are."""

    model_config = ConfigDict(extra="allow")

    def wire(self) -> dict[str, Any]:
        """The JSON form: exactly the fields that were received or explicitly given, nulls included."""
        return self.model_dump(mode="json", exclude_unset=True)


# ----------------------------------------------------------------------------- requests


class FunctionCall(Passthrough):
    name: str
    arguments: str = "{}"


class ToolCall(Passthrough):
    id: str
    type: str = "function"
    function: FunctionCall


Role = Literal["system", "developer", "user", "assistant", "tool", "function"]


class ChatMessage(Passthrough):
    role: Role
    content: str | list[dict[str, Any]] | None = None
    name: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None

    @property
    def text(self) -> str:
        """The message's text; multi-part content contributes its text parts."""
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(str(p.get("text", "")) for p in self.content if p.get("type") == "text")

    @property
    def counted_text(self) -> str:
        """What the message weighs in prompt tokens: its text and its tool calls."""
        calls = "".join(c.function.name + c.function.arguments for c in self.tool_calls or [])
        return self.text + calls


class StreamOptions(Passthrough):
    include_usage: bool = False


class ChatCompletionRequest(Passthrough):
    """OpenAI's chat completion parameters, each declared; other fields are kept as the provider's
    own, for the gateway to pass or refuse by the provider's rules."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(min_length=1)
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    stream_options: StreamOptions | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    n: int | None = Field(default=None, ge=1, le=128)
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)
    frequency_penalty: float | None = Field(default=None, ge=-2, le=2)
    presence_penalty: float | None = Field(default=None, ge=-2, le=2)
    top_logprobs: int | None = Field(default=None, ge=0, le=20)
    stop: str | list[str] | None = None
    seed: int | None = None
    user: str | None = None
    logprobs: bool | None = None
    logit_bias: dict[str, float] | None = None
    response_format: dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    functions: list[dict[str, Any]] | None = None
    function_call: str | dict[str, Any] | None = None
    metadata: dict[str, str] | None = None
    store: bool | None = None
    service_tier: str | None = None
    reasoning_effort: str | None = None
    verbosity: str | None = None
    modalities: list[str] | None = None
    audio: dict[str, Any] | None = None
    prediction: dict[str, Any] | None = None
    web_search_options: dict[str, Any] | None = None
    prompt_cache_key: str | None = None
    safety_identifier: str | None = None

    @property
    def tool_names(self) -> list[str]:
        names = []
        for tool in self.tools or []:
            function = tool.get("function")
            if isinstance(function, dict) and isinstance(function.get("name"), str):
                names.append(function["name"])
        return names

    @property
    def counted_messages(self) -> list[tuple[str, str]]:
        """(role, text) pairs for the token counter."""
        return [(m.role, m.counted_text) for m in self.messages]

    @property
    def output_limit(self) -> int | None:
        return self.max_completion_tokens or self.max_tokens

    @property
    def extra_fields(self) -> list[str]:
        """The top-level fields OpenAI does not define, in the order they came."""
        return list(self.model_extra or {})


class EmbeddingRequest(Passthrough):
    """OpenAI's embedding parameters, each declared: any other field is refused."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(min_length=1)
    input: str | list[str] | list[int] | list[list[int]]
    dimensions: int | None = Field(default=None, ge=1, le=8192)
    encoding_format: Literal["float", "base64"] | None = None
    user: str | None = None

    @field_validator("input")
    @classmethod
    def _something_to_embed(
        cls, value: str | list[str] | list[int] | list[list[int]]
    ) -> str | list[str] | list[int] | list[list[int]]:
        if value in ("", []):
            raise ValueError("must not be empty")
        if isinstance(value, list) and any(item in ("", []) for item in value):
            raise ValueError("must not hold an empty string or an empty list of tokens")
        return value

    @property
    def texts(self) -> list[str]:
        """The inputs as text; token-id inputs cannot be read back and count as empty."""
        if isinstance(self.input, str):
            return [self.input]
        return [item if isinstance(item, str) else "" for item in self.input]


# ---------------------------------------------------------------------------- responses


class PromptTokensDetails(Passthrough):
    cached_tokens: int = 0


class Usage(Passthrough):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    prompt_tokens_details: PromptTokensDetails | None = None

    @property
    def cached_tokens(self) -> int:
        return self.prompt_tokens_details.cached_tokens if self.prompt_tokens_details else 0


class AssistantMessage(Passthrough):
    role: str = "assistant"
    content: str | None = None
    tool_calls: list[ToolCall] | None = None


class Choice(Passthrough):
    index: int = 0
    message: AssistantMessage
    finish_reason: str | None = "stop"


class ChatCompletion(Passthrough):
    id: str
    object: str = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    usage: Usage | None = None


class FunctionDelta(Passthrough):
    name: str | None = None
    arguments: str | None = None


class ToolCallDelta(Passthrough):
    index: int
    id: str | None = None
    type: str | None = None
    function: FunctionDelta | None = None


class Delta(Passthrough):
    role: str | None = None
    content: str | None = None
    tool_calls: list[ToolCallDelta] | None = None


class ChunkChoice(Passthrough):
    index: int = 0
    delta: Delta = Field(default_factory=Delta)
    finish_reason: str | None = None


class ChatCompletionChunk(Passthrough):
    id: str
    object: str = "chat.completion.chunk"
    created: int
    model: str
    choices: list[ChunkChoice] = Field(default_factory=list)
    usage: Usage | None = None

    def usage_chunk(self, usage: Usage) -> ChatCompletionChunk:
        """The closing chunk of a stream that reports usage: no choices, this stream's id."""
        return ChatCompletionChunk(
            id=self.id, object=self.object, created=self.created, model=self.model, choices=[], usage=usage
        )

    def sse(self) -> bytes:
        """One server-sent event carrying this chunk."""
        return b"data: " + self.model_dump_json(exclude_unset=True).encode() + b"\n\n"


class Embedding(Passthrough):
    object: str = "embedding"
    index: int
    embedding: list[float] | str


class EmbeddingResponse(Passthrough):
    object: str = "list"
    data: list[Embedding]
    model: str
    usage: Usage = Field(default_factory=Usage)


class ModelCard(BaseModel):
    """One entry of `GET /v1/models`, in OpenAI's shape."""

    id: str
    object: Literal["model"] = "model"
    created: int = 0
    owned_by: str


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard]


# ------------------------------------------------------------------- gateway's own reports


def round_figure(value: float) -> float:
    """A sum of prices, rid of the float noise of adding them up (0.004467, not
    0.0044670000000000005); nine decimals keep a billionth of a dollar or of a token."""
    return round(value, 9)


Figure = Annotated[float, AfterValidator(round_figure)]
"""An amount (dollars, or tokens for a token budget) as reported to an operator."""

BudgetScope = Literal["agent", "fleet"]
BudgetKind = Literal["daily_usd", "monthly_usd", "daily_tokens", "monthly_tokens"]


class BudgetWindow(BaseModel):
    """One configured cap and how much of it the current window has used."""

    scope: BudgetScope
    kind: BudgetKind
    limit: Figure
    spent: Figure
    window_start: datetime
    resets_at: datetime

    @property
    def fraction(self) -> float:
        return self.spent / self.limit if self.limit > 0 else 1.0

    @property
    def exhausted(self) -> bool:
        return self.spent >= self.limit


class BudgetStatus(BaseModel):
    agent: str
    windows: list[BudgetWindow] = Field(default_factory=list)

    @property
    def exhausted(self) -> list[BudgetWindow]:
        return [w for w in self.windows if w.exhausted]

    @property
    def can_spend(self) -> bool:
        return not self.exhausted


class SpendFigures(BaseModel):
    today_usd: Figure = 0.0
    month_usd: Figure = 0.0
    today_tokens: int = 0
    month_tokens: int = 0
    calls_today: int = 0
    calls_month: int = 0


class AgentCosts(SpendFigures):
    agent: str
    can_spend: bool = True
    budget: list[BudgetWindow] = Field(default_factory=list)
    paid_for_peers_today_usd: Figure = 0.0
    """Of today_usd: the calls other agents made for this agent's items (who asks pays)."""
    worked_for_peers_today_usd: Figure = 0.0
    """Calls this agent made for peers' items today, paid by them and not in today_usd."""


class CostsReport(BaseModel):
    at: datetime
    agents: list[AgentCosts]
    fleet: SpendFigures
    fleet_budget: list[BudgetWindow] = Field(default_factory=list)


class UsageBucket(BaseModel):
    start: datetime
    agent: str
    calls: int
    tokens_in: int
    tokens_out: int
    cost_usd: Figure


class UsageSeries(BaseModel):
    bucket: Literal["hour", "day"]
    since: datetime
    agent: str | None = None
    buckets: list[UsageBucket]
