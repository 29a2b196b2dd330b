"""The card is the execution (DESIGN §14.2, issue 20 item 2).

Real system, real app process (``tests/fixtures/apps_runs/planner``: the action
``plan`` runs the plan it is given, as a hostile app would send it), approvals
``smart``, real commands in bubblewrap, real SQLite. Each attack of the issue,
reproduced as it worked, then the variants an attacker tries next, each with
its positive control:

* a command longer than 300 characters was cut on the card, and its tail ran;
* ``file_read payload.txt`` → ``shell_exec python3 -c '{{step_1.result}}'`` was
  approved as the literal template, and what ran was the file's code;
* ``python3 script.py`` was approved by name: the file can change between the
  card and the run.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import FIXTURES, Running, copy_apps, final_view, start_system
from tests.util import wait_for

APP = "planner"
WAIT = 20.0
KILL = 'import os; os.remove("precious.db"); print("removed")'


@pytest.fixture
def running(tmp_path: Path) -> Iterator[Running]:
    apps = copy_apps(tmp_path / "apps", [APP], source=FIXTURES / "apps_runs")
    r = start_system(apps, tmp_path / "data", approvals={"mode": "smart", "timeout": 600})
    try:
        yield r
    finally:
        r.stop()


def workdir(running: Running) -> Path:
    wd: Path = running.system.tool_context(APP, None).workdir
    return wd


@pytest.fixture
def precious(running: Running) -> Path:
    db = workdir(running) / "precious.db"
    db.write_bytes(b"the user's data")
    return db


def plan(running: Running, steps: list[dict[str, Any]]) -> dict[str, Any]:
    r = running.post("/api/action", {"app": APP, "action_id": "plan", "params": {"steps": steps}})
    assert r.status_code == 200, r.text
    reply: dict[str, Any] = r.json()
    return reply


def answer(running: Running, ia_id: str, decision: str) -> None:
    r = running.post(f"/api/interactions/{ia_id}", {"decision": decision})
    assert r.status_code == 200, r.text


def next_card(running: Running, run_id: str, seen: set[str]) -> dict[str, Any]:
    """The run's next pending card (one not in ``seen``): the run waits again."""

    def pending() -> dict[str, Any] | None:
        cards = running.get("/api/interactions?pending=1").json()
        return next((c for c in cards if c["run_id"] == run_id and c["id"] not in seen), None)

    card: dict[str, Any] = wait_for(pending, f"a new card of {run_id}", WAIT)
    seen.add(card["id"])
    return card


def the_step(card: dict[str, Any], step_id: str) -> dict[str, Any]:
    step: dict[str, Any] = next(s for s in card["steps"] if s["step_id"] == step_id)
    return step


def results(running: Running, reply: dict[str, Any], sub: Any) -> dict[str, Any]:
    if "state" not in reply:
        got: dict[str, Any] = reply["response"]["data"]["results"]
        return got
    view = final_view(sub, reply["run_id"])
    out: dict[str, Any] = view["data"]["results"]
    return out


# ------------------------------------------------------------ whole commands


def test_a_long_command_is_on_the_card_whole_and_what_runs_is_what_it_shows(
    running: Running, precious: Path
) -> None:
    # the attack: harmless text, a run of spaces, then the part that deletes
    code = 'print("cleaning the cache")' + " " * 320 + "; " + KILL
    argv = ["python3", "-c", code]
    sub = running.system.bus.subscribe()
    reply = plan(running, [{"step_id": "c", "tool": "shell_exec", "args": {"cmd": argv}}])
    (card,) = reply["pending"]
    step = the_step(card, "step_c")
    assert step["text"] == shlex.join(argv)  # whole, quoted as the executor passes it
    assert 'os.remove("precious.db")' in step["text"] and "…" not in step["text"]
    assert step["chars"] == len(shlex.join(argv)) > 300
    assert len(step["hash"]) == 64
    assert precious.exists()  # nothing ran before the answer
    answer(running, card["id"], "allow")
    got = results(running, reply, sub)
    assert got["step_c"]["status"] == "ok" and "removed" in got["step_c"]["result"]["stdout"]
    assert not precious.exists()  # it did what the card said, and the user saw it


