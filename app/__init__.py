"""The application layer: the ``ldpfleet`` command line, benches, report, watch, trace
inspection and the audit command. It sits above every other layer and nothing below
imports it (DESIGN.md, "Layers"; tests/unit/test_layers.py checks the import graph)."""
