"""Shell rules see every command a line would run, however it is spelled.

The policy level runs every spelling (fast); a handful go end to end through
``loopdeck -p`` with the real bash tool, to show that nothing ran.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from agent.permissions.rules import PermissionPolicy, command_identifiers, writes_files
from agent.permissions.shell_commands import parse_line
from app.cli import main

# --- ≥ 40 spellings of a denied command -------------------------------------------

# (command line, verdict under --allow-all-tools --deny-tool 'shell(rm)'):
# "deny" when the rule sees the rm; "ask" when the name is known only when the line runs,
# which autopilot and -p deny (nobody can be asked) and the app asks about.
DENIED: list[tuple[str, str]] = [
    ("rm x", "deny"),
    ("/bin/rm x", "deny"),
    ("./rm x", "deny"),
    ("../bin/rm x", "deny"),
    ("bash -c 'rm x'", "deny"),
    ('sh -c "rm x"', "deny"),
    ("zsh -c 'rm x'", "deny"),
    ("dash -c 'rm x'", "deny"),
    ("bash -euo pipefail -c 'ls; rm x'", "deny"),
    ("bash -lc 'bash -c \"rm x\"'", "deny"),
    ("eval rm x", "deny"),
    ('eval "rm x"', "deny"),
    ("{ rm x; }", "deny"),
    ("(rm x)", "deny"),
    ("if true; then rm x; fi", "deny"),
    ("if false; then :; elif true; then :; else rm x; fi", "deny"),
    ("for f in x; do rm $f; done", "deny"),
    ("for ((i=0; i<1; i++)); do rm x; done", "deny"),
    ("while false; do rm x; done", "deny"),
    ("until true; do rm x; done", "deny"),
    ("select f in x; do rm $f; done", "deny"),
    ("case a in a) rm x;; esac", "deny"),
    ("f() { rm x; }; f", "deny"),
    ("function g { rm x; }", "deny"),
    ("! rm x", "deny"),
    ("nice -n 5 rm x", "deny"),
    ("nice rm x", "deny"),
    ("timeout 5 rm x", "deny"),
    ("timeout -s KILL -k 1 5 rm x", "deny"),
    ("exec -a y rm x", "deny"),
    ("sudo rm x", "deny"),
    ("sudo -u root -- rm x", "deny"),
    ("env A=1 rm x", "deny"),
    ("env -i PATH=/bin rm x", "deny"),
    ("A=1 rm x", "deny"),
    ("command rm x", "deny"),
    ("builtin rm x", "deny"),
    ("nohup rm x &", "deny"),
    ("time rm x", "deny"),
    ("stdbuf -o0 rm x", "deny"),
    ("setsid rm x", "deny"),
    ("coproc rm x", "deny"),
    ("xargs rm < list", "deny"),
    ("ls | xargs -0 -n 1 rm", "deny"),
    ("find . -name x -delete", "deny"),
    ("find . -exec rm {} \\;", "deny"),
    ("find . -execdir rm {} +", "deny"),
    ("find . -ok rm {} ';'", "deny"),
    ("echo $(rm x)", "deny"),
    ("echo `rm x`", "deny"),
    ('echo "$(rm x)"', "deny"),
    ("echo ${y:-$(rm x)}", "deny"),
    ("a=$(rm x)", "deny"),
    ("export A=$(rm x)", "deny"),
    ("[[ -n $(rm x) ]]", "deny"),
    ("cat <(rm x)", "deny"),
    ("ls > >(rm x)", "deny"),
    ("cat <<EOF\n$(rm x)\nEOF", "deny"),
    ("true && rm x", "deny"),
    ("false || rm x", "deny"),
    ("ls | rm x", "deny"),
    ("ls |& rm x", "deny"),
    ("ls; rm x", "deny"),
    ("ls & rm x", "deny"),
    ("ls\nrm x", "deny"),
    ("\\rm x", "deny"),
    ('"rm" x', "deny"),
    ("'r''m' x", "deny"),
    ("r\\m x", "deny"),
    ("rm -rf x 2>/dev/null", "deny"),
    ("busybox rm x", "deny"),
    # Compounds after time/coproc/!, which the grammar reads as words.
    ("time { rm x; }", "deny"),
    ("time if true; then rm x; fi", "deny"),
    ("! { rm x; }", "deny"),
    ("coproc NAME { rm x; }", "deny"),
    ("su -c 'rm x'", "deny"),
    ("watch -n 1 rm x", "deny"),
    ("trap 'rm x' EXIT", "deny"),
    ("alias r='rm -f'", "deny"),
    # Code kept in a variable that bash expands again (xtrace prompts, arithmetic).
    ("PS4='$(rm x)'; set -x; ls", "deny"),
    ("i='a[$(rm x)]'; echo $((i))", "deny"),
    # Names known only when the line runs.
    ("$(echo rm) x", "ask"),
    ("`echo rm` x", "ask"),
    ("a=rm; $a x", "ask"),
    ('a=rm; "$a" x', "ask"),
    ("${a:-rm} x", "ask"),
    ("{rm,x}", "ask"),
    ("$'rm' x", "ask"),
    ('$"rm" x', "ask"),
    ("/bin/r? x", "ask"),
    ("/bin/r[m] x", "ask"),
    ("/bin/r* x", "ask"),
    ('eval "$x"', "ask"),
    ("eval $x", "ask"),
    ('bash -c "$x"', "ask"),
    ('bash -c -- "$x"', "ask"),
    ("echo rm x | bash", "ask"),
    ("bash < script", "ask"),
    ("sh -s < script", "ask"),
    ("timeout $t rm x", "ask"),
    ("find . $action", "ask"),
    ("find . -exec $cmd {} \\;", "ask"),
    ("echo ${p@P}", "ask"),  # a prompt expansion runs what the value says
    ("echo rm x | xargs -I{} bash -c {}", "ask"),
    ("source <(echo rm x)", "ask"),
    (". $script", "ask"),
    ("su", "ask"),
    ("if then fi rm x", "deny"),
    ("echo x (", "ask"),  # does not parse: unknown, never allowed
]


def test_the_table_has_at_least_forty_spellings() -> None:
    assert len(DENIED) >= 40
    assert len({line for line, _ in DENIED}) == len(DENIED)


@pytest.mark.parametrize(("command", "verdict"), DENIED)
def test_no_spelling_of_a_denied_command_is_allowed(command: str, verdict: str) -> None:
    policy = PermissionPolicy.from_flags([], ["shell(rm)"], allow_all=True)
    assert policy.decide("shell", "bash", command)[0] == verdict


@pytest.mark.parametrize(("command", "verdict"), DENIED)
def test_a_narrow_allow_list_allows_none_of_them(command: str, verdict: str) -> None:
    policy = PermissionPolicy.from_flags(["shell(ls)", "shell(echo)", "shell(cat)"])
    assert policy.decide("shell", "bash", command)[0] == "ask"


# --- what rules must still allow ---------------------------------------------------

USABLE = ["shell(git:*)", "shell(ls)", "shell(grep)", "shell(head)", "shell(wc)"]
ALLOWED = [
    "git status",
    "git status && git diff",
    "git status; git diff --stat",
    "ls | grep x",
    "git log --oneline | head -5",
    "ls -la src | grep '\\.py$' | wc -l",
    "grep -rn 'TODO' . | head",
    "(git status)",
    "{ git status; git diff; }",
    "if git diff --quiet; then ls; fi",
    "ls $(git rev-parse --show-toplevel)",
    "git commit -m 'fix the parser'",
    "git diff > changes.patch",
    "git diff 2>&1 | head",
    "ls 2>/dev/null",
    "grep -c x *.py",
]


@pytest.mark.parametrize("command", ALLOWED)
def test_pipelines_of_allowed_tools_still_pass(command: str, tmp_path: Path) -> None:
    policy = PermissionPolicy.from_flags(USABLE)
    assert policy.decide("shell", "bash", command, [tmp_path])[0] == "allow"
    # …and deny rules for something else do not get in their way.
    everything = PermissionPolicy.from_flags([], ["shell(rm)"], allow_all=True)
    assert everything.decide("shell", "bash", command, [tmp_path])[0] == "allow"


@pytest.mark.parametrize(
    "command",
    [
        "git status && make",
        "./ls",  # a file in the workspace, not the ls the rule allows
        "/tmp/git status",
        "sudo git status",  # sudo needs a rule of its own
        "$cmd status",
        "ls | xargs cat",
        "find . -name x",
    ],
)
def test_what_the_rules_do_not_name_still_asks(command: str, tmp_path: Path) -> None:
    policy = PermissionPolicy.from_flags(USABLE)
    assert policy.decide("shell", "bash", command, [tmp_path])[0] == "ask"


@pytest.mark.parametrize(
    ("allow", "deny", "command", "verdict"),
    [
        (["shell(sudo apt)"], [], "sudo apt install x", "allow"),
        (["shell(apt)"], [], "sudo apt install x", "ask"),
        (["shell"], ["shell(sudo)"], "sudo ls", "deny"),
        (["shell"], ["shell(timeout)"], "timeout 5 ls", "deny"),
        (["shell"], ["shell(bash)"], "bash -c 'ls'", "deny"),
        (["shell(pytest)"], [], "timeout 60 pytest -q", "allow"),
        (["shell(ls)"], [], "bash -c 'ls'", "allow"),
        (["shell(ls)"], [], "eval 'ls -la'", "allow"),
        (["shell"], ["shell(eval)"], "eval ls", "deny"),
        # A word the deny rule names is known only when it runs: ask, never allow.
        (["shell"], ["shell(git push)"], "git $cmd origin", "ask"),
        (["shell"], ["shell(git push)"], "ls | xargs git", "ask"),
        (["shell"], ["shell(git push)"], "git pull $remote", "allow"),
        # An unknown name passes only when every command would.
        ([], [], "$a x", "ask"),
        (["shell(ls)"], [], "$a x", "ask"),
        (["shell"], [], "$a x", "allow"),
        (["shell"], ["shell(git push)"], "$a x", "ask"),
        (["shell"], ["bash"], "$a x", "deny"),
    ],
)
def test_wrappers_privilege_and_unknown_words(
    allow: list[str], deny: list[str], command: str, verdict: str
) -> None:
    policy = PermissionPolicy.from_flags(allow, deny)
    assert policy.decide("shell", "bash", command)[0] == verdict


def test_unknown_names_allowed_only_with_every_tool_allowed_and_no_deny_rule() -> None:
    assert PermissionPolicy(allow_all=True).decide("shell", "bash", "$a x")[0] == "allow"
    assert PermissionPolicy(allow_all=True).decide("shell", "bash", "if then")[0] == "allow"


def test_what_a_session_approval_remembers() -> None:
    assert command_identifiers("timeout 60 pytest -q && git diff") == ["pytest", "git"]
    assert command_identifiers("sudo apt install x") == ["sudo"]
    assert command_identifiers("a=rm; $a x") == []
    policy = PermissionPolicy()
    policy.approve_for_session("shell", "a=ls; $a x")
    assert policy.decide("shell", "bash", "$a x")[0] == "ask"


def test_the_parser_reports_commands_in_order_with_their_wrappers_and_redirects() -> None:
    parsed = parse_line("sudo -u x nice rm -rf $d > out.log 2>&1 && echo `id` | tee -a ../log")
    assert [(c.words, [w.name for w in c.wrappers]) for c in parsed.commands] == [
        (("rm", "-rf", None), ["sudo", "nice"]),
        (("echo", None), []),
        (("id",), []),
        (("tee", "-a", "../log"), []),
    ]
    assert parsed.commands[0].open_ended  # an unquoted $d may be several words
    assert [r.target for r in parsed.redirects] == ["out.log"]
    assert not parsed.changes_directory
    assert parse_line("cd sub && make > log").changes_directory


def test_long_and_deeply_nested_lines_are_read_or_refused_never_crash() -> None:
    policy = PermissionPolicy.from_flags(["shell(ls)"], ["shell(rm)"])
    assert policy.decide("shell", "bash", " && ".join(["ls"] * 3000))[0] == "allow"
    assert policy.decide("shell", "bash", "$(" * 500 + "rm" + ")" * 500)[0] == "deny"
    assert policy.decide("shell", "bash", "(" * 3000 + "ls" + ")" * 3000)[0] == "ask"


def test_an_escaped_space_is_part_of_the_name() -> None:
    # ``rm\ x`` runs a program called "rm x", not rm: no rule about rm applies.
    assert [c.words for c in parse_line("rm\\ x").commands] == [("rm x",)]


# --- output redirections -----------------------------------------------------------


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (ws / "escape").symlink_to(tmp_path / "outside")
    return ws


@pytest.mark.parametrize(
    ("command", "verdict"),
    [
        ("echo hi > inside.txt", "allow"),
        ("echo hi >> sub/log", "allow"),
        ("echo hi > /dev/null 2>&1", "allow"),
        ("echo hi >&2", "allow"),
        ("echo hi 2>/dev/stderr", "allow"),
        ("echo hi > ../outside/x", "ask"),
        ("echo hi >> ../outside/x", "ask"),
        ("echo hi &> ../outside/x", "ask"),
        ("echo hi &>> ../outside/x", "ask"),
        ("echo hi >| ../outside/x", "ask"),
        ("echo hi 2> ../outside/x", "ask"),
        ("echo hi >& ../outside/x", "ask"),
        ("echo hi > /etc/passwd", "ask"),
        ("echo hi > escape/x", "ask"),  # a symlink inside that points out
        ("echo hi > $f", "ask"),  # a place known only when it runs
        ("echo hi > ~/x", "ask"),
        ("cd .. && echo hi > x", "ask"),  # relative to where cd went
        ("echo $(echo hi > ../outside/x)", "ask"),
        ("bash -c 'echo hi > ../outside/x'", "ask"),
        ("echo hi < ../outside/x", "allow"),  # reading is not writing
    ],
)
def test_redirections_outside_the_workspace_need_write_permission(
    workspace: Path, command: str, verdict: str
) -> None:
    policy = PermissionPolicy.from_flags(["shell(echo)", "shell(cd)"])
    assert policy.decide("shell", "bash", command, [workspace])[0] == verdict


def test_added_directories_allow_all_tools_and_write_deny_rules(workspace: Path) -> None:
    outside = workspace.parent / "outside"
    line = "echo hi > ../outside/x"
    narrow = PermissionPolicy.from_flags(["shell(echo)"])
    assert narrow.decide("shell", "bash", line, [workspace, outside])[0] == "allow"
    everything = PermissionPolicy(allow_all=True)
    assert everything.decide("shell", "bash", line, [workspace])[0] == "allow"
    no_writes = PermissionPolicy.from_flags(["shell"], ["write"], allow_all=True)
    verdict, rule = no_writes.decide("shell", "bash", line, [workspace])
    assert (verdict, str(rule)) == ("deny", "write")
    assert no_writes.decide("shell", "bash", "echo hi > x", [workspace])[0] == "allow"


def test_the_wire_says_whether_a_line_writes_files() -> None:
    assert writes_files("ls > out.txt")
    assert writes_files("ls >> $f")
    assert not writes_files("ls > /dev/null 2>&1")
    assert not writes_files("echo '>' x")  # a quoted > is no redirection


# --- end to end: loopdeck -p with the real bash tool ----------------------------------

SPELLINGS = [
    "/usr/bin/touch made",
    "bash -c 'touch made'",
    "eval touch made",
    "{ touch made; }",
    "nice -n 5 timeout 5 touch made",
    "find . -maxdepth 0 -exec touch made \\;",
    "echo $(touch made)",
    "a=touch; $a made",
    "$'touch' made",
    "t{o,}uch made",
]


def run_headless(
    workspace: Path, commands: list[str], *flags: str
) -> tuple[int, list[dict[str, Any]]]:
    calls = [{"name": "bash", "arguments": {"command": c}} for c in commands]
    script = workspace.parent / "script.json"
    turns = [{"text": "", "tool_calls": calls}, {"text": "done"}]
    script.write_text(json.dumps({"turns": turns}), "utf-8")
    code = main(["-p", "go", "--model", f"scripted:{script}", "--cwd", str(workspace), *flags])
    home = Path(os.environ["LOOPDECK_HOME"])
    (log,) = (home / "session-state").glob("*/events.jsonl")
    return code, [json.loads(line) for line in log.read_text("utf-8").splitlines() if line]


def test_nothing_runs_end_to_end_under_p(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    # The last call is allowed and must run: the bash tool itself works.
    code, events = run_headless(
        ws,
        [*SPELLINGS, "echo ran > allowed.txt"],
        "--allow-all-tools",
        "--deny-tool",
        "shell(touch)",
    )
    assert code == 0
    assert not (ws / "made").exists()
    assert (ws / "allowed.txt").read_text() == "ran\n"
    results = [e["data"]["result"]["kind"] for e in events if e["type"] == "permission.completed"]
    assert results[-1] == "approved"
    assert all(kind.startswith("denied") for kind in results[:-1])
    assert len(results) == len(SPELLINGS) + 1
    done = [e["data"] for e in events if e["type"] == "tool.execution_complete"]
    assert [d["success"] for d in done] == [False] * len(SPELLINGS) + [True]
    messages = [d["error"]["message"] for d in done[:-1]]
    assert "is denied by the rule shell(touch)" in messages[0]
    assert (
        "`a=touch; $a made` needs approval (`$a made`: its command name is known only"
        in (messages[7])
    )
    # With a deny rule in force, allowing more would not help: only spelling it out does.
    assert messages[7].endswith("Write the command out plainly so the rules can check it.")


def test_a_narrow_allow_does_not_let_a_redirect_out_end_to_end(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "outside").mkdir()
    code, events = run_headless(
        ws, ["echo hi > ../outside/x", "echo hi > inside.txt"], "--allow-tool", "shell(echo)"
    )
    assert code == 0
    assert not (tmp_path / "outside" / "x").exists()
    assert (ws / "inside.txt").exists()
    done = [e["data"] for e in events if e["type"] == "tool.execution_complete"]
    assert [d["success"] for d in done] == [False, True]
    message = done[0]["error"]["message"]
    assert "`> ../outside/x`: it writes " in message and "outside the workspace" in message
    assert "--add-dir" in message
