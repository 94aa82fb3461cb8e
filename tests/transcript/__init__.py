"""The transcript fold: loopdeck's and Copilot CLI's logs and streams folded into blocks."""
