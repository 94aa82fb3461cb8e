"""Permission rules, the shell parser they read commands with, autopilot's level."""
