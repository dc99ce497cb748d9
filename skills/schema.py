"""The JSON Schema of a card header, generated from `CardHeader` and committed as `skills/card.schema.json`.

Run `python -m warpwise.skills.schema` to regenerate it; a test fails when the committed file drifts.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from warpwise.skills.model import CardHeader

SCHEMA_PATH = Path(__file__).resolve().parent / "card.schema.json"


def card_schema() -> dict[str, Any]:
    """Return the JSON Schema of a card header."""
    schema = CardHeader.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "warpwise skill card header"
    return schema


def render() -> str:
    """Return the schema as the committed text."""
    return json.dumps(card_schema(), indent=2, sort_keys=True) + "\n"


def main() -> int:
    """Write the schema file (or check it with --check)."""
    text = render()
    if "--check" in sys.argv[1:]:
        if not SCHEMA_PATH.exists() or SCHEMA_PATH.read_text() != text:
            print(f"{SCHEMA_PATH} is out of date: run `python -m warpwise.skills.schema`", file=sys.stderr)
            return 1
        return 0
    SCHEMA_PATH.write_text(text)
    print(f"wrote {SCHEMA_PATH}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
