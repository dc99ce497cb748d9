"""warpwise.skills."""
