"""The widgets: snapshots at fixed sizes and Pilot tests of the timeline, prompt and questions."""
