"""A real system for a benchmark: the desktop's server on a free loopback port, started on
a config, with an HTTP session that holds the launch token (bench_memory_system.py, bench_scale.py,
bench_traces.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import requests

from aios.config import validate_config
from aios.system import System
from aios.web.app import create_app
from aios.web.serving import ServerThread

TOKEN = "bench-token"


@contextmanager
def running_system(raw: dict[str, Any]) -> Iterator[tuple[System, requests.Session]]:
    """The system ``raw`` (a config.json's content) describes, started; stopped after."""
    config = validate_config({"approvals": {"mode": "auto"}, "apps": {"autostart": "all"}, **raw})
    server = ServerThread(0)
    system = System(config, port=server.port, token=TOKEN)
    server.attach(create_app(system))
    server.start()
    http = requests.Session()
    http.trust_env = False
    http.headers["Authorization"] = f"Bearer {TOKEN}"
    try:
        system.start()
        yield system, http
    finally:
        server.shutdown()
        system.stop()
        http.close()
