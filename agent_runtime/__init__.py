"""The Flotilla agent runtime: everything that runs inside one agent's container.

`python -m agent_runtime` starts an agent: it fetches its configuration from the orchestrator,
checks in regularly, long-polls its inbox and works each item through the tool-calling loop
against the orchestrator's LLM gateway. The idle path imports only the standard library, pydantic,
websockets and the wire models; the model client, the memory store and the tools load on the
first item.
"""