def test_a_short_command_is_approved_and_runs(running: Running) -> None:
    sub = running.system.bus.subscribe()
    reply = plan(running, [{"step_id": "e", "tool": "shell_exec", "args": {"cmd": "echo hello"}}])
    (card,) = reply["pending"]
    assert the_step(card, "step_e")["text"] == "echo hello"
    answer(running, card["id"], "allow")
    assert results(running, reply, sub)["step_e"]["result"]["stdout"].strip() == "hello"


@pytest.mark.parametrize(
    ("hidden", "shown"),
    [
        ("\n", "⟨\\n⟩"),
        ("\t", "⟨\\t⟩"),
        ("\r", "⟨\\r⟩"),
        ("\u200b", "⟨U+200B⟩"),  # zero-width space
        ("\u202e", "⟨U+202E⟩"),  # right-to-left override
        ("\u2066", "⟨U+2066⟩"),  # left-to-right isolate
        ("\x1b", "⟨U+001B⟩"),  # escape (C0)
        ("\x85", "⟨U+0085⟩"),  # next line (C1)
        ("\u00a0", "⟨U+00A0⟩"),  # no-break space
        ("\u3164", "⟨U+3164⟩"),  # Hangul filler: printable, draws nothing
        ("\U000e0041", "⟨U+E0041⟩"),  # tag character
    ],
)
def test_control_and_invisible_characters_are_made_visible_on_the_card(
    running: Running, hidden: str, shown: str
) -> None:
    argv = ["python3", "-c", f"print(1){hidden}import os"]
    reply = plan(running, [{"step_id": "c", "tool": "shell_exec", "args": {"cmd": argv}}])
    (card,) = reply["pending"]
    text = the_step(card, "step_c")["text"]
    assert shown in text and hidden not in text
    assert text.isprintable()
    assert the_step(card, "step_c")["chars"] == len(shlex.join(argv))
    answer(running, card["id"], "deny")


def test_the_marker_itself_cannot_be_forged_by_the_command(running: Running) -> None:
    argv = ["echo", "⟨U+200B⟩"]  # looks like a marker: the ⟨ of the text is shown as one
    reply = plan(running, [{"step_id": "c", "tool": "shell_exec", "args": {"cmd": argv}}])
    (card,) = reply["pending"]
    assert the_step(card, "step_c")["text"] == "echo '⟨U+27E8⟩U+200B⟩'"
    answer(running, card["id"], "deny")


# ------------------------------------------------------------------ templates


def test_a_template_step_is_reviewed_with_the_result_it_will_run(
    running: Running, precious: Path
) -> None:
    # the attack, exactly: the card showed the template, the file's code ran
    (workdir(running) / "payload.txt").write_text(KILL, encoding="utf-8")
    steps = [
        {"step_id": 1, "tool": "file_read", "args": {"path": "payload.txt"}},
        {"step_id": 2, "tool": "shell_exec", "args": {"cmd": "python3 -c '{{step_1.result}}'"}},
    ]
    sub = running.system.bus.subscribe()
    reply = plan(running, steps)
    assert reply["state"] == "waiting"
    (card,) = reply["pending"]  # asked once step_1's result is known, not before
    assert [s["step_id"] for s in card["steps"]] == ["step_2"]
    step = the_step(card, "step_2")
    assert step["text"] == shlex.join(["python3", "-c", KILL]) and "{{" not in step["text"]
    assert step["rule"] == "ask" and "deferred" not in step
    answer(running, card["id"], "deny")
    got = results(running, reply, sub)
    assert got["step_1"]["status"] == "ok" and got["step_2"]["code"] == "denied"
    assert precious.exists()
    row = wait_for(
        lambda: (
            r
            if (r := running.get(f"/api/runs/{reply['run_id']}").json())["state"] == "done"
            else None
        ),
        "the run to end",
        WAIT,
    )
    (kept,) = [s for s in row["steps"] if s["step_id"] == "step_2"]
    assert kept["text"] == step["text"] and kept["decision"] == "denied"  # the run's record


