"""TLS keys that let a session's egress proxy read what a page sends inside HTTPS.

Each session gets one key pair, made at run time and kept in the orchestrator's memory (the ssl
module loads it from a private temporary folder, removed at once). The proxy answers a
tunnel's TLS with a certificate for the tunnel's host, signed with that key, and the sandbox's
Chromium is told to accept certificates carrying exactly this public key
(`--ignore-certificate-errors-spki-list`). Nothing else trusts the key: no system store holds it,
and it ends with the session. The proxy then checks each request inside as a plain one and sends it
on over TLS of its own, verifying the site's certificate as `http_request` does.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import ipaddress
import ssl
import tempfile
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

VALID_FOR = datetime.timedelta(days=2)
HOSTS_KEPT = 256


class Interception:
    """One session's key: server TLS contexts per host for the proxy, and the key's SPKI hash for
    the browser's command line."""

    def __init__(self) -> None:
        self._key = ec.generate_private_key(ec.SECP256R1())
        self._contexts: dict[str, ssl.SSLContext] = {}

    @property
    def spki_hash(self) -> str:
        """Base64 of the SHA-256 of the public key's SubjectPublicKeyInfo, as Chromium wants it."""
        spki = self._key.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        return base64.b64encode(hashlib.sha256(spki).digest()).decode("ascii")

    def server_context(self, host: str) -> ssl.SSLContext:
        """A TLS server context presenting a certificate for `host`, HTTP/1.1 only (one request a
        connection, each checked)."""
        found = self._contexts.get(host)
        if found is None:
            if len(self._contexts) >= HOSTS_KEPT:
                self._contexts.clear()
            found = self._contexts[host] = self._context_for(host)
        return found

    def _context_for(self, host: str) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.set_alpn_protocols(["http/1.1"])
        # The ssl module loads a chain only from files: a private temporary directory, removed at once.
        with tempfile.TemporaryDirectory(prefix="flotilla-tls-") as folder:
            chain = Path(folder) / "chain.pem"
            chain.write_bytes(certificate_chain(self._key, host))
            context.load_cert_chain(chain)
        return context


def certificate_chain(key: ec.EllipticCurvePrivateKey, host: str) -> bytes:
    """PEM of a certificate for `host` signed by `key`, then of the key: a file `load_cert_chain` reads."""
    certificate = self_signed_certificate(key, host).public_bytes(serialization.Encoding.PEM)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return certificate + private


def self_signed_certificate(key: ec.EllipticCurvePrivateKey, host: str) -> x509.Certificate:
    """A certificate for `host` (a name or an IP address) carrying `key`, signed by it."""
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host[:64])])
    now = datetime.datetime.now(datetime.UTC)
    try:
        alternative: x509.GeneralName = x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        alternative = x509.DNSName(host)
    return (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + VALID_FOR)
        .add_extension(x509.SubjectAlternativeName([alternative]), critical=False)
        .sign(key, hashes.SHA256())
    )
