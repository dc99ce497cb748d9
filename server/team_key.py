"""The team key on the editor's side: `warpwise.verification.teamKeyFile`, checked whenever settings change.

The setting names a file, never the key: the settings echo, the log and the status show the path at most. A file
that cannot be used (missing, not a regular file, readable by other users, empty, too short) is reported as a
setting problem in the one settings message, in the words of `warpwise.verify.provenance.read_key_file`, and no key
is taken from it: results from other machines then read as reported, never as verified. An empty setting falls
back to `$WARPWISE_TEAM_KEY_FILE` (or `$WARPWISE_TEAM_KEY`), whose file is checked the same way.
"""

from __future__ import annotations

from warpwise.server.settings import SettingProblem, Settings
from warpwise.verify import provenance

KEY = "verification.teamKeyFile"
_NO_KEY = "no team key is used, so results from other machines are not verified here"


def configure_team_key(settings: Settings) -> SettingProblem | None:
    """Use the settings' key file (or the environment's); return the problem when it cannot be used."""
    path = settings.verification_team_key_file
    try:
        provenance.configure_key_file(path or None)
    except provenance.KeyFileError as exc:
        return SettingProblem(KEY, f"{exc}; {_NO_KEY}")
    problem = provenance.key_problem()
    if problem is not None:
        return SettingProblem(KEY, f"{problem}; {_NO_KEY}")
    return None
