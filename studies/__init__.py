"""The studies behind the findings, each a module run from the root: python -m studies.NAME."""
