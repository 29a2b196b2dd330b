"""Names and routing cannot be borrowed (DESIGN §14.7, issue 20 item 7).

Real system, real app processes (the bundled ``apps/notes`` and ``apps/hello``;
the look-alike ``tests/fixtures/apps_names/notes_twin``, which writes every
instruction it receives to ``received.log`` in its workdir), real SQLite,
approvals ``smart``. A look-alike is installed *after* the real app (copied
into the apps folder while the system runs, as a user installs one), then:

- the issue's example: "帮我记一下：银行卡密码 4711" no longer reaches the
  look-alike silently: a choice card asks first, and nothing reaches the
  look-alike before the answer; "no" (the owner) is remembered in the store,
  across sessions and a restart; "the newcomer" is remembered too;
- positive controls: the first app keeps its words with no question; an
  instruction naming the newcomer by a name of its own goes to it at once;
- variants: a newcomer that copies only the examples; display names that
  look like Hello's (zero-width space, lower-case L, fullwidth, Cyrillic,
  case, bidi override, combining mark) are shown with their id, an unlike
  name as it is, and the order survives a restart.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.fake_openai import FakeOpenAI, tool_call
from tests.integration.conftest import FIXTURES, Running, final_view, start_system
from tests.util import ROOT, wait_for

BUNDLED = ROOT / "apps"
TWIN = FIXTURES / "apps_names" / "notes_twin"
SECRET = "帮我记一下：银行卡密码 4711"
START_WAIT = 30.0


@pytest.fixture
def make(tmp_path: Path) -> Iterator[Callable[..., Running]]:
    started: list[Running] = []

    def start(
        apps: list[str] | None = None, llm: dict[str, Any] | None = None, **approvals: Any
    ) -> Running:
        root = tmp_path / "apps"
        if not root.exists():
            root.mkdir()
            for app in apps or ["notes"]:
                shutil.copytree(BUNDLED / app, root / app)
        extra: dict[str, Any] = {"llm": llm} if llm else {}
        running = start_system(
            root, tmp_path / "data", approvals={"mode": "smart", **approvals}, **extra
        )
        started.append(running)
        return running

    yield start
    for r in started:
        r.stop()


def install(running: Running, app_id: str, manifest: dict[str, Any] | None = None) -> Path:
    """Copy the look-alike into the running system's apps folder (as a user installs an
    app) with ``manifest`` changes, and wait until the launcher runs it."""
    folder = running.apps_dir / app_id
    staging = running.apps_dir.parent / f".{app_id}"
    shutil.copytree(TWIN, staging)
    if manifest is not None:
        raw = json.loads((staging / "manifest.json").read_text(encoding="utf-8"))
        raw.update(manifest)
        (staging / "manifest.json").write_text(json.dumps(raw, ensure_ascii=False))
    staging.rename(folder)  # one step: the watcher never sees half a folder

    def running_now() -> bool:
        rec = running.system.launcher.get(app_id)
        return rec is not None and rec.status == "running"

    wait_for(running_now, what=f"{app_id} to run", timeout=START_WAIT)
    return folder / "workspace" / "received.log"


def received(log: Path) -> list[str]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def instruct(running: Running, text: str, sid: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"text": text, **({"session_id": sid} if sid else {})}
    r = running.post("/api/instruction", body)
    assert r.status_code == 200, r.text
    out: dict[str, Any] = r.json()
    return out


def answered_by(out: dict[str, Any]) -> list[str]:
    """The apps that answered an instruction that did not wait."""
    assert "state" not in out, f"the instruction waited: {out.get('pending')}"
    return [x["app"] for x in out["results"]]


def the_card(out: dict[str, Any]) -> dict[str, Any]:
    assert out.get("state") == "waiting", out
    (card,) = out["pending"]
    assert card["kind"] == "choice"
    return dict(card)


# ----------------------------------------------------------------- routing words


def test_a_look_alike_installed_later_asks_before_it_gets_notes_words(
    make: Callable[..., Running],
) -> None:
    running = make()
    # positive control: the first app keeps its words, no question
    assert answered_by(instruct(running, SECRET)) == ["notes"]
    log = install(running, "notes_twin")
    sub = running.system.bus.subscribe()
    twin = next(a for a in running.get("/api/apps").json() if a["id"] == "notes_twin")
    assert twin["names"] == {"zh-CN": "记事本 (notes_twin)", "en": "N\u03bftes (notes_twin)"}

    out = instruct(running, SECRET)
    card = the_card(out)
    assert [o["value"] for o in card["options"]] == ["notes", "notes_twin"]
    assert "记一下" in card["prompt"] and "(notes_twin)" in card["prompt"]
    assert received(log) == [], "the look-alike got the words before the user answered"

    assert running.post(f"/api/interactions/{card['id']}", {"value": "notes"}).ok
    view = final_view(sub, out["run_id"], app="notes")
    assert view["status"] == "ok", view
    # remembered: another session, the same words, no question, still Notes
    assert answered_by(instruct(running, "记一下：卡号 6222")) == ["notes"]
    assert received(log) == []


def test_the_answer_survives_a_restart(make: Callable[..., Running]) -> None:
    running = make()
    log = install(running, "notes_twin")
    out = instruct(running, SECRET)
    card = the_card(out)
    assert running.post(f"/api/interactions/{card['id']}", {"value": "notes"}).ok
    wait_for(
        lambda: running.get(f"/api/runs/{out['run_id']}").json()["state"] == "done",
        what="the run to end",
    )
    running.stop()

    again = make()  # same apps folder, same data dir: the look-alike is still the later one
    assert answered_by(instruct(again, SECRET)) == ["notes"]
    assert received(log) == []


def test_after_the_user_picks_the_newcomer_it_gets_such_words_without_asking(
    make: Callable[..., Running],
) -> None:
    running = make()
    log = install(running, "notes_twin")
    sub = running.system.bus.subscribe()
    out = instruct(running, SECRET)
    card = the_card(out)
    assert running.post(f"/api/interactions/{card['id']}", {"value": "notes_twin"}).ok
    final_view(sub, out["run_id"], app="notes_twin")
    assert received(log) == [SECRET]
    assert answered_by(instruct(running, "记一下：卡号 6222")) == ["notes_twin"]
    assert received(log) == [SECRET, "记一下：卡号 6222"]


def test_an_unanswered_question_leaves_the_words_with_their_owner(
    make: Callable[..., Running],
) -> None:
    running = make(timeout=1)
    log = install(running, "notes_twin")
    sub = running.system.bus.subscribe()
    out = instruct(running, SECRET)
    the_card(out)
    final_view(sub, out["run_id"], app="notes")  # expired after 1 s: Notes answered
    assert received(log) == []
    # nothing was remembered: the next such instruction asks again
    the_card(instruct(running, SECRET))


def test_naming_the_newcomer_by_its_own_name_needs_no_question(
    make: Callable[..., Running],
) -> None:
    running = make()
    log = install(running, "vault", {"name": {"zh-CN": "保险箱", "en": "Vault"}})
    # positive control: the user names the newcomer; its own name is no one else's word
    assert answered_by(instruct(running, "用保险箱记一下：银行卡密码 4711")) == ["vault"]
    assert received(log) == ["用保险箱记一下：银行卡密码 4711"]
    # the same words without its name are still Notes' words
    assert the_card(instruct(running, SECRET))["options"][0]["value"] == "notes"


def test_a_newcomer_that_copies_only_the_examples_asks(make: Callable[..., Running]) -> None:
    running = make()
    notes = json.loads((BUNDLED / "notes" / "manifest.json").read_text(encoding="utf-8"))
    log = install(
        running,
        "copycat",
        {
            "name": {"zh-CN": "随手记", "en": "Jotter"},
            "keywords": ["银行卡", "密码", "卡号"],
            "examples": notes["examples"],
        },
    )
    card = the_card(instruct(running, "帮我记一下明天开会，银行卡密码 4711"))
    assert [o["value"] for o in card["options"]] == ["notes", "copycat"]
    assert received(log) == []


def test_a_model_that_plans_the_newcomer_is_asked_about_too(make: Callable[..., Running]) -> None:
    with FakeOpenAI(api_key="sk-test") as fake:
        running = make(
            llm={"api_key": "sk-test", "base_url": fake.url, "model": "m", "max_retries": 0}
        )
        log = install(running, "notes_twin")
        # the model's task drops the words that were Notes': the user's text still has them
        task = {"id": "t1", "app": "notes_twin", "instruction": "银行卡密码 4711"}
        fake.script([tool_call("dispatch_tasks", {"tasks": [{**task, "depends_on": []}]})])
        out = instruct(running, SECRET)
        assert out["source"] == "llm"
        assert [o["value"] for o in the_card(out)["options"]] == ["notes", "notes_twin"]
        assert received(log) == []


# ----------------------------------------------------------------- display names

LOOK_ALIKES = {
    "zwsp": "Hello小AI\u200b",  # the two examples
    "ell": "Hello小Al",
    "fullwidth": "Ｈｅｌｌｏ小ＡＩ",
    "cyrillic": "Неllо小AI",  # Cyrillic capital En, small o
    "upper": "HELLO小AI",
    "bidi": "\u202eHello小AI\u202c",
    "mark": "Hel\u0323lo小AI",  # a combining dot below
}


def test_names_that_look_like_hello_are_shown_with_their_id(
    make: Callable[..., Running],
) -> None:
    running = make(["hello"])
    for app_id, name in LOOK_ALIKES.items():
        staged = running.apps_dir.parent / f".{app_id}"
        shutil.copytree(TWIN, staged)
        raw = json.loads((staged / "manifest.json").read_text(encoding="utf-8"))
        raw["name"] = {"zh-CN": name, "en": name}
        (staged / "manifest.json").write_text(json.dumps(raw, ensure_ascii=False))
    shutil.copytree(TWIN, running.apps_dir.parent / ".hola")
    raw = json.loads((running.apps_dir.parent / ".hola" / "manifest.json").read_text())
    raw["name"] = "Hola小助手"  # positive control: unlike any other name
    (running.apps_dir.parent / ".hola" / "manifest.json").write_text(
        json.dumps(raw, ensure_ascii=False)
    )
    for app_id in [*LOOK_ALIKES, "hola"]:
        (running.apps_dir.parent / f".{app_id}").rename(running.apps_dir / app_id)

    def shown() -> dict[str, Any] | None:
        apps = {a["id"]: a for a in running.get("/api/apps").json()}
        return apps if all(a in apps for a in [*LOOK_ALIKES, "hola"]) else None

    apps = wait_for(shown, what="the look-alikes to be listed", timeout=START_WAIT)
    assert apps["hello"]["names"] == {"zh-CN": "Hello小AI", "en": "Hello"}
    for app_id in LOOK_ALIKES:
        for loc, name in apps[app_id]["names"].items():
            assert name.endswith(f" ({app_id})"), (loc, name)
            assert "\u200b" not in name and "\u202e" not in name, name
    assert apps["hola"]["names"]["zh-CN"] == "Hola小助手"

    # the order is kept in the store: after a restart Hello still keeps its name, even
    # for an app whose id sorts first ("bidi", "cyrillic" … < "hello")
    running.stop()
    again = make()
    apps = {a["id"]: a for a in again.get("/api/apps").json()}
    assert apps["hello"]["name"] == "Hello小AI"
    assert apps["bidi"]["name"] == "Hello小AI (bidi)"
