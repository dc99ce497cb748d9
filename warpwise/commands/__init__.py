"""Subcommands of the `warpwise` command line, one module each."""
