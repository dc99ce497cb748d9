"""The tree-sitter speed prelude of the model builder: field ids, node helpers and enum member aliases.

The builder runs over every function of a file on the first analysis, so it reads the tree the fast way: children
by field id rather than by name, node texts sliced from the text decoded once per file, and enum members bound to
module names. This module holds those shared pieces; it holds no analysis.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from operator import attrgetter, itemgetter
from typing import Any

from warpwise.analyzers.expr.values import Kind, Value
from warpwise.analyzers.model import AccessKind, AccessPattern, FunctionKind, MemorySpace
from warpwise.analyzers.parse import language

Node = Any


def _text(src: bytes, node: Node) -> str:
    return src[node.start_byte : node.end_byte].decode("utf-8", "replace")


def _named(node: Node) -> list[Node]:
    return [c for c in node.named_children if c.type != "comment"]


def _declarator_name(node: Node | None, src: bytes) -> str | None:
    """Return the identifier declared by a (possibly nested) declarator."""
    while node is not None:
        t = node.type
        if t in ("identifier", "field_identifier", "type_identifier", "operator_name", "destructor_name"):
            return _text(src, node)
        if t == "qualified_identifier":
            name = node.child_by_field_name("name")
            node = name
            continue
        if t == "template_function":
            node = node.child_by_field_name("name")
            continue
        nxt = node.child_by_field_name("declarator")
        if nxt is None:
            named = _named(node)
            nxt = named[0] if named else None
        node = nxt
    return None


def _field_id(name: str) -> int:
    """Return the grammar's id of a field name (reading a child by id skips a name look-up per call)."""
    fid = language().field_id_for_name(name)
    if fid is None:
        raise LookupError(f"tree-sitter-cuda has no field `{name}`")
    return fid


_F_ALTERNATIVE = _field_id("alternative")
_F_ARGUMENT = _field_id("argument")
_F_ARGUMENTS = _field_id("arguments")
_F_BODY = _field_id("body")
_F_CONDITION = _field_id("condition")
_F_DECLARATOR = _field_id("declarator")
_F_DEFAULT_TYPE = _field_id("default_type")
_F_DEFAULT_VALUE = _field_id("default_value")
_F_DIRECTIVE = _field_id("directive")
_F_FIELD = _field_id("field")
_F_FUNCTION = _field_id("function")
_F_INDICES = _field_id("indices")
_F_INITIALIZER = _field_id("initializer")
_F_LEFT = _field_id("left")
_F_NAME = _field_id("name")
_F_OPERATOR = _field_id("operator")
_F_PARAMETERS = _field_id("parameters")
_F_RIGHT = _field_id("right")
_F_SIZE = _field_id("size")
_F_TYPE = _field_id("type")
_F_UPDATE = _field_id("update")
_F_VALUE = _field_id("value")

# Enum members looked up on their class cost a descriptor call each time in CPython 3.11; the hot paths below
# use these aliases, which are the very same members.
_CONST = Kind.CONST
_UNIFORM = Kind.UNIFORM
_AFFINE = Kind.AFFINE
_INDIRECT = Kind.INDIRECT
_UNKNOWN = Kind.UNKNOWN
_KERNEL = FunctionKind.KERNEL
_HOST = FunctionKind.HOST
_GLOBAL = MemorySpace.GLOBAL
_SHARED = MemorySpace.SHARED
_LOCAL = MemorySpace.LOCAL
_CONSTANT = MemorySpace.CONSTANT
_SPACE_UNKNOWN = MemorySpace.UNKNOWN
_READ = AccessKind.READ
_WRITE = AccessKind.WRITE
_READ_WRITE = AccessKind.READ_WRITE
_ATOMIC = AccessKind.ATOMIC
_ADDRESS = AccessKind.ADDRESS
_PATTERN_CONTIGUOUS = AccessPattern.CONTIGUOUS
_PATTERN_STRIDED = AccessPattern.STRIDED
_PATTERN_UNIFORM = AccessPattern.UNIFORM
_PATTERN_INDIRECT = AccessPattern.INDIRECT
_PATTERN_UNKNOWN = AccessPattern.UNKNOWN
_new = tuple.__new__
_ZERO_VALUE = Value(Kind.CONST, const=0)
_ONE_VALUE = Value(Kind.CONST, const=1)
_FRACTION_ZERO = Fraction(0)
_START = attrgetter("start_byte")
_SPAN = attrgetter("span")
_FIRST = itemgetter(0)
_LDG_NAMES = frozenset({"__ldg", "__ldcg", "__ldca", "__ldcs", "__ldlu"})
_CAST_NAMES = frozenset({"reinterpret_cast", "static_cast", "const_cast"})
_RESTRICT_WORDS = frozenset({"__restrict__", "__restrict", "restrict"})
_QUALIFIER_TYPES = frozenset({"type_qualifier", "storage_class_specifier", "attribute_specifier"})
_DECLARATOR_WRAPPERS = frozenset(
    {"array_declarator", "pointer_declarator", "reference_declarator", "parenthesized_declarator"}
)
_EXEC_SPACE_TOKENS = frozenset({"__global__", "__device__", "__host__"})
_LOOP_KINDS = {"for_statement": "for", "while_statement": "while", "do_statement": "do"}
_FLIP = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}


def _texter(src: bytes, ascii_text: str | None) -> Callable[[Node], str]:
    """Return a function giving the source text of a node.

    When the whole file is ASCII, byte offsets are character offsets, so slicing the text decoded once gives
    exactly what decoding each node's bytes would.
    """
    if ascii_text is not None:

        def text(node: Node) -> str:
            return ascii_text[node.start_byte : node.end_byte]

    else:

        def text(node: Node) -> str:
            return src[node.start_byte : node.end_byte].decode("utf-8", "replace")

    return text
