"""coordspec's conformance kit and command line."""
