"""`flotilla doctor`: what is wrong with a fleet on this machine, and the command that fixes it."""
