"""TLS for the fleet tests: a CA and a server certificate made with `openssl` in a test folder, and a
TLS-terminating proxy (ALPN h2, for gRPC) in front of a plain Temporal dev server, which has no
TLS of its own."""

from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess
import threading
from pathlib import Path


def openssl_available() -> bool:
    """True when the `openssl` command is on PATH."""
    return shutil.which("openssl") is not None


def make_ca(folder: Path, name: str) -> tuple[Path, Path]:
    """A self-signed CA (certificate, key) in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    cert, key = folder / f"{name}.pem", folder / f"{name}.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
                    f"/CN={name}", "-keyout", str(key), "-out", str(cert),
                    "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
                   check=True, capture_output=True)
    return cert, key


def make_server_cert(folder: Path, ca: tuple[Path, Path], names: str = "IP:127.0.0.1,DNS:localhost"
                     ) -> tuple[Path, Path]:
    """A server certificate (certificate, key) for `names` (subjectAltName) signed by `ca`."""
    cert, key, csr = folder / "server.pem", folder / "server.key", folder / "server.csr"
    ext = folder / "server.ext"
    subprocess.run(["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=metalport-test-server",
                    "-keyout", str(key), "-out", str(csr)], check=True, capture_output=True)
    ext.write_text(f"subjectAltName={names}\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n")
    subprocess.run(["openssl", "x509", "-req", "-in", str(csr), "-CA", str(ca[0]), "-CAkey", str(ca[1]),
                    "-CAcreateserial", "-days", "2", "-extfile", str(ext), "-out", str(cert)],
                   check=True, capture_output=True)
    return cert, key


class TlsProxy:
    """Accept TLS on 127.0.0.1:`port` with `cert`/`key` and forward the plain bytes to `target_port`."""

    def __init__(self, cert: Path, key: Path, target_port: int) -> None:
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.context.load_cert_chain(str(cert), str(key))
        self.context.set_alpn_protocols(["h2"])
        self.target_port = target_port
        self.loop = asyncio.new_event_loop()
        self.port = 0
        self.streams: set[asyncio.StreamWriter] = set()
        started = threading.Event()
        self.thread = threading.Thread(target=self._serve, args=(started,), daemon=True)
        self.thread.start()
        started.wait(10)

    def _serve(self, started: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0, ssl=self.context))
        self.server = server
        self.port = server.sockets[0].getsockname()[1]
        started.set()
        self.loop.run_forever()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.close()
            return
        self.streams |= {writer, up_writer}

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            try:
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            except (OSError, ssl.SSLError):
                pass
            finally:
                sink.close()
                self.streams.discard(sink)

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    @property
    def address(self) -> str:
        """host:port of the TLS endpoint."""
        return f"127.0.0.1:{self.port}"

    def close(self) -> None:
        """Stop accepting, close every connection, stop and close the loop."""
        async def shutdown() -> None:
            self.server.close()
            for stream in list(self.streams):
                stream.close()
            await self.server.wait_closed()
            await asyncio.sleep(0.1)

        asyncio.run_coroutine_threadsafe(shutdown(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()
