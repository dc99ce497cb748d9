"""Rewrite helpers shared by several cards; a card's rewrite, `(RewriteContext) -> edits`, lives in its folder."""
