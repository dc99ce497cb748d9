"""Provenance and signatures: where a result was measured, who vouches for it, and whether we believe it.

Every result a worker produces carries a `Provenance` (machine, GPU UUID and name, driver, toolkit, warpwise
version, time). The machine that measured it signs it with the team key: an HMAC-SHA256 over the result's
canonical JSON (everything but the signature itself and the fields this machine sets when it reads a result), so
changing any figure, status or provenance field breaks the signature. The key is configured on workers and
editors as a key file only its owner may read: the editor's `warpwise.verification.teamKeyFile` setting, the
command line's `warpwise --team-key-file PATH` (for `verify`, `optimize`, `cache`, `worker`, `serve`, ...), or the
environment (`$WARPWISE_TEAM_KEY_FILE`, or the key itself in `$WARPWISE_TEAM_KEY`), in that order. A key file is
checked before it is used (`read_key_file`: it exists, is a regular file, is not readable or writable by other
users, holds at least 16 bytes) and a bad one is refused with a one-line message naming the file and what to do.
The key is never written into a result, a log line, a settings echo or an export, only its `key_id` (a hash that
names it).

`assess` is the one place that decides whether a stored result may speak for itself: a result measured on this
machine (written by this machine's gate, with this machine's id or no provenance at all) or one signed by the
team key keeps its status; anything else (an imported line, a remote worker without the key, a forged signature)
becomes `reported`: "reported by HOST, not verified here", which no consumer treats as verified, prefers, or
applies in bulk. See docs/verification.md for the threat model.

This module imports only the standard library and `warpwise.verify.types`, so the worker process may use it.
"""

from __future__ import annotations

import hashlib
import hmac
import importlib.metadata
import json
import os
import socket
import stat
import time
import uuid
from pathlib import Path

from warpwise.verify.types import DeviceIdentity, Provenance, Status, VerificationResult

KEY_ENV = "WARPWISE_TEAM_KEY"
KEY_FILE_ENV = "WARPWISE_TEAM_KEY_FILE"
_DOMAIN = b"warpwise-result-v1\0"
_UNSIGNED_FIELDS = frozenset({"signature", "cached", "reported_status", "reported_by"})
MIN_KEY_BYTES = 16
"""A shorter key is refused: an HMAC key should be at least as long as a guess is hard."""
MAX_KEY_FILE_BYTES = 4096
_machine: str | None = None
_configured: bytes | None = None
"""The key from a key file configured by a setting or an option (`configure_key_file`); None: the environment's."""


class KeyFileError(ValueError):
    """A team key file that cannot be used; the message says which file, why, and what to do."""


