"""Analyzers: tree-sitter parsing, the CUDA kernel model, and facts and findings about code."""
