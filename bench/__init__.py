"""The sweep's tools: its plan, the presets, the records, the variants, and what the other tools share."""
