"""Integer polynomials over named atoms: exact algebra on index expressions.

A `Poly` is a sum of integer multiples of monomials (sorted tuples of atom names). Passes that must prove two
index expressions equal, or solve one for another, expand C expressions into polynomials (the atoms are what
they cannot expand: `threadIdx.x`, a parameter, `k / TILE`) and compare them term by term; the lineages' unstage
pass is one (`warpwise.lineages.deopt.unstage`), and so are the recognisers of the row-cooperative-reduction and
untiled-contraction cards, which read an index as a polynomial to tell the row and the loop's element apart whatever
the spelling. Arithmetic is exact (Python integers): whether the C expression
may overflow is the caller's question.
"""

from __future__ import annotations

from dataclasses import dataclass, field

Monomial = tuple[str, ...]
"""A product of atoms, sorted; `()` is the constant term."""


@dataclass
class Poly:
    """An integer polynomial over named atoms."""

    terms: dict[Monomial, int] = field(default_factory=dict)

    @classmethod
    def const(cls, c: int) -> Poly:
        return cls({(): c} if c else {})

    @classmethod
    def atom(cls, name: str) -> Poly:
        return cls({(name,): 1})

    def __add__(self, other: Poly) -> Poly:
        out = dict(self.terms)
        for m, c in other.terms.items():
            out[m] = out.get(m, 0) + c
        return Poly({m: c for m, c in out.items() if c})

    def scale(self, k: int) -> Poly:
        return Poly({m: c * k for m, c in self.terms.items() if c * k})

    def __sub__(self, other: Poly) -> Poly:
        return self + other.scale(-1)

    def __mul__(self, other: Poly) -> Poly:
        out: dict[Monomial, int] = {}
        for m1, c1 in self.terms.items():
            for m2, c2 in other.terms.items():
                m = tuple(sorted(m1 + m2))
                out[m] = out.get(m, 0) + c1 * c2
        return Poly({m: c for m, c in out.items() if c})

    def __bool__(self) -> bool:
        """A polynomial is true when it is not zero."""
        return bool(self.terms)

    def atoms(self) -> set[str]:
        """Return the atoms the polynomial's terms name."""
        return {a for m in self.terms for a in m}

    def linear_in(self, atom: str) -> tuple[Poly, Poly] | None:
        """Split the polynomial into `atom * q + r` with q and r free of atom; None when atom appears non-linearly."""
        q: dict[Monomial, int] = {}
        r: dict[Monomial, int] = {}
        for m, c in self.terms.items():
            n = m.count(atom)
            if n > 1:
                return None
            if n == 1:
                rest = list(m)
                rest.remove(atom)
                q[tuple(rest)] = c
            else:
                r[m] = c
        return Poly(q), Poly(r)

    def constant(self) -> int | None:
        """Return the value when the polynomial is a constant."""
        if not self.terms:
            return 0
        return self.terms.get(()) if set(self.terms) == {()} else None

    def key(self) -> tuple[tuple[Monomial, int], ...]:
        return tuple(sorted(self.terms.items()))
