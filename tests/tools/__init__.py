"""The built-in tools, the OS sandbox and secrets masking."""
