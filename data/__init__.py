"""The real data sets the built-in scenarios read, shipped as package data (``ldpfleet.data``).

Each folder keeps its SOURCE.txt (where it came from, its licence, what was changed).
Nothing here is code; ``ldpfleet.scenarios.schema.resolve_data_path`` finds a scenario's
``data/...`` path in this package when it is not beside the scenario or the working folder.
"""
