"""The command line and the terminal app driven end to end (Pilot, pty, subprocess)."""
