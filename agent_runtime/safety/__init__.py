"""Untrusted text made safe: credentials redacted before anything is stored, hostile or broken
YAML refused with the line that is wrong."""
