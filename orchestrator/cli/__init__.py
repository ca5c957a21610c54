"""The `flotilla` command line."""