def read_key_file(path: str | Path) -> bytes:
    """Return the key in a key file, or raise `KeyFileError` saying why it cannot be used."""
    p = Path(path).expanduser()
    try:
        st = p.stat()
    except FileNotFoundError:
        raise KeyFileError(f"the team key file {p} does not exist") from None
    except OSError as exc:
        raise KeyFileError(f"cannot read the team key file {p}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise KeyFileError(f"the team key file {p} is not a regular file")
    if st.st_mode & 0o077:
        raise KeyFileError(
            f"the team key file {p} can be read or written by other users (mode {stat.S_IMODE(st.st_mode):04o}); "
            f"run `chmod 600 {p}`"
        )
    if st.st_size > MAX_KEY_FILE_BYTES:
        raise KeyFileError(f"the team key file {p} holds {st.st_size:,} bytes; a team key is one short line")
    try:
        data = p.read_bytes().strip()
    except OSError as exc:
        raise KeyFileError(f"cannot read the team key file {p}: {exc.strerror or exc}") from None
    if not data:
        raise KeyFileError(f"the team key file {p} is empty; write a key into it (`openssl rand -hex 32 > {p}`)")
    if len(data) < MIN_KEY_BYTES:
        raise KeyFileError(
            f"the team key in {p} has {len(data)} bytes; use at least {MIN_KEY_BYTES} (`openssl rand -hex 32 > {p}`)"
        )
    return data


def configure_key_file(path: str | Path | None) -> None:
    """Use the key in `path` from now on (None or "": go back to the environment's); raise `KeyFileError`.

    A refused file leaves no key configured from it: results are then checked with the environment's key, if any.
    """
    global _configured
    _configured = None
    if path:
        _configured = read_key_file(path)


def key_problem() -> str | None:
    """Return why the environment's key file cannot be used, or None (no file named, or a good one)."""
    path = os.environ.get(KEY_FILE_ENV)
    if _configured is not None or not path:
        return None
    try:
        read_key_file(path)
    except KeyFileError as exc:
        return f"{exc} (named by ${KEY_FILE_ENV})"
    return None


def team_key() -> bytes | None:
    """Return the team key configured here, or None (a key file that cannot be used counts as none)."""
    if _configured is not None:
        return _configured
    path = os.environ.get(KEY_FILE_ENV)
    if path:
        try:
            return read_key_file(path)
        except KeyFileError:
            return None
    raw = os.environ.get(KEY_ENV, "").strip()
    return raw.encode() if raw else None


def key_id(key: bytes) -> str:
    """Return the public name of a key: 16 hex digits of a hash that does not reveal it."""
    return hashlib.sha256(b"warpwise-key-id\0" + key).hexdigest()[:16]


def machine_id() -> str:
    """Return a stable hash of this machine's id (`/etc/machine-id`, else the host name and MAC address)."""
    global _machine
    if _machine is None:
        raw = ""
        for p in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
            try:
                raw = Path(p).read_text().strip()
            except OSError:
                continue
            if raw:
                break
        if not raw:
            raw = f"{socket.gethostname()}:{uuid.getnode():012x}"
        _machine = hashlib.sha256(b"warpwise-machine\0" + raw.encode()).hexdigest()[:32]
    return _machine


def warpwise_version() -> str:
    """Return the installed warpwise version."""
    try:
        return importlib.metadata.version("warpwise")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def provenance_for(identity: DeviceIdentity | None, toolkit: str = "") -> Provenance:
    """Return the provenance of a result measured now, on this machine, on `identity`."""
    return Provenance(
        machine_id=machine_id(),
        host=socket.gethostname(),
        gpu_uuid=identity.uuid if identity is not None else "",
        gpu_name=identity.gpu if identity is not None else "none",
        driver=identity.driver if identity is not None else "none",
        toolkit=identity.toolkit if identity is not None else toolkit,
        warpwise_version=warpwise_version(),
        measured_at=time.time(),
    )


def _payload(result: VerificationResult) -> bytes:
    """Return the bytes a signature covers: the canonical JSON of the result without its local fields."""
    normal = VerificationResult.from_dict(result.to_dict()).to_dict()
    doc = {k: v for k, v in normal.items() if k not in _UNSIGNED_FIELDS}
    return _DOMAIN + json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


def stamp(result: VerificationResult, key: bytes | None = None) -> VerificationResult:
    """Give a freshly measured result its provenance (if missing) and sign it with `key` (default: the team key)."""
    key = key if key is not None else team_key()
    prov = result.provenance or provenance_for(result.device)
    prov = Provenance(**{**prov.to_dict(), "key_id": key_id(key) if key else ""})
    out = result.with_(provenance=prov, signature="", reported_status="", reported_by="")
    if key:
        out = out.with_(signature=hmac.new(key, _payload(out), hashlib.sha256).hexdigest())
    return out


def signature_ok(result: VerificationResult, key: bytes | None) -> bool:
    """Return whether `result` carries a valid signature by `key`."""
    if not key or not result.signature or result.provenance is None:
        return False
    want = hmac.new(key, _payload(result), hashlib.sha256).hexdigest()
    return hmac.compare_digest(want, result.signature)


def why_untrusted(result: VerificationResult, origin: str, key: bytes | None) -> str | None:
    """Return why a stored result may not speak for itself, or None when it may."""
    if signature_ok(result, key):
        return None
    prov = result.provenance
    if origin == "local" and (prov is None or prov.machine_id == machine_id()):
        return None
    if not result.signature:
        return "it is not signed"
    if key is None:
        return "no team key is configured here to check its signature"
    if prov is not None and prov.key_id and prov.key_id != key_id(key):
        return f"it is signed by another key ({prov.key_id})"
    return "its signature does not match its contents"


def reported_host(result: VerificationResult, origin: str) -> str:
    """Return the host a result claims to come from."""
    prov = result.provenance
    if prov is not None and prov.host:
        return prov.host[:80]
    return "an imported file" if origin == "imported" else "another machine"


def assess(result: VerificationResult, origin: str, key: bytes | None = None) -> VerificationResult:
    """Return `result` unchanged when it is local or signed by the team key, else as a `reported` result."""
    if result.status is Status.REPORTED:
        return result
    key = key if key is not None else team_key()
    why = why_untrusted(result, origin, key)
    if why is None:
        return result
    claim = result.status.value.replace("_", " ")
    if result.speedup is not None:
        claim += f" {result.speedup.median:.2f}x"
    if result.device is not None and not result.device.compile_only:
        claim += f" on {result.device.gpu[:80]}"
    host = reported_host(result, origin)
    return result.with_(
        status=Status.REPORTED,
        reported_status=result.status.value,
        reported_by=host,
        message=f"reported by {host} ({claim}), not verified here: {why}",
    )
