"""Open documents as the editor sees them, and the immutable snapshots analysis runs over.

The event loop owns `OpenDocument`s: it applies each `didChange` to the text (bytes, split into lines at `\\n`,
`\\r\\n` or `\\r` as LSP defines them, the way the analyzers count lines) and records the edits since the last
snapshot. Before any work leaves the loop it captures a `Snapshot` (uri, version, text, settings, and the edits that
lead from the previous snapshot to this one), a frozen object the analysis thread can read without locks. The edits
let the analysis thread keep one incrementally re-parsed `CudaDocument` per file; the text lets it check that its
copy agrees with the editor's and re-synchronise when it does not, so no edit the server mis-applies can lose the
user's text.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from warpwise.analyzers.model import LineIndex, Position
from warpwise.analyzers.parse import TextEdit
from warpwise.server.settings import Settings

CUDA_LANGUAGE_IDS = frozenset({"cuda-cpp", "cuda"})
CUDA_SUFFIXES = (".cu", ".cuh")


def is_cuda(uri: str, language_id: str | None, text: str = "") -> bool:
    """Return whether a document is CUDA by its language id or file name, or Python that passes CUDA to
    `load_inline` (analysed as its CUDA strings, see `warpwise.analyzers.embedded`)."""
    if language_id in CUDA_LANGUAGE_IDS:
        return True
    path = uri.split("?", 1)[0].split("#", 1)[0].lower()
    if path.endswith(".py") or language_id == "python":
        return "load_inline" in text and "__global__" in text
    return path.endswith(CUDA_SUFFIXES)


def content_hash(data: bytes) -> str:
    """Return the hash that identifies one text (results are keyed by it)."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


@dataclass(frozen=True, slots=True)
class Snapshot:
    """An immutable view of one document version, captured on the event loop.

    `edits` lead from the document at `base_version` to this version; None means "take `text` whole" (the first
    snapshot, a full-text change, or too many edits to be worth replaying).
    """

    uri: str
    path: str
    version: int
    text: bytes
    settings: Settings
    base_version: int | None = None
    edits: tuple[TextEdit, ...] | None = None
    generation: int = 0

    @property
    def content_hash(self) -> str:
        """Return the hash of the text."""
        return content_hash(self.text)

    def merged_after(self, older: Snapshot) -> Snapshot:
        """Return this snapshot with the edits of an older, not yet analysed one in front of its own."""
        if older.edits is None or self.edits is None or self.base_version != older.version:
            return Snapshot(self.uri, self.path, self.version, self.text, self.settings, None, None, self.generation)
        return Snapshot(
            self.uri,
            self.path,
            self.version,
            self.text,
            self.settings,
            older.base_version,
            older.edits + self.edits,
            self.generation,
        )


@dataclass(slots=True)
class OpenDocument:
    """A document the editor has open: its current text and version (event loop only)."""

    uri: str
    path: str
    language_id: str
    version: int
    text: bytes
    lines: LineIndex = field(init=False)
    pending: list[TextEdit] | None = field(default=None)
    snapshot_version: int | None = None
    _hash: str | None = None

    def __post_init__(self) -> None:
        self.lines = LineIndex(self.text)

    @property
    def content_hash(self) -> str:
        """Return the hash of the current text (cached until the next change)."""
        if self._hash is None:
            self._hash = content_hash(self.text)
        return self._hash

    def apply_range(self, start: Position, end: Position, text: str) -> None:
        """Replace the text between two LSP positions (UTF-16 columns; clamped to the document)."""
        a = self.lines.offset(start)
        b = max(a, self.lines.offset(end))
        new = text.encode("utf-8", "surrogatepass")
        self.text = self.text[:a] + new + self.text[b:]
        self.lines = LineIndex(self.text)
        self._hash = None
        if self.pending is not None:
            self.pending.append(TextEdit(start, end, text))

    def replace(self, text: str) -> None:
        """Replace the whole text (a full-document change)."""
        self.text = text.encode("utf-8", "surrogatepass")
        self.lines = LineIndex(self.text)
        self._hash = None
        self.pending = None

    def capture(self, settings: Settings, generation: int) -> Snapshot:
        """Capture the current version for a job (the analysis thread's edit chain is left alone)."""
        return Snapshot(self.uri, self.path, self.version, self.text, settings, None, None, generation)

    def snapshot(self, settings: Settings, generation: int, max_edits: int = 64) -> Snapshot:
        """Capture the current version, with the edits since the previous snapshot when they are few."""
        edits = None
        if self.pending is not None and self.snapshot_version is not None and len(self.pending) <= max_edits:
            edits = tuple(self.pending)
        snap = Snapshot(
            self.uri,
            self.path,
            self.version,
            self.text,
            settings,
            self.snapshot_version if edits is not None else None,
            edits,
            generation,
        )
        self.pending = []
        self.snapshot_version = self.version
        return snap


class DocumentStore:
    """The open documents, by URI (event loop only)."""

    def __init__(self) -> None:
        self._docs: dict[str, OpenDocument] = {}

    def open(self, uri: str, path: str, language_id: str, version: int, text: str) -> OpenDocument:
        """Start tracking a document."""
        doc = OpenDocument(uri, path, language_id, version, text.encode("utf-8", "surrogatepass"))
        self._docs[uri] = doc
        return doc

    def get(self, uri: str) -> OpenDocument | None:
        """Return an open document."""
        return self._docs.get(uri)

    def close(self, uri: str) -> OpenDocument | None:
        """Stop tracking a document."""
        return self._docs.pop(uri, None)

    def __iter__(self):
        return iter(list(self._docs.values()))

    def __len__(self) -> int:
        return len(self._docs)
