"""Evaluating C expressions: the one place where warpwise does C arithmetic.

`cexpr` evaluates the text of small integer and floating expressions (annotations, `#define` bodies, host-code
sizes) with C's rules: truncating division, C remainder, shifts, casts and `sizeof` of built-in types; its
`c_div` and `c_mod` are what every other part of warpwise that folds integers uses. `values` evaluates syntax
trees into symbolic values (constants, thread-index affine forms, unknowns) for the kernel model's facts, and
folds constants through `cexpr`'s arithmetic. `ranges` is its interval arithmetic (bounds an integer expression
keeps in every thread, the built-in index variables' hardware ranges), and `poly` its exact algebra (integer
polynomials over named atoms, to prove index expressions equal or solve them).
"""
