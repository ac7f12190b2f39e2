"""Test-suite configuration shared by tests/ and the doctests in genotok/."""

collect_ignore = ["genotok/__main__.py", "tests/_fuzz_driver.py", "benchmarks"]
