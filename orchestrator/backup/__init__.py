"""Backups of a fleet: one tar archive with a manifest (`flotilla backup`, `verify`, `restore`)."""
