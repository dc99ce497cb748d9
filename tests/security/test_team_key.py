"""The team key is configured on editors and workers by a key file, checked before use, and never shown.

The editor names it with `warpwise.verification.teamKeyFile`, the command line with `warpwise --team-key-file`
(every subcommand: `verify`, `optimize`, `cache`, `worker`, `serve`), both falling back to
`$WARPWISE_TEAM_KEY_FILE`. A missing file, a directory, a file other users can read, an empty or short key is
refused with one line naming the file and what to do; the key's bytes appear in no message, log line, status or
export.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.security.test_forged_results import KEY, key_on, lines, measured, record
from tests.server.conftest import KERNELS, PINNED, Session
from warpwise.server.settings import parse_settings
from warpwise.server.team_key import configure_team_key
from warpwise.verify import provenance
from warpwise.verify.cache import ResultCache
from warpwise.verify.types import Status


@pytest.fixture(autouse=True)
def _no_key(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(provenance.KEY_ENV, raising=False)
    monkeypatch.delenv(provenance.KEY_FILE_ENV, raising=False)
    provenance.configure_key_file(None)
    yield
    provenance.configure_key_file(None)


def key_file(tmp_path: Path, data: bytes = KEY + b"\n", mode: int = 0o600, name: str = "team.key") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    path.chmod(mode)
    return path


def test_a_good_key_file_gives_the_key(tmp_path: Path) -> None:
    assert provenance.read_key_file(key_file(tmp_path)) == KEY


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda d: d / "missing.key", "does not exist"),
        (lambda d: d, "is not a regular file"),
        (lambda d: key_file(d, mode=0o644), "can be read or written by other users (mode 0644); run `chmod 600"),
        (lambda d: key_file(d, mode=0o620), "(mode 0620)"),
        (lambda d: key_file(d, b"\n  \n"), "is empty; write a key into it"),
        (lambda d: key_file(d, b"short"), "has 5 bytes; use at least 16"),
        (lambda d: key_file(d, b"k" * 5000), "holds 5,000 bytes"),
    ],
    ids=["missing", "directory", "world-readable", "group-writable", "empty", "short", "huge"],
)
def test_a_bad_key_file_is_refused_with_one_line_naming_it(tmp_path: Path, make: Any, says: str) -> None:
    path = make(tmp_path)
    with pytest.raises(provenance.KeyFileError) as err:
        provenance.read_key_file(path)
    message = str(err.value)
    assert says in message and str(path) in message and "\n" not in message
    # As a setting: reported as a problem of that key, and no key is used.
    problem = configure_team_key(parse_settings({"verification.teamKeyFile": str(path)})[0])
    assert problem is not None and problem.key == "verification.teamKeyFile" and says in problem.message
    assert "not verified here" in problem.message
    assert provenance.team_key() is None
    # From the environment too: the same check, and the same refusal.
    os.environ[provenance.KEY_FILE_ENV] = str(path)
    try:
        assert provenance.team_key() is None
        env_problem = configure_team_key(parse_settings({})[0])
        assert (
            env_problem is not None and says in env_problem.message and provenance.KEY_FILE_ENV in env_problem.message
        )
    finally:
        del os.environ[provenance.KEY_FILE_ENV]


def test_the_setting_takes_precedence_over_the_environment_and_empty_falls_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = key_file(tmp_path, b"the-environment-key-0123456789\n", name="env.key")
    monkeypatch.setenv(provenance.KEY_FILE_ENV, str(other))
    assert configure_team_key(parse_settings({"verification.teamKeyFile": str(key_file(tmp_path))})[0]) is None
    assert provenance.team_key() == KEY
    assert configure_team_key(parse_settings({})[0]) is None
    assert provenance.team_key() == b"the-environment-key-0123456789"


def test_results_signed_with_the_configured_key_keep_their_status(tmp_path: Path) -> None:
    signed = provenance.stamp(measured(speedup=1.7), key=KEY)
    assert configure_team_key(parse_settings({"verification.teamKeyFile": str(key_file(tmp_path))})[0]) is None
    cache = ResultCache(tmp_path / "r.sqlite3")
    assert cache.import_(lines(record(signed, key_on())))[0] == 1
    got = cache.get(key_on())
    assert got is not None and got.status is Status.VERIFIED
    # Without it, the same line is reported.
    provenance.configure_key_file(None)
    got = cache.get(key_on())
    assert got is not None and got.status is Status.REPORTED


def test_the_key_is_in_no_log_line_export_or_result(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    provenance.configure_key_file(key_file(tmp_path))
    cache = ResultCache(tmp_path / "r.sqlite3")
    mine = provenance.stamp(measured(speedup=1.5))
    cache.put(key_on(), mine)
    out = tmp_path / "export.jsonl"
    with out.open("w") as f:
        cache.export(f)
    text = out.read_text() + json.dumps(mine.to_dict()) + caplog.text
    assert mine.signature and KEY.decode() not in text
    assert mine.provenance is not None and mine.provenance.key_id == provenance.key_id(KEY)


def _cli(*args: str, env_key: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WARPWISE_TEAM_KEY")}
    if env_key is not None:
        env[provenance.KEY_FILE_ENV] = str(env_key)
    return subprocess.run(
        [sys.executable, "-m", "warpwise", *args], capture_output=True, text=True, timeout=120, env=env
    )


def test_cli_refuses_a_bad_key_file_before_doing_anything(tmp_path: Path) -> None:
    bad = key_file(tmp_path, mode=0o644)
    proc = _cli("--team-key-file", str(bad), "cache", "stats", "--db", str(tmp_path / "r.sqlite3"))
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        f"warpwise: error: --team-key-file: the team key file {bad} can be read or written by other users "
        f"(mode 0644); run `chmod 600 {bad}`"
    )
    assert not (tmp_path / "r.sqlite3").exists()


def test_cli_option_makes_signed_imports_keep_their_status(tmp_path: Path) -> None:
    signed = provenance.stamp(measured(speedup=1.7), key=KEY)
    export = tmp_path / "results.jsonl"
    export.write_text(lines(record(signed, key_on())).getvalue())
    db = tmp_path / "r.sqlite3"
    assert _cli("cache", "import", str(export), "--db", str(db)).returncode == 0
    reported = ResultCache(db).get(key_on())
    assert reported is not None and reported.status is Status.REPORTED
    good = key_file(tmp_path)
    proc = _cli("--team-key-file", str(good), "cache", "export", "--db", str(db))
    assert proc.returncode == 0 and KEY.decode() not in proc.stdout + proc.stderr
    assert json.loads(proc.stdout.splitlines()[0])["result"]["signature"] == signed.signature


async def test_the_editor_setting_is_checked_and_the_key_never_shown(sessions: Any, tmp_path: Path) -> None:
    from lsprotocol import types

    bad = key_file(tmp_path, KEY, mode=0o644, name="bad.key")
    s: Session = await sessions("neovim", {**PINNED, "verification": {"teamKeyFile": str(bad)}})
    uri = s.open(KERNELS)
    await s.static(uri)
    # Problems found at initialize are shown once the client is initialized.
    shown = await s.recorder.wait(lambda: [m.message for m in s.recorder.messages if "teamKeyFile" in m.message])
    assert "can be read or written by other users" in shown[0] and str(bad) in shown[0]
    good = key_file(tmp_path)
    s.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"warpwise": {"verification": {"teamKeyFile": str(good)}}})
    )
    status = await s.command("warpwise.status")
    everything = json.dumps(status) + "".join(m.message for m in s.recorder.messages) + json.dumps(s.recorder.status)
    assert KEY.decode() not in everything
    assert len([m for m in s.recorder.messages if "teamKeyFile" in m.message]) == 1
