"""Which agent uses which declared secret, and where fleet.yaml says so."""

from __future__ import annotations

from orchestrator.config.models import FleetConfig
from orchestrator.secrets.uses import SecretUse, secret_uses

FLEET = {
    "version": 1,
    "fleet": "uses",
    "secrets": {
        name: {"env": name.upper(), "hosts": ["api.example.com"]}
        for name in ("api", "ops", "hook", "chat", "idle")
    },
    "channels": {
        "ops": {
            "type": "webhook",
            "url": "https://api.example.com/notify",
            "headers": {"X-Key": "{{secret:ops}}"},
        },
        "people": {"type": "telegram_chat", "token": "{{secret:chat}}", "agents": ["reader"]},
        "alerts": {"type": "webhook", "url": "https://api.example.com/{{secret:idle}}"},
    },
    "hooks": {"github": {"agent": "reader", "secret": "hook", "signature": "github"}},
    "agents": {
        "caller": {
            "channels": ["ops"],
            "tools": {
                "http": {"allow": ["https://api.example.com/"], "secrets": ["api"]},
                "mcp": [
                    {
                        "name": "search",
                        "url": "https://api.example.com/mcp",
                        "headers": {"A": "{{secret:api}}"},
                    }
                ],
            },
        },
        "reader": {},
    },
}


def test_each_use_names_the_agent_the_secret_and_where() -> None:
    uses = secret_uses(FleetConfig.model_validate(FLEET))

    assert uses == [
        SecretUse("caller", "api", ("agents", "caller", "tools", "http", "secrets", 0)),
        SecretUse("caller", "api", ("agents", "caller", "tools", "mcp", 0, "headers", "A")),
        SecretUse("caller", "ops", ("channels", "ops")),
        SecretUse("reader", "chat", ("channels", "people")),
        SecretUse("reader", "hook", ("hooks", "github", "secret")),
    ]


def test_a_secret_only_the_orchestrator_uses_belongs_to_no_agent() -> None:
    uses = secret_uses(FleetConfig.model_validate(FLEET))

    assert "idle" not in {use.secret for use in uses}