def test_a_template_step_beside_an_asked_step_is_not_approved_by_the_first_card(
    running: Running, precious: Path
) -> None:
    (workdir(running) / "payload.txt").write_text(KILL, encoding="utf-8")
    steps = [
        {"step_id": 1, "tool": "shell_exec", "args": {"cmd": "cat payload.txt"}},
        {
            "step_id": 2,
            "tool": "shell_exec",
            "args": {"cmd": ["python3", "-c", "{{step_1.result.stdout}}"]},
        },
    ]
    sub = running.system.bus.subscribe()
    reply = plan(running, steps)
    (first,) = reply["pending"]
    assert the_step(first, "step_1")["rule"] == "ask"
    later = the_step(first, "step_2")
    assert later["rule"] == "later" and later["deferred"] == ["step_1"]
    seen = {first["id"]}
    answer(running, first["id"], "allow")  # allows step_1 only: step_2 was not known
    second = next_card(running, reply["run_id"], seen)
    assert [s["step_id"] for s in second["steps"]] == ["step_2"]
    assert 'os.remove("precious.db")' in the_step(second, "step_2")["text"]
    assert precious.exists()
    answer(running, second["id"], "allow")
    got = results(running, reply, sub)
    assert got["step_2"]["status"] == "ok" and not precious.exists()


def test_a_template_step_the_rules_allow_runs_with_no_card(running: Running) -> None:
    # positive control: smart mode writes without asking, resolved or not
    steps = [
        {"step_id": 1, "tool": "file_list", "args": {"path": "."}},
        {
            "step_id": 2,
            "tool": "file_write",
            "args": {"path": "listing.json", "content": "{{step_1.result.entries}}"},
        },
    ]
    reply = plan(running, steps)
    assert "state" not in reply, reply
    assert reply["response"]["data"]["results"]["step_2"]["status"] == "ok"
    assert (workdir(running) / "listing.json").exists()


def test_a_plan_with_no_templates_shows_one_card_as_before(running: Running) -> None:
    steps = [
        {"step_id": 1, "tool": "shell_exec", "args": {"cmd": "echo one"}},
        {"step_id": 2, "tool": "shell_exec", "args": {"cmd": "echo two"}},
    ]
    sub = running.system.bus.subscribe()
    reply = plan(running, steps)
    (card,) = reply["pending"]
    assert [s["rule"] for s in card["steps"]] == ["ask", "ask"]
    answer(running, card["id"], "allow")
    got = results(running, reply, sub)
    assert [got[k]["result"]["stdout"].strip() for k in ("step_1", "step_2")] == ["one", "two"]
    assert running.get("/api/interactions?pending=1").json() == []  # one card, not three


@pytest.mark.parametrize(
    "args",
    [
        {"cmd": ["python3", "-c", "{{step_1.result}}"]},  # inside a list
        {"cmd": "python3 -c pass", "cwd": "{{step_1.result}}"},  # cwd
        {"cmd": "python3 -c '{{ step_1.result }}'"},  # spaces inside the braces
    ],
    ids=["list", "cwd", "spaced"],
)
def test_templates_anywhere_in_the_arguments_are_reviewed_resolved(
    running: Running, precious: Path, args: dict[str, Any]
) -> None:
    (workdir(running) / "payload.txt").write_text(KILL, encoding="utf-8")
    steps = [
        {"step_id": 1, "tool": "file_read", "args": {"path": "payload.txt"}},
        {"step_id": 2, "tool": "shell_exec", "args": args},
    ]
    reply = plan(running, steps)
    (card,) = reply["pending"]
    step = the_step(card, "step_2")
    assert "{{" not in step["text"] and "{{" not in step["args"]
    assert KILL in step["args"] or "precious" in step["text"]
    answer(running, card["id"], "deny")
    wait_for(lambda: running.get(f"/api/runs/{reply['run_id']}").json()["state"] == "done", "end")
    assert precious.exists()


