"""warpwise.search."""
