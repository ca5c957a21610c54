"""What verifies the servers an agent calls: the trust store for https, loaded once per process,
and for plain http a context that trusts nothing (so nothing can go unverified)."""

from __future__ import annotations

import ssl

from agent_runtime.transport.httpclient import tls_context


def test_https_endpoints_share_one_loaded_trust_store() -> None:
    first, second = tls_context("https://models.example/v1"), tls_context("https://other.example")
    assert first is second
    assert first.verify_mode == ssl.CERT_REQUIRED and first.check_hostname


def test_plain_http_endpoints_get_a_context_that_trusts_nothing() -> None:
    context = tls_context("http://127.0.0.1:8080")
    assert context.cert_store_stats()["x509_ca"] == 0
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context is not tls_context("https://models.example")