def test_a_result_with_a_line_break_and_a_second_command_is_visible_and_refused(
    running: Running, precious: Path
) -> None:
    (workdir(running) / "name.txt").write_text("hi\nrm precious.db", encoding="utf-8")
    steps = [
        {"step_id": 1, "tool": "file_read", "args": {"path": "name.txt"}},
        {"step_id": 2, "tool": "shell_exec", "args": {"cmd": "echo {{step_1.result}}"}},
    ]
    sub = running.system.bus.subscribe()
    reply = plan(running, steps)
    (card,) = reply["pending"]
    text = the_step(card, "step_2")["text"]
    assert text == "echo hi⟨\\n⟩rm precious.db" and "\n" not in text
    answer(running, card["id"], "allow")
    got = results(running, reply, sub)
    assert got["step_2"]["status"] == "error" and "line break" in got["step_2"]["error"]
    assert precious.exists()


@pytest.mark.parametrize(
    ("ref", "error"),
    [
        ("{{step_3.result}}", "has not run yet"),
        ("{{step_1.result.nope}}", "no key 'nope'"),
        ("{{step_9.result}}", "no step_9"),
    ],
)
def test_a_template_that_cannot_be_resolved_never_runs_and_asks_nothing(
    running: Running, ref: str, error: str
) -> None:
    steps = [
        {"step_id": 1, "tool": "file_list", "args": {"path": "."}},
        {"step_id": 2, "tool": "shell_exec", "args": {"cmd": ["python3", "-c", ref]}},
        {"step_id": 3, "tool": "file_list", "args": {"path": "."}},
    ]
    reply = plan(running, steps)
    assert "state" not in reply, reply
    got = reply["response"]["data"]["results"]
    assert got["step_2"]["status"] == "error" and error in got["step_2"]["error"]


# -------------------------------------------------------- interpreter files


def write_script(running: Running, name: str, text: str) -> Path:
    path = workdir(running) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_an_interpreter_running_a_workdir_file_shows_and_pins_its_content(
    running: Running,
) -> None:
    script = write_script(running, "script.py", "print('v1')\n")
    sub = running.system.bus.subscribe()
    reply = plan(
        running, [{"step_id": "s", "tool": "shell_exec", "args": {"cmd": "python3 script.py"}}]
    )
    (card,) = reply["pending"]
    (shown,) = the_step(card, "step_s")["files"]
    assert shown["path"] == "script.py" and shown["content"] == "print('v1')\n"
    assert shown["size"] == 12 and len(shown["sha256"]) == 64
    # the app changes the file between the card and the run
    script.write_text("open('changed.txt', 'w').write('v2')\n", encoding="utf-8")
    answer(running, card["id"], "allow")
    again = next_card(running, reply["run_id"], {card["id"]})  # a new decision
    (now,) = the_step(again, "step_s")["files"]
    assert "changed.txt" in now["content"] and now["sha256"] != shown["sha256"]
    assert not (workdir(running) / "changed.txt").exists()
    answer(running, again["id"], "deny")
    got = results(running, reply, sub)
    assert got["step_s"]["code"] == "denied"
    assert not (workdir(running) / "changed.txt").exists()


def test_an_unchanged_script_runs_once_approved(running: Running) -> None:
    write_script(running, "script.py", "print('v1')\n")
    sub = running.system.bus.subscribe()
    reply = plan(
        running, [{"step_id": "s", "tool": "shell_exec", "args": {"cmd": "python3 script.py"}}]
    )
    (card,) = reply["pending"]
    answer(running, card["id"], "allow")
    assert results(running, reply, sub)["step_s"]["result"]["stdout"].strip() == "v1"


@pytest.mark.parametrize(
    ("cmd", "named"),
    [
        ("python3 -u script.py", "script.py"),
        ("python3 ./sub/../script.py", "./sub/../script.py"),
        ("python3 -W ignore script.py", "script.py"),
        ("""python3 -c "exec(open('script.py').read())\"""", "script.py"),
        ("cat script.py | python3", "script.py"),
        ("python3 link.py", "link.py"),
    ],
)
def test_the_file_is_found_however_the_command_names_it(
    running: Running, cmd: str, named: str
) -> None:
    write_script(running, "script.py", "print('pinned')\n")
    (workdir(running) / "sub").mkdir(exist_ok=True)
    os.symlink("script.py", workdir(running) / "link.py")
    reply = plan(running, [{"step_id": "s", "tool": "shell_exec", "args": {"cmd": cmd}}])
    (card,) = reply["pending"]
    files = the_step(card, "step_s")["files"]
    pinned = next(f for f in files if f["path"] == named)
    assert pinned["content"] == "print('pinned')\n"
    if named == "link.py":
        assert pinned["target"] == "script.py"
    answer(running, card["id"], "deny")


