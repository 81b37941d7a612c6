"""A JSON document served over https on 127.0.0.1, with a certificate made for the test (a self-signed one
for the IP address 127.0.0.1) and the ``ssl.SSLContext`` that trusts it: what a client ID metadata
document's fetch needs, without leaving the machine."""

from __future__ import annotations

import datetime
import ipaddress
import json
import ssl
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def _certificate(folder: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1)).not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


@dataclass
class HttpsDocuments:
    """Documents by path at ``https://127.0.0.1:<port>``; ``fetched`` lists the paths asked for."""

    documents: dict[str, Any] = field(default_factory=dict)
    fetched: list[str] = field(default_factory=list)
    base_url: str = ""
    trust: ssl.SSLContext | None = None

    @contextmanager
    def serving(self) -> Iterator[HttpsDocuments]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                owner.fetched.append(self.path)
                found = owner.documents.get(self.path)
                status, body = (200, json.dumps(found).encode()) if found is not None else (404, b"{}")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        with tempfile.TemporaryDirectory() as folder:
            cert, key = _certificate(Path(folder))
            server_side = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            server_side.load_cert_chain(cert, key)
            self.trust = ssl.create_default_context(cafile=str(cert))
            server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
            server.socket = server_side.wrap_socket(server.socket, server_side=True)
            self.base_url = f"https://127.0.0.1:{server.server_address[1]}"
            thread = threading.Thread(target=server.serve_forever, daemon=True)
            thread.start()
            try:
                yield self
            finally:
                server.shutdown()
                server.server_close()
