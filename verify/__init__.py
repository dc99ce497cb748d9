"""warpwise.verify."""
