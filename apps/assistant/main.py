"""智能助手 (assistant): the generic LLM app — nothing but a role prompt.

Everything else comes from aios_sdk.generic.GenericAgent, which reads the
name and role from manifest.json beside this file and lets the LLM plan its
own tool calls (see docs/app-guide.md, "the generic LLM app").
"""

from __future__ import annotations

from aios_sdk.generic import GenericAgent

if __name__ == "__main__":
    GenericAgent().run()
