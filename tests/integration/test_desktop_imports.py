"""What the desktop loads before it answers ``/api/health`` (issue 27: a desktop ready in a
second). The model client, the MCP SDK, tracing exporters, JSON Schema, the cron parser and
the HTTP API's validators are loaded when first used, not at every start."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from aios.errors import BadRequest
from tests.util import ROOT

LAZY = ("openai", "mcp", "opentelemetry", "jsonschema", "httpx", "croniter", "aios_sdk.slots")
"""Never imported before the desktop is ready (and the first request does not need them)."""

DESKTOP_START = """
import json, sys
from pathlib import Path
from aios.config import validate_config
from aios.system import System
from aios.web import create_app
from aios.web import schemas

apps, data = Path(sys.argv[1]), Path(sys.argv[2])
config = validate_config({"apps_dir": str(apps), "data_dir": str(data), "llm": {"api_key": ""}})
system = System(config, port=9, token="t")
client = create_app(system).test_client()
system.start()
try:
    health = client.get("/api/health", headers={"Authorization": "Bearer t"}).get_json()
    built = sorted(
        name for name, m in vars(schemas).items()
        if name.endswith("Body") and getattr(m, "__pydantic_complete__", False)
    )
    loaded = sorted({m.split(".")[0] for m in sys.modules} | set(sys.modules))
    print(json.dumps({"status": health["status"], "built": built, "loaded": loaded}))
finally:
    system.stop()
"""


def test_the_desktop_is_ready_without_what_only_a_use_needs(tmp_path: Path) -> None:
    (tmp_path / "apps").mkdir()
    out = subprocess.run(
        [sys.executable, "-c", DESKTOP_START, str(tmp_path / "apps"), str(tmp_path / "data")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=True,
    )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["status"] == "ready"
    assert [m for m in LAZY if m in got["loaded"]] == [], "loaded at start"
    # the request bodies' validators are built by their first request, not at start
    assert got["built"] == []


def test_a_body_built_on_first_use_serves_threads_that_reach_it_at_once() -> None:
    from aios.web import schemas

    class Racy(schemas._Body):  # a body no request has built yet
        n: int
        tags: list[str] = []

    assert not Racy.__pydantic_complete__
    start = threading.Barrier(8)

    def use() -> int:
        start.wait(timeout=30)
        return schemas.parse(Racy, {"n": 1, "tags": ["a"], "unknown": True}).n

    with ThreadPoolExecutor(8) as pool:
        assert [f.result() for f in [pool.submit(use) for _ in range(8)]] == [1] * 8
    with pytest.raises(BadRequest, match="'n'"):
        schemas.parse(Racy, {"tags": []})
