"""Settings: typed schema with defaults, invalid values reported and replaced, changes applied, schema committed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from lsprotocol import types

from tests.server.conftest import CLIENTS, KERNELS, Session
from warpwise.server.settings import DEFAULTS, parse_settings, schema_json, settings_schema

SCHEMA = Path(__file__).resolve().parents[2] / "server" / "settings.schema.json"


def test_committed_schema_matches_the_settings() -> None:
    # Regenerate with: warpwise serve --settings-schema > server/settings.schema.json
    assert SCHEMA.read_text() == schema_json()


def test_schema_command_prints_the_schema() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "warpwise", "serve", "--settings-schema"], capture_output=True, text=True, check=True
    ).stdout
    assert json.loads(out) == settings_schema()


def test_every_setting_has_a_default_and_description() -> None:
    props = settings_schema()["properties"]
    assert props["warpwise.gpu.backend"]["enum"] == ["auto", "local", "cluster", "off"]
    for key, prop in props.items():
        assert key.startswith("warpwise.")
        assert "default" in prop and prop["description"]


def test_nested_and_dotted_keys_are_accepted() -> None:
    nested, problems = parse_settings({"gpu": {"backend": "off"}, "cards": {"disabled": ["missing-restrict"]}})
    dotted, problems2 = parse_settings({"warpwise.gpu.backend": "off", "warpwise.cards.disabled": ["missing-restrict"]})
    assert nested == dotted and not problems and not problems2
    assert nested.gpu_backend == "off" and nested.cards_disabled == ("missing-restrict",)


def test_invalid_values_are_replaced_by_defaults_and_reported() -> None:
    settings, problems = parse_settings(
        {
            "warpwise": {
                "gpu": {"backend": "gpu"},
                "verification": {"rtol": -1, "trigger": 3},
                "compiler": {"flags": "-O3"},
                "nonsense": True,
            }
        }
    )
    assert settings == DEFAULTS
    text = "; ".join(str(p) for p in problems)
    assert '`warpwise.gpu.backend`: "gpu" is not one of auto, local, cluster, off; using the default "auto"' in text
    assert "`warpwise.verification.rtol`: -1 must be greater than 0" in text
    assert "`warpwise.verification.trigger`: 3 is not a string" in text
    assert '`warpwise.compiler.flags`: "-O3" is not a list of strings' in text
    assert "`warpwise.nonsense`: unknown setting (ignored)" in text


def test_cluster_backend_needs_an_address() -> None:
    _, problems = parse_settings({"gpu": {"backend": "cluster"}})
    assert any(p.key == "gpu.clusterAddress" for p in problems)


@pytest.mark.parametrize("editor", CLIENTS)
async def test_initialization_options_disable_a_card(sessions, editor: str) -> None:
    s: Session = await sessions(editor, {"cards": {"disabled": ["missing-restrict"]}})
    uri = s.open(KERNELS)
    codes = {str(d.code) for d in await s.static(uri)}
    assert "missing-restrict" not in codes and "constant-trip-loop-without-unroll" in codes


@pytest.mark.parametrize("editor", CLIENTS)
async def test_invalid_initialization_options_are_shown_to_the_user(sessions, editor: str) -> None:
    s: Session = await sessions(editor, {"gpu": {"backend": "gpu"}, "profile": {"onSave": "yes"}})
    msg = await s.recorder.wait(lambda: next((m for m in s.recorder.messages if "settings" in m.message), None))
    assert msg.type == types.MessageType.Warning
    assert "`warpwise.gpu.backend`" in msg.message and "`warpwise.profile.onSave`" in msg.message
    # The server works on with the defaults.
    uri = s.open(KERNELS)
    assert await s.static(uri)


async def test_did_change_configuration_reanalyses_with_the_new_settings(session: Session) -> None:
    uri = session.open(KERNELS)
    assert "constant-trip-loop-without-unroll" in {str(d.code) for d in await session.static(uri)}
    session.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"warpwise": {"cards": {"disabled": ["constant-trip-loop-without-unroll"]}}}
        )
    )
    if session.pulls:
        # The notification is handled before the next request: the pull answers from the new settings.
        codes = {str(d.code) for d in await session.static(uri)}
    else:
        params = await session.pushed(
            uri, lambda p: not any(str(d.code) == "constant-trip-loop-without-unroll" for d in p.diagnostics)
        )
        assert params.version == 1
        codes = {str(d.code) for d in params.diagnostics}
    assert "constant-trip-loop-without-unroll" not in codes and "missing-restrict" in codes


async def test_configuration_is_pulled_when_the_notification_carries_none(session: Session) -> None:
    session.client.set_configuration({"cards": {"disabled": ["missing-restrict"]}}, section="warpwise")
    uri = session.open(KERNELS)
    await session.static(uri)
    session.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    if session.pulls:
        return
    params = await session.pushed(uri, lambda p: not any(str(d.code) == "missing-restrict" for d in p.diagnostics))
    assert any(str(d.code) == "constant-trip-loop-without-unroll" for d in params.diagnostics)
