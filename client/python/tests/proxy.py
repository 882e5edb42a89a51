"""A TCP relay in front of the server that a test can cut, to drop a client's connection
mid-stream the way a network failure does, while the server itself runs on."""

from __future__ import annotations

import socket
import threading


class Proxy:
    """Relays ``127.0.0.1:<port>`` to ``target``. :meth:`cut` closes every relayed
    connection and refuses new ones (accepted, then closed at once) until :meth:`mend`."""

    def __init__(self, target: str) -> None:
        host, port = target.rsplit(":", 1)
        self._target = (host, int(port))
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self._listener.getsockname()[1]}"
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        self._refusing = False
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            with self._lock:
                if self._refusing or self._closed:
                    client.close()
                    continue
                upstream = socket.create_connection(self._target)
                self._open += [client, upstream]
            threading.Thread(target=_pump, args=(client, upstream), daemon=True).start()
            threading.Thread(target=_pump, args=(upstream, client), daemon=True).start()

    def cut(self) -> None:
        with self._lock:
            self._refusing = True
            for sock in self._open:
                _shut(sock)
            self._open.clear()

    def mend(self) -> None:
        with self._lock:
            self._refusing = False

    def close(self) -> None:
        self.cut()
        with self._lock:
            self._closed = True
        self._listener.close()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        _shut(source)
        _shut(sink)


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