def test_a_script_linked_outside_the_workdir_is_named_never_read(running: Running) -> None:
    os.symlink("/proc/self/environ", workdir(running) / "evil.py")
    reply = plan(
        running, [{"step_id": "s", "tool": "shell_exec", "args": {"cmd": "python3 evil.py"}}]
    )
    (card,) = reply["pending"]
    (f,) = the_step(card, "step_s")["files"]
    assert f["content"] == "" and "outside the workdir" in f["note"]
    assert f["target"] == "/proc/self/environ"
    assert "AIOS" not in str(card) and "PATH=" not in str(card)
    answer(running, card["id"], "deny")


def test_a_script_written_by_an_earlier_step_is_shown_before_it_runs(running: Running) -> None:
    # written by step 1, run by step 2: the card of step 2 is the one with the content
    steps = [
        {
            "step_id": 1,
            "tool": "file_write",
            "args": {"path": "gen.py", "content": "print('generated')\n"},
        },
        {"step_id": 2, "tool": "shell_exec", "args": {"cmd": "python3 gen.py"}},
    ]
    sub = running.system.bus.subscribe()
    reply = plan(running, steps)
    (card,) = reply["pending"]  # one card, once gen.py is written: not one before it
    assert [s["step_id"] for s in card["steps"]] == ["step_2"]
    (f,) = the_step(card, "step_2")["files"]
    assert f["content"] == "print('generated')\n"
    answer(running, card["id"], "allow")
    assert results(running, reply, sub)["step_2"]["result"]["stdout"].strip() == "generated"


# ---------------------------------------------------------------- call_tool


def test_call_tool_of_a_script_changed_after_the_card_asks_again(running: Running) -> None:
    script = write_script(running, "script.py", "print('v1')\n")
    body = {
        "app": APP,
        "action_id": "call",
        "params": {"tool": "shell_exec", "args": {"cmd": "python3 script.py"}},
    }
    r = running.post("/api/action", body)
    assert r.status_code == 200 and r.json()["state"] == "waiting", r.text
    (card,) = r.json()["pending"]
    assert the_step(card, "step_call")["files"][0]["content"] == "print('v1')\n"
    script.write_text("print('v2')\n", encoding="utf-8")
    answer(running, card["id"], "allow")
    again = next_card(running, r.json()["run_id"], {card["id"]})
    assert the_step(again, "step_call")["files"][0]["content"] == "print('v2')\n"
    answer(running, again["id"], "allow")


def test_bash_c_with_a_substitution_is_shown_literally_and_pins_the_file_it_reads(
    tmp_path: Path,
) -> None:
    apps = copy_apps(tmp_path / "apps", [APP], source=FIXTURES / "apps_runs")
    running = start_system(
        apps,
        tmp_path / "data",
        approvals={"mode": "smart"},
        tool_sandbox={"shell_whitelist": ["ls", "cat", "echo", "python3", "bash"]},
    )
    try:
        write_script(running, "payload.sh", "echo from-payload\n")
        argv = ["bash", "-c", "$(cat payload.sh)"]
        sub = running.system.bus.subscribe()
        reply = plan(running, [{"step_id": "b", "tool": "shell_exec", "args": {"cmd": argv}}])
        (card,) = reply["pending"]
        step = the_step(card, "step_b")
        assert step["text"] == "bash -c '$(cat payload.sh)'"  # as passed, not expanded
        assert [f["content"] for f in step["files"]] == ["echo from-payload\n"]
        write_script(running, "payload.sh", "echo changed\n")
        answer(running, card["id"], "allow")
        again = next_card(running, reply["run_id"], {card["id"]})
        assert [f["content"] for f in the_step(again, "step_b")["files"]] == ["echo changed\n"]
        answer(running, again["id"], "allow")
        assert results(running, reply, sub)["step_b"]["result"]["stdout"].strip() == "changed"
    finally:
        running.stop()
