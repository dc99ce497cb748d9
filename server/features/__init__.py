"""One module per LSP feature; `warpwise.server.routes` registers them all in one table."""
