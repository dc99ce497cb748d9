"""warpwise.server."""
