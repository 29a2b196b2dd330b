"""The smallest SDK app, what "an app" costs at start and in memory (bench_system.py and
its start-up section, startup.py)."""

MINIMAL_APP = """\
from aios_sdk import AIOSAgent


class Minimal(AIOSAgent):
    name = "Minimal"

    def handle(self, instruction, context, action_request=None):
        return {"status": "ok", "view_type": "text", "data": {"content": "hi"}}


if __name__ == "__main__":
    Minimal().run()
"""
