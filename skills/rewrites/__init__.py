"""Rewrites: small pure functions `(RewriteContext) -> edits`, one module per family of cards."""
